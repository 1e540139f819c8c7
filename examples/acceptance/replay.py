"""Replays what `benchlab tune` recommended, independently of its proof: the printed command
run as printed (from where tune ran, with the app's environment first on PATH; only its
address moves to loopback), pinned to core 0, warmed up for 5 s at the rate, then vegeta on
core 1 at the rate to run at for three attacks of 10 s and one of 60 s. Prints each 10-s
window's p99 (the 60-s attack cut in six) and whether every one held the target. An answer
for a command (`tune --command`) is replayed the same way (its `PORT=8000` or `{port}`
moved to a free port); an answer for an endpoint already running is replayed at its URL,
nothing started.

    .venv/bin/python examples/acceptance/replay.py results/acceptance/httpbin.json \
        --cwd /work/acceptance/httpbin --python /work/acceptance/httpbin/bin/python \
        --requests-file /work/acceptance/httpbin/tune-requests.toml

Exit 0: every window held; 1: one missed; 2: nothing to replay (no rate to run at).
Only the deploy command, the rate and the requests come from tune; the load, its timing and
the percentiles are vegeta's own (`vegeta report`, and its CSV records for the windows).
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from benchlab.load.vegeta import binary
from benchlab.tune.arguments import tune_requests

WARM_UP_S = 5
ATTACKS_S = (10, 10, 10)
LONG_S = 60
WINDOW_S = 10
CONNECTIONS = 256  # as tune's search and proof loaded it
SERVER_CORE, LOAD_CORE = "0", "1"
MAX_ERROR_SHARE = 0.001  # tune's target allows 0.1 % errors ([slo] max_error_pct)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def on_loopback(command: str, port: int) -> str:
    """The printed command, listening on 127.0.0.1:PORT instead of 0.0.0.0:8000."""
    command = command.replace("0.0.0.0:8000", f"127.0.0.1:{port}")
    command = re.sub(r"\bPORT=8000\b", f"PORT={port}", command)  # a command that reads $PORT
    command = re.sub(r"--host([ =])0\.0\.0\.0", r"--host\g<1>127.0.0.1", command)
    return re.sub(r"--port([ =])8000\b", rf"--port\g<1>{port}", command)


def vegeta_targets(args: argparse.Namespace, origin: str, path: Path) -> str:
    """The tune's requests as vegeta's JSON targets at `origin`, each repeated by its
    weight."""
    requests, echo = tune_requests(args.request or [], args.requests_file, 200, None)
    if echo is not None:
        raise SystemExit(f"replay.py: '{echo.describe()}': vegeta replays HTTP requests only")
    lines = []
    for r in requests:
        target = {"method": r.method, "url": f"{origin}{r.path}",
                  "header": {name: [value] for name, value in r.headers}}  # fmt: skip
        if r.request_body:
            target["body"] = base64.b64encode(r.request_body).decode()
        lines += [json.dumps(target)] * max(1, int(r.weight))
    path.write_text("\n".join(lines) + "\n")
    return requests[0].path


def attack(targets: Path, rate: float, seconds: int, out: Path) -> None:
    argv = [
        "taskset", "-c", LOAD_CORE, str(binary()), "attack", "-format=json",
        f"-targets={targets}", f"-rate={round(rate * 10)}/10s", f"-duration={seconds}s",
        "-timeout=2s", f"-max-connections={CONNECTIONS}", f"-connections={CONNECTIONS}",
        "-max-body=0", f"-output={out}",
    ]  # fmt: skip
    subprocess.run(argv, check=True, timeout=seconds + 30)


def records(path: Path) -> list[tuple[int, int, int]]:
    """(sent ns, status, latency ns) of every request, from vegeta's own CSV encoding."""
    csv = subprocess.run(
        [str(binary()), "encode", "-to=csv", str(path)], capture_output=True, text=True,
        check=True, timeout=120,
    ).stdout  # fmt: skip
    out = []
    for line in csv.splitlines():
        fields = line.split(",", 3)
        out.append((int(fields[0]), int(fields[1]), int(fields[2])))
    return out


def p99_ms(latencies_ns: list[int]) -> float:
    """The nearest-rank 99th percentile."""
    ordered = sorted(latencies_ns)
    return ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)] / 1e6


