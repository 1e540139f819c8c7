"""What a server does beside serving fast (issue 40): its shutdown under load, its answers
while a few clients are slow. Each check takes a started stack (`CheckTarget`) and returns
a typed result; the catalogue's commands (stack_checks.py) and a run's resilience checks
(runner/resilience.py) start the stack."""
