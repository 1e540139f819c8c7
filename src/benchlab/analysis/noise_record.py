"""This machine's measured noise (`benchlab selfcheck --noise`), kept in benchlab's cache with
the machine it was measured on: a run on the same machine reads it to choose, before it has
any data of its own, how its ratios get their intervals."""

from __future__ import annotations

import json
import os
import platform
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchlab.analysis.noise import NoiseComponents
from benchlab.core import environment
from benchlab.hosts import machine
from benchlab.system.build_cache import state_dir
from benchlab.system.outputs import write_output
from benchlab.system.state_files import read_state, write_state
from benchlab.system.trusted_path import Untrusted

NOISE_RECORD_VARIABLE = environment.NOISE_RECORD


def noise_path() -> Path:
    """Where the record is kept: benchlab's cache, unless $BENCHLAB_NOISE_RECORD names a file
    (the tests do, so that this machine's record never changes how their runs compare)."""
    override = os.environ.get(NOISE_RECORD_VARIABLE)
    return Path(override) if override else state_dir() / "noise.json"


def machine_key() -> dict[str, Any]:
    """The facts a noise measurement holds for (those of machine.describe(), without the
    version probes it also runs)."""
    return {"cpu": machine.cpu_model(), "cores": os.cpu_count(), "kernel": platform.release()}


def _record() -> dict[str, Any] | None:
    override = os.environ.get(NOISE_RECORD_VARIABLE)
    try:
        text = Path(override).read_bytes() if override else read_state(noise_path())
        data = json.loads(text or b"")
    except (OSError, ValueError, Untrusted):
        return None
    return data if isinstance(data, dict) and data.get("machine") == machine_key() else None


def _components(data: dict[str, Any]) -> NoiseComponents | None:
    return NoiseComponents.from_json(data.get("components"))


def noise_facts() -> dict[str, Any] | None:
    """What a run stores with its machine: the components, whether pairing by round helps,
    and when they were measured."""
    data = _record()
    found = None if data is None else _components(data)
    if data is None or found is None:
        return None
    return {**found.as_json(), "measured_at": data.get("measured_at")}


def keep_noise(found: NoiseComponents, design: dict[str, Any]) -> Path:
    path = noise_path()
    record = {
        "machine": machine_key(),
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "design": design,
        "components": found.as_json(),
    }
    if os.environ.get(NOISE_RECORD_VARIABLE):  # the tests' own file
        write_output(path, json.dumps(record, indent=2), "the noise record")
    else:
        write_state(path, json.dumps(record, indent=2))
    return path
