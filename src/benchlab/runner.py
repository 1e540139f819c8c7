"""Execute a plan: rounds of interleaved trials, each stack launched fresh per round.

Every round visits every cell once (round-robin), so slow drift of a noisy machine spreads
over all cells instead of biasing the last one; a stack is relaunched for each round so the
spread over trials includes process-to-process variation (as pyperf's worker processes do).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from benchlab import machine
from benchlab.errors import RunInterrupted, UserError
from benchlab.load import LoadRequest, LoadResult, LoadToolError, run_wrk
from benchlab.monitor import ProcessTreeSampler, StealSampler
from benchlab.process import ManagedProcess, ProcessRegistry
from benchlab.recipe import Cell, Plan
from benchlab.scenarios import SCENARIOS
from benchlab.stacks import CATALOGUE, LaunchContext, Stack
from benchlab.store import RunInfo, Store, now
from benchlab.verify import verify, wait_until_answering

HOST = "127.0.0.1"


class Reporter(Protocol):
    def start(self, run_id: str, total_trials: int, plan: Plan) -> None: ...
    def status(self, message: str) -> None: ...
    def trial(
        self, position: int, cells: int, round_index: int, cell: Cell, result: LoadResult
    ) -> None: ...
    def cell_failed(self, cell: Cell, reason: str) -> None: ...
    def finish(self) -> None: ...


@dataclass
class RunOutcome:
    run_id: str
    status: str
    reason: str | None = None
    failed: dict[Cell, str] = field(default_factory=dict)


class _StackDied(Exception):
    pass


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _raise_interrupt(signum: int, frame: object) -> None:
    raise RunInterrupted(signal.Signals(signum).name)


@contextlib.contextmanager
def _signals_raise() -> Iterator[None]:
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def _uninterruptible() -> Iterator[None]:
    """Cleanup must finish even if the user presses Ctrl-C again."""
    previous = (
        signal.signal(signal.SIGINT, signal.SIG_IGN),
        signal.signal(signal.SIGTERM, signal.SIG_IGN),
    )
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous[0])
        signal.signal(signal.SIGTERM, previous[1])


@contextlib.contextmanager
def _pinned_to(cores: tuple[int, ...]) -> Iterator[None]:
    """benchlab itself (sampling, bookkeeping) stays off the server's cores."""
    try:
        before = os.sched_getaffinity(0)
        os.sched_setaffinity(0, cores)
    except OSError:
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, before)


def start_stack(
    registry: ProcessRegistry, stack: Stack, ctx: LaunchContext, cores: tuple[int, ...]
) -> ManagedProcess:
    """Launch a stack pinned to `cores`; anything it writes to TMPDIR stays in its workdir.

    Paths stay short on purpose: servers put Unix sockets in TMPDIR (Sanic's and uvicorn's
    multiprocessing do), and a socket path may not exceed 107 bytes.
    """
    spec = stack.launch(ctx)
    private_tmp = ctx.workdir / "t"
    private_tmp.mkdir(exist_ok=True)
    return registry.start(
        spec.argv,
        cores=cores,
        log_path=ctx.workdir / "server.log",
        cwd=spec.cwd,
        env={"TMPDIR": str(private_tmp), **spec.env},
    )


