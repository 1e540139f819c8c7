"""benchlab with two more stacks: `slowable`, tests/apps/misbehaving.py in its slow mode, where
each answer costs $BENCHLAB_SLOW_MS milliseconds of busy work, and `steady`, the same at 1 ms
whatever that variable says (a sentinel). The CI example's test runs the example's script with
this as its BENCHLAB, and slows the "branch" down through that variable."""

import os
import sys
from pathlib import Path

from benchlab.cli import main
from benchlab.stacks import CATALOGUE
from benchlab.stacks.base import Launch, LaunchContext, Stack

MISBEHAVING = Path(__file__).resolve().parent / "misbehaving.py"


def _launch(ctx: LaunchContext) -> Launch:
    # The slowness this benchlab was started with, given to the stack on purpose (a stack sees
    # none of benchlab's environment but what its launch gives it).
    return Launch(
        argv=[sys.executable, str(MISBEHAVING), "slow", ctx.host, str(ctx.port)],
        env={"BENCHLAB_SLOW_MS": os.environ.get("BENCHLAB_SLOW_MS", "0")},
    )


def _steady(ctx: LaunchContext) -> Launch:
    return Launch(
        argv=[sys.executable, str(MISBEHAVING), "slow", ctx.host, str(ctx.port)],
        env={"BENCHLAB_SLOW_MS": "1"},
    )


for name, launch in (("slowable", _launch), ("steady", _steady)):
    CATALOGUE[name] = Stack(
        name=name,
        framework="test",
        server="http.server",
        worker_model="threads",
        scenarios=("plaintext", "json"),
        launch=launch,
        start_timeout=10,
    )
main()
