"""`benchlab doctor`: the checks of this machine (this_machine.py) and of the hosts a recipe
names (hosts.py), each gap with its fix."""

from benchlab.doctor.check import Check, apt_command
from benchlab.doctor.hosts import host_checks
from benchlab.doctor.this_machine import doctor_checks

__all__ = ["Check", "apt_command", "doctor_checks", "host_checks"]