class Execution:
    def __init__(self, plan: Plan, store: Store, reporter: Reporter, command: str) -> None:
        self.plan = plan
        self.store = store
        self.reporter = reporter
        self.command = command
        self.registry = ProcessRegistry()
        self.failed: dict[Cell, str] = {}
        self.measured: set[Cell] = set()
        self.cell_ids: dict[Cell, int] = {}
        self.workroot = Path(".")

    # --- the whole run ----------------------------------------------------------------------

    def run(self) -> RunOutcome:
        plan = self.plan
        run_id = self.store.create_run(
            RunInfo(
                recipe_path=str(plan.path),
                recipe_name=plan.recipe.name,
                recipe_text=plan.text,
                question=plan.recipe.question,
                command=self.command,
                git_commit=machine.git_commit(),
                server_cores=plan.cores.server,
                load_cores=plan.cores.load,
                machine=machine.describe(),
            )
        )
        for position, cell in enumerate(plan.cells):
            label = CATALOGUE[cell.stack].label(cell.workers)
            self.cell_ids[cell] = self.store.add_cell(run_id, position, cell, label)
        outcome = RunOutcome(run_id=run_id, status="running")
        self.workroot = Path(tempfile.mkdtemp(prefix="bl-"))
        self.reporter.start(run_id, len(plan.cells) * plan.recipe.trials, plan)
        try:
            with _signals_raise(), _pinned_to(plan.cores.load):
                self._prepare_stacks()
                for round_index in range(plan.recipe.trials):
                    self._run_round(round_index)
            outcome.status = "partial" if self.failed else "complete"
        except (KeyboardInterrupt, RunInterrupted) as exc:
            outcome.status, outcome.reason = "interrupted", f"stopped by {exc or 'SIGINT'}"
        except BaseException as exc:
            outcome.status, outcome.reason = "failed", f"{type(exc).__name__}: {exc}"
            raise
        finally:
            with _uninterruptible():
                self.registry.stop_all()
                shutil.rmtree(self.workroot, ignore_errors=True)
                for cell in self.measured - set(self.failed):
                    self.store.mark_cell(self.cell_ids[cell], "ok")
                self.store.finish_run(run_id, outcome.status, outcome.reason)
                self.reporter.finish()
        outcome.failed = dict(self.failed)
        return outcome

    def _fail(self, cell: Cell, reason: str) -> None:
        if cell in self.failed:
            return
        self.failed[cell] = reason
        self.store.mark_cell(self.cell_ids[cell], "failed", reason)
        self.reporter.cell_failed(cell, reason)

    def _cells_by_stack(self) -> dict[str, list[Cell]]:
        grouped: dict[str, list[Cell]] = {}
        for cell in self.plan.cells:
            grouped.setdefault(cell.stack, []).append(cell)
        return grouped

    def _prepare_stacks(self) -> None:
        for name, cells in self._cells_by_stack().items():
            stack = CATALOGUE[name]
            available = stack.availability()
            if not available.ok:
                for cell in cells:
                    self._fail(cell, f"unavailable: {available.reason}; fix: {available.fix}")
                continue
            if stack.build is not None:
                self.reporter.status(f"building {name}")
                try:
                    stack.build()
                except UserError as exc:
                    for cell in cells:
                        self._fail(cell, f"build failed: {exc}")

    def _run_round(self, round_index: int) -> None:
        groups = list(self._cells_by_stack().items())
        # Rotate the order each round so no stack always runs first (or last) in a round.
        shift = round_index % len(groups)
        groups = groups[shift:] + groups[:shift]
        position = 0
        for name, cells in groups:
            live = [c for c in cells if c not in self.failed]
            if live:
                self._run_stack(CATALOGUE[name], live, round_index, position)
            position += len(cells)

    # --- one stack, one round ---------------------------------------------------------------

    def _run_stack(self, stack: Stack, cells: list[Cell], round_index: int, position: int) -> None:
        stack_index = list(CATALOGUE).index(stack.name)
        workdir = self.workroot / f"s{stack_index}r{round_index}"
        workdir.mkdir()
        ctx = LaunchContext(
            host=HOST,
            port=free_port(),
            workdir=workdir,
            server_cores=self.plan.cores.server,
            workers=cells[0].workers,
        )
        self.reporter.status(
            f"round {round_index + 1}/{self.plan.recipe.trials}: starting {stack.name}"
        )
        server = start_stack(self.registry, stack, ctx, self.plan.cores.server)
        try:
            problem = wait_until_answering(HOST, ctx.port, server.alive, stack.start_timeout)
            if problem:
                reason = f"{stack.name} {problem}; last log lines: {server.log_tail() or '(empty)'}"
                for cell in cells:
                    self._fail(cell, reason)
                return
            for offset, cell in enumerate(cells):
                if cell in self.failed:
                    continue
                self._run_cell(server, ctx, cell, round_index, position + offset, workdir)
        except _StackDied as died:
            for cell in self._cells_by_stack()[stack.name]:
                self._fail(cell, str(died))
        finally:
            self.registry.stop(server)

    def _run_cell(
        self,
        server: ManagedProcess,
        ctx: LaunchContext,
        cell: Cell,
        round_index: int,
        position: int,
        workdir: Path,
    ) -> None:
        problem = verify(HOST, ctx.port, SCENARIOS[cell.scenario])
        if problem:
            self._check_alive(server, cell)
            self._fail(cell, f"verification failed: {problem}")
            return
        url = f"http://{HOST}:{ctx.port}{SCENARIOS[cell.scenario].path}"
        request = LoadRequest(
            url=url,
            connections=cell.connections,
            threads=cell.threads,
            duration_s=cell.duration,
            timeout_s=cell.timeout,
            cores=self.plan.cores.load,
        )
        try:
            if self.plan.recipe.warmup > 0:
                warmup = LoadRequest(**{**request.__dict__, "duration_s": self.plan.recipe.warmup})
                run_wrk(warmup, self.registry, workdir)
                self._check_alive(server, cell)
            cores = self.plan.cores
            with (
                ProcessTreeSampler(server) as sampler,
                StealSampler(cores.server, cores.load) as steal,
            ):
                started_at = now()
                result = run_wrk(request, self.registry, workdir)
        except LoadToolError as exc:
            self._check_alive(server, cell)
            self._fail(cell, f"load tool failed: {exc}")
            return
        self._check_alive(server, cell)
        self.store.add_trial(
            self.cell_ids[cell], round_index, started_at, result, sampler.usage(), steal.result
        )
        self.measured.add(cell)
        self.reporter.trial(position, len(self.plan.cells), round_index, cell, result)

    def _check_alive(self, server: ManagedProcess, cell: Cell) -> None:
        if server.alive():
            return
        tail = server.log_tail(3) or "(empty log)"
        raise _StackDied(
            f"{cell.stack} exited with code {server.returncode} during the {cell.scenario} "
            f"trial at {cell.connections} connections; last log lines: {tail}"
        )
