"""The catalogue of stacks, by name."""

from benchlab.stacks.base import Availability, Launch, LaunchContext, Stack
from benchlab.stacks.go_stacks import GO_STACKS
from benchlab.stacks.nginx_stacks import NGINX_STACKS
from benchlab.stacks.python_stacks import PYTHON_STACKS

CATALOGUE: dict[str, Stack] = {s.name: s for s in (*NGINX_STACKS, *GO_STACKS, *PYTHON_STACKS)}

__all__ = ["CATALOGUE", "Availability", "Launch", "LaunchContext", "Stack"]
