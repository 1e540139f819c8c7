"""benchlab's own peak memory over a fixed-rate cell, at one rate for several durations: it
must not grow with the number of requests (issue 36). A benchmark, not a test: it runs minutes
of real load.

    .venv/bin/python benchmarks/peak_rss.py --rate 10000 --durations 30 300

Each duration is one `benchlab run` of nginx-static's JSON at the rate, one trial, vegeta on
the load core; the peak is the benchlab process's own high-water mark of resident memory
(VmHWM in /proc: its load tools and servers are other processes), read as it ends, and the
peak while it measured (sampled every 50 ms until the trial's row is stored).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RECIPE = """
name = "peak-rss-{duration}"
stacks = ["nginx-static"]
scenarios = ["json"]
trials = 1
warmup = 0
[[load]]
tool = "vegeta"
rate = {rate}
connections = 256
duration = {duration}
timeout = 5
"""


def status_kib(pid: int, field: str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def trials_stored(results: Path) -> int:
    try:
        with sqlite3.connect(f"file:{results}?mode=ro", uri=True) as db:
            return int(db.execute("SELECT COUNT(*) FROM trials").fetchone()[0])
    except sqlite3.Error:
        return 0


def measure(benchlab: list[str], rate: int, duration: int, work: Path) -> dict[str, float]:
    recipe = work / f"peak-{duration}.toml"
    recipe.write_text(RECIPE.format(rate=rate, duration=duration))
    results = work / f"peak-{duration}.db"
    argv = [*benchlab, "run", str(recipe), "--results", str(results),
            "--html", str(work / f"peak-{duration}.html")]  # fmt: skip
    began = time.monotonic()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak_measuring = 0
    high_water = 0
    while process.poll() is None:
        if not trials_stored(results):
            peak_measuring = max(peak_measuring, status_kib(process.pid, "VmRSS") or 0)
        high_water = max(high_water, status_kib(process.pid, "VmHWM") or 0)
        time.sleep(0.05)
    if process.returncode != 0:
        sys.exit(f"benchlab failed: {process.stderr.read()[-2000:] if process.stderr else ''}")
    with sqlite3.connect(results) as db:
        requests, seconds, errors = db.execute(
            "SELECT requests, duration_s, errors_connect + errors_read + errors_write"
            " + errors_timeout + errors_non_2xx + errors_other FROM trials"
        ).fetchone()
    return {
        "duration": duration, "requests": requests, "achieved": requests / seconds,
        "errors": errors,
        "measuring_mb": peak_measuring / 1024, "peak_mb": high_water / 1024,
        "took_s": time.monotonic() - began,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=int, default=10_000)
    parser.add_argument("--durations", type=int, nargs="+", default=[30, 300])
    parser.add_argument(
        "--benchlab", default=f"{sys.executable} -m benchlab", help="the command to measure"
    )
    parser.add_argument("--keep", type=Path, help="keep the stores and reports in this directory")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="peak-rss-") as temporary:
        directory = args.keep or Path(temporary)
        directory.mkdir(parents=True, exist_ok=True)
        os.chmod(directory, 0o711)
        for duration in args.durations:
            rows.append(measure(args.benchlab.split(), args.rate, duration, Path(directory)))
            row = rows[-1]
            print(
                f"{row['duration']:>5} s  {row['requests']:>10,} requests "
                f"({row['achieved']:,.0f}/s, {row['errors']:,} errors)  peak while measuring "
                f"{row['measuring_mb']:7.1f} MB"
                f"  peak of the run {row['peak_mb']:7.1f} MB  ({row['took_s']:.0f} s in all)",
                flush=True,
            )
    first = rows[0]
    for row in rows[1:]:
        print(
            f"{row['duration']} s / {first['duration']} s: peak while measuring × "
            f"{row['measuring_mb'] / first['measuring_mb']:.2f}, peak of the run × "
            f"{row['peak_mb'] / first['peak_mb']:.2f}"
        )


if __name__ == "__main__":
    main()
