"""The machine `tune` answers for: a CPU quota and a memory limit, as a container's (`--cpus
1.5 --memory 512M`), enforced on every candidate, its checks and its proof by the kernel
(system/cpu_account.py), on as many pinned cores as the quota needs; the worker counts tried
are the target's, and the answer names it, with the lines that deploy it there (Docker's
flags, a Kubernetes resources block)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from benchlab.core.errors import UserError
from benchlab.recipe.cores import CoreAssignment
from benchlab.system.cpu_account import Limits

MEMORY = re.compile(r"(\d+(?:\.\d+)?)\s*([kmgt]i?b?|b)?", re.IGNORECASE)
UNITS = {"b": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
CPUS = re.compile(r"(\d+(?:\.\d+)?)(m?)")
SMALLEST_MEMORY_MB = 32


@dataclass(frozen=True)
class Target:
    cpus: float | None = None  # None: this machine's server cores, unlimited
    memory_mb: int | None = None  # None: no memory limit

    @property
    def limited(self) -> bool:
        return self.cpus is not None or self.memory_mb is not None

    @property
    def limits(self) -> Limits | None:
        if not self.limited:
            return None
        memory = None if self.memory_mb is None else self.memory_mb * 2**20
        return Limits(cpus=self.cpus, memory_bytes=memory)

    def describe(self) -> str:
        """'for 1.5 CPUs and 512 MB', as the answer names it ('' for this machine)."""
        parts = []
        if self.cpus is not None:
            parts.append(f"{self.cpus:g} CPU{'' if self.cpus == 1 else 's'}")
        if self.memory_mb is not None:
            parts.append(f"{self.memory_mb:,} MB")
        return f"for {' and '.join(parts)}" if parts else ""

    def server_cores(self, allowed: int) -> int:
        """The cores the candidates are pinned to: as many as the quota needs (a 1.5-CPU
        quota spreads over 2), never more than this machine's server cores."""
        return allowed if self.cpus is None else max(1, min(allowed, math.ceil(self.cpus)))

    def cores(self, machine: CoreAssignment) -> CoreAssignment:
        count = self.server_cores(len(machine.server))
        return CoreAssignment(server=machine.server[:count], load=machine.load)

    def worker_cores(self, server_cores: int) -> int:
        """The cores the worker counts are chosen for: the target's (rounded up), not the
        machine's spare ones."""
        return server_cores if self.cpus is None else max(1, math.ceil(self.cpus))

    def docker_flags(self) -> str:
        """`docker run` flags that give a container this target ('' for none)."""
        flags = []
        if self.cpus is not None:
            flags.append(f"--cpus {self.cpus:g}")
        if self.memory_mb is not None:
            flags += [f"--memory {self.memory_mb}m", f"--memory-swap {self.memory_mb}m"]
        return " ".join(flags)

    def kubernetes(self) -> str:
        """A container's `resources:` block for this target (limits equal to requests)."""
        values = []
        if self.cpus is not None:
            values.append(f"cpu: {round(self.cpus * 1000)}m")
        if self.memory_mb is not None:
            values.append(f"memory: {self.memory_mb}Mi")
        if not values:
            return ""
        inner = ", ".join(values)
        return f"resources: {{requests: {{{inner}}}, limits: {{{inner}}}}}"

    def over(self, stored: Target) -> Target:
        """This target, what it leaves unsaid taken from `stored` (a stored answer's)."""
        return Target(
            self.cpus if self.cpus is not None else stored.cpus,
            self.memory_mb if self.memory_mb is not None else stored.memory_mb,
        )

    def as_json(self) -> dict[str, object]:
        return {"cpus": self.cpus, "memory_mb": self.memory_mb}


def parse_cpus(text: str | None) -> float | None:
    """--cpus: a number of CPUs (1.5) or millicores (500m), as Docker and Kubernetes write
    them."""
    if text is None:
        return None
    found = CPUS.fullmatch(text.strip())
    value = None if found is None else float(found[1]) / (1000 if found[2] else 1)
    if value is None or not 0.01 <= value <= 1024:
        raise UserError(
            f"--cpus {text!r}: give the CPUs the app's container has, as Docker or Kubernetes "
            "write them: 1.5, 0.5 or 500m (from 0.01 to 1024)"
        )
    return value


def parse_memory(text: str | None) -> int | None:
    """--memory: a size (512M, 1.5G, 512Mi, 1g), in MB."""
    if text is None:
        return None
    found = MEMORY.fullmatch(text.strip())
    if found is None:
        raise UserError(f"--memory {text!r}: give a size, e.g. 512M, 1.5G or 512Mi")
    unit = (found[2] or "m")[0].lower()
    megabytes = int(float(found[1]) * UNITS[unit] / 2**20)
    if megabytes < SMALLEST_MEMORY_MB:
        raise UserError(
            f"--memory {text!r}: at least {SMALLEST_MEMORY_MB} MB (an interpreter alone takes "
            "about 15)"
        )
    return megabytes