def windows(rows: list[tuple[int, int, int]], seconds: int) -> list[tuple[float, int, int]]:
    """Each WINDOW_S window by send time: (p99 ms, requests, failures)."""
    start = min(r[0] for r in rows)
    out = []
    for index in range(seconds // WINDOW_S):
        low, high = start + index * WINDOW_S * 10**9, start + (index + 1) * WINDOW_S * 10**9
        part = [r for r in rows if low <= r[0] < high]
        failed = sum(1 for r in part if not 200 <= r[1] < 400)
        out.append((p99_ms([r[2] for r in part]), len(part), failed))
    return out


def wait_answering(
    origin: str, path: str, server: subprocess.Popen | None, seconds: float = 60
) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server is not None and server.poll() is not None:
            sys.exit(f"the command exited with {server.returncode} before answering")
        try:
            with urllib.request.urlopen(f"{origin}{path}", timeout=2):
                return
        except urllib.error.HTTPError:
            return  # it answered (a redirect's target, an auth challenge): it is up
        except OSError:
            time.sleep(0.2)
    sys.exit(f"nothing answered at {origin} in {seconds:.0f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("result", type=Path, help="tune's JSON (-f json -o FILE)")
    parser.add_argument("--cwd", type=Path, required=True, help="where tune ran")
    parser.add_argument("--python", type=Path, help="the app's interpreter (a Python app's)")
    parser.add_argument("--request", action="append", help="as tune's --request")
    parser.add_argument("--requests-file", type=Path, help="as tune's --requests-file")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE, as tune's")
    parser.add_argument("--slo-ms", type=float, default=100.0)
    parser.add_argument("--json", type=Path, help="also write the windows here, for summarise.py")
    args = parser.parse_args()
    result = json.loads(args.result.read_text())
    best = result.get("recommendation") or {}
    subject = result.get("subject") or {}
    endpoint = subject.get("kind") == "endpoint"
    rate, command = best.get("run_at_rps"), best.get("command")
    if not rate or not (command or endpoint):
        print(f"{args.result.stem}: no rate to run at to replay")
        return 2
    port = free_port()
    origin = subject["name"] if endpoint else f"http://127.0.0.1:{port}"
    env = dict(os.environ)
    if args.python is not None:
        env["PATH"] = f"{args.python.parent}:{os.environ['PATH']}"
    env.update(pair.split("=", 1) for pair in args.env)
    with tempfile.TemporaryDirectory(prefix="replay-") as tmp:
        work = Path(tmp)
        path = vegeta_targets(args, origin, work / "targets.json")
        server = None if endpoint else subprocess.Popen(
            ["taskset", "-c", SERVER_CORE, "bash", "-c", on_loopback(command, port)],
            cwd=args.cwd, env=env, start_new_session=True,
            stdout=subprocess.DEVNULL, stderr=(work / "server.log").open("wb"),
        )  # fmt: skip
        try:
            wait_answering(origin, path, server)
            attack(work / "targets.json", rate, WARM_UP_S, work / "warm.bin")
            seen: list[tuple[float, int, int]] = []
            for i, seconds in enumerate(ATTACKS_S):
                attack(work / "targets.json", rate, seconds, work / f"a{i}.bin")
                seen += windows(records(work / f"a{i}.bin"), seconds)
            attack(work / "targets.json", rate, LONG_S, work / "long.bin")
            long_rows = records(work / "long.bin")
            long_windows = windows(long_rows, LONG_S)
        finally:
            if server is not None:
                os.killpg(server.pid, signal.SIGTERM)
                try:
                    server.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.killpg(server.pid, signal.SIGKILL)
                    server.wait()
    whole = p99_ms([r[2] for r in long_rows])
    failed = sum(w[2] for w in (*seen, *long_windows))
    every = [*seen, *long_windows]
    # A window holds as tune's target does: p99 under it, errors within its allowance.
    held = sum(1 for w in every if w[0] <= args.slo_ms and w[2] <= MAX_ERROR_SHARE * w[1])
    shown = lambda ws: ", ".join(f"{w[0]:,.1f}" for w in ws)  # noqa: E731
    ok = held == len(every) and whole <= args.slo_ms
    if args.json:
        args.json.write_text(json.dumps({
            "rate": rate, "slo_ms": args.slo_ms, "held": ok, "whole_p99_ms": whole,
            "windows": [
                {"p99_ms": w[0], "requests": w[1], "failed": w[2],
                 "held": w[0] <= args.slo_ms and w[2] <= MAX_ERROR_SHARE * w[1]}
                for w in every
            ],
        }, indent=1) + "\n")  # fmt: skip
    print(
        f"{args.result.stem}: {rate:,.0f} req/s — three 10-s attacks, p99 {shown(seen)} ms; "
        f"60 s, p99 {whole:,.1f} ms, its 10-s windows {shown(long_windows)} ms; "
        f"{held} of {len(every)} windows held p99 ≤ {args.slo_ms:g} ms, {failed} failed "
        f"requests — {'HELD' if ok else 'MISSED'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
