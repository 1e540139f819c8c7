"""benchlab: benchmark web stacks fairly, with real services and honest statistics."""

__version__ = "0.1.0"
