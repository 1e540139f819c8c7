"""Which cores serve and which load: the recipe's [cores], or halves of the allowed ones."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from benchlab.core.errors import UserError
from benchlab.recipe.schema import Recipe


@dataclass(frozen=True)
class CoreAssignment:
    server: tuple[int, ...]
    load: tuple[int, ...]
    services: tuple[int, ...] = ()
    # Where benchlab itself runs (sampling, bookkeeping): default the load cores.
    controller: tuple[int, ...] = ()

    @property
    def service_cores(self) -> tuple[int, ...]:
        return self.services or self.server

    @property
    def controller_cores(self) -> tuple[int, ...]:
        return self.controller or self.load


def allowed_cores() -> tuple[int, ...]:
    """The cores this process may run on (a cgroup or taskset may allow fewer than exist)."""
    return tuple(sorted(os.sched_getaffinity(0)))


def default_cores(allowed: tuple[int, ...] | None = None) -> CoreAssignment:
    """The first half of the allowed cores serves, the second half loads."""
    cores = allowed if allowed is not None else allowed_cores()
    if len(cores) < 2:
        # One core cannot be split: say so in doctor and reports rather than refuse.
        return CoreAssignment(server=cores[:1], load=cores[:1])
    half = len(cores) // 2
    return CoreAssignment(server=cores[:half], load=cores[half:])


def resolve_cores(path: Path, recipe: Recipe, allowed: tuple[int, ...]) -> CoreAssignment:
    if recipe.cores is None:
        return default_cores(allowed)
    for role in ("server", "load", "services"):
        for i, core in enumerate(getattr(recipe.cores, role) or ()):
            if core not in allowed:
                raise UserError(
                    f"{path}: key 'cores.{role}[{i}]': core {core} is not one this process may "
                    f"use; it may use {', '.join(map(str, allowed))}"
                )
    for role in ("server", "services"):
        shared = sorted(set(getattr(recipe.cores, role) or ()) & set(recipe.cores.load))
        if shared:
            raise UserError(
                f"{path}: key 'cores': core(s) {shared} are in both '{role}' and 'load'; "
                f"the {role} and the load tool must not share a core"
            )
    return CoreAssignment(
        server=tuple(recipe.cores.server),
        load=tuple(recipe.cores.load),
        services=tuple(recipe.cores.services or ()),
    )
