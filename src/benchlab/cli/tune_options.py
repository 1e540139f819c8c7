"""The options of `benchlab tune`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from benchlab.analysis.capacity import PROOF_HEADROOM, PROOF_SPIKE_WINDOWS, SHORTEST_PROOF_S
from benchlab.cli import completion, formats
from benchlab.recipe.schema import MAX_LATENCY_MS

TuneAppSpecArgument = Annotated[
    str | None,
    typer.Argument(
        metavar="APP|URL",
        help="What to tune: a Python app (path/to/module.py:app, package.module:app, or a "
        "factory: package.module:create_app(), literal arguments allowed), or the URL of an "
        "endpoint already running (http://127.0.0.1:8080/orders). Or give --command instead.",
        show_default=False,
    ),
]

TuneCommandOption = Annotated[
    str | None,
    typer.Option(
        "--command", metavar="'TEMPLATE'",
        help="Tune a server started by this shell command (any language), one candidate per "
        "point of --grid: its {knob} placeholders get the grid's values, {port} (and $PORT) "
        "the port to answer on, e.g. 'GOMAXPROCS={procs} ./server --port {port}'.",
    ),
]  # fmt: skip

TuneGridOption = Annotated[
    list[str] | None,
    typer.Option(
        "--grid", metavar="KNOB=V1,V2",
        help="A knob of --command and the values to try (repeatable: every combination is a "
        "candidate), e.g. --grid procs=1,2.",
    ),
]  # fmt: skip

TunePidOption = Annotated[
    int | None,
    typer.Option(
        "--pid", metavar="PID", min=1,
        help="An endpoint's main process on this machine: its CPU per request and memory are "
        "counted over it and everything it forks.",
    ),
]  # fmt: skip

TuneCgroupOption = Annotated[
    str | None,
    typer.Option(
        "--cgroup", metavar="PATH",
        help="An endpoint's control group (cgroup v2, e.g. system.slice/app.service): its CPU "
        "and memory are counted there.",
    ),
]  # fmt: skip

TuneUnitOption = Annotated[
    str | None,
    typer.Option(
        "--unit", metavar="NAME",
        help="An endpoint's systemd unit: its CPU and memory are counted in its control group.",
    ),
]  # fmt: skip

TuneFactoryOption = Annotated[
    bool,
    typer.Option("--factory", help="APP names a callable that returns the app (no arguments)."),
]

TuneQuickOption = Annotated[
    bool,
    typer.Option(
        "--quick",
        help="The first pass only (about 10 s a candidate): candidates ranked by their "
        "closed-loop throughput, no capacity search; the answer is provisional.",
    ),
]

TuneCheckOnlyOption = Annotated[
    bool,
    typer.Option(
        "--check-only",
        help="Start each candidate once and check its answer, then show the command that "
        "deploys each one that answered right; nothing is measured (a few seconds a "
        "candidate).",
    ),
]

TuneBehindProxyOption = Annotated[
    bool,
    typer.Option(
        "--behind-proxy",
        help="Your app is served behind a proxy that parses and buffers requests (nginx, a "
        "load balancer): the answer is not checked for HTTP parsing and slow clients, the "
        "check that says whether it needs one (about 40 s).",
    ),
]

TuneVerboseOption = Annotated[
    bool, typer.Option("--verbose", "-v", help="Show the traceback when the app fails to load.")
]

TunePythonOption = Annotated[
    str | None,
    typer.Option(
        metavar="PATH",
        help="The interpreter of your app's environment (default: the active virtualenv, "
        "else a .venv or venv beside the app or in its project, else benchlab's own; the "
        "plan says which).",
    ),
]

TuneInterfaceOption = Annotated[
    str | None, typer.Option(metavar="asgi|wsgi", help="Default: detected.")
]

TuneRequestOption = Annotated[
    list[str] | None,
    typer.Option(
        "--request",
        metavar="'METHOD PATH'",
        help="A request to send (repeatable; default 'GET /'); 'WS PATH': a WebSocket "
        "endpoint that sends each text message back, tuned for its echo's p99 (alone).",
    ),
]

TuneRequestsFileOption = Annotated[
    Path | None,
    typer.Option(
        metavar="FILE",
        help="A TOML file of [[request]] tables: method, path, headers, body, weight, "
        "status, contains, json_key.",
    ),
]

TuneCheckStatusOption = Annotated[
    int, typer.Option(metavar="CODE", help="The status every --request must get.")
]

TuneCheckBodyOption = Annotated[
    str | None, typer.Option(metavar="TEXT", help="Text every --request's answer must contain.")
]

TuneSloP99MsOption = Annotated[
    float,
    typer.Option(metavar="MS", min=0.1, max=MAX_LATENCY_MS, help="The latency target: p99, ms."),
]

TuneBudgetOption = Annotated[
    float,
    typer.Option(metavar="MIN", min=1, max=24 * 60, help="Minutes the whole search may take."),
]

TuneProofOption = Annotated[
    int,
    typer.Option(
        "--proof", metavar="SECONDS", min=SHORTEST_PROOF_S, max=3600,
        help="How long the answer's replay runs: the rate to run at must hold the p99 target "
        f"in every ~2-s window of it, with {PROOF_HEADROOM:g}× headroom in all but one in "
        f"{PROOF_SPIKE_WINDOWS} (longer: a rarer miss is caught).",
    ),
]  # fmt: skip

TuneRateOption = Annotated[
    float | None,
    typer.Option(
        "--rate", metavar="REQ/S", min=1, max=10_000_000,
        help="Find the cheapest candidate (fewest workers, least memory, least CPU per "
        "request) that holds this load under the target, with its proof at it; when nothing "
        "does, the most that holds and how far short it is.",
    ),
]  # fmt: skip

TuneCpusOption = Annotated[
    str | None,
    typer.Option(
        "--cpus", metavar="N",
        help="The CPUs of the app's container (1.5, 500m): every candidate runs under that CPU "
        "quota, on as many cores as it needs, and the worker counts tried are for it.",
    ),
]  # fmt: skip

TuneMemoryOption = Annotated[
    str | None,
    typer.Option(
        "--memory", metavar="SIZE",
        help="The memory limit of the app's container (512M, 1.5G): a candidate the kernel "
        "kills at it does not fit.",
    ),
]  # fmt: skip

TuneCheckAnswerOption = Annotated[
    Path | None,
    typer.Option(
        "--check-answer", metavar="FILE",
        help="Prove a stored answer again (the JSON `tune -f json` wrote): its command "
        "replayed at its rate for --proof seconds, every window judged; exit 1 if it no "
        "longer holds (for CI).",
    ),
]  # fmt: skip

TuneResumeOption = Annotated[
    bool,
    typer.Option(
        "--resume",
        metavar="",
        help="Continue the last unfinished tune of this app and requests.",
    ),
]

TuneEnvOption = Annotated[
    list[str] | None,
    typer.Option("--env", metavar="KEY=VALUE", help="For the app (repeatable)."),
]

TuneEnvFileOption = Annotated[
    Path | None, typer.Option(metavar="FILE", help="A file of KEY=VALUE lines.")
]

TuneSetupOption = Annotated[
    str | None,
    typer.Option(
        "--setup",
        metavar="COMMAND",
        help="A shell command run once after the --with services start, before the first "
        "candidate (e.g. 'python manage.py migrate'): in this directory, with the app's "
        "environment and the services' addresses.",
    ),
]

TuneResetBetweenOption = Annotated[
    str | None,
    typer.Option(
        "--reset-between",
        metavar="COMMAND",
        help="A shell command run before each candidate starts, as --setup runs (e.g. "
        "'python manage.py flush --no-input && python manage.py loaddata seed'). Without it "
        "nothing touches the --with services' data between candidates.",
    ),
]

TuneWithServicesOption = Annotated[
    str | None,
    typer.Option(
        "--with",
        metavar="SERVICES",
        help="Services benchlab starts for the app, and the variables that get their "
        "addresses: postgres[=VAR],mariadb[=VAR],redis[=VAR] (default DATABASE_URL, "
        "REDIS_URL).",
    ),
]

TuneServersOption = Annotated[
    str | None,
    typer.Option(
        metavar="LIST", help="Only these servers, e.g. gunicorn,waitress.",
        autocompletion=completion.tune_servers,
    ),
]  # fmt: skip

TuneWorkersOption = Annotated[
    str | None, typer.Option(metavar="LIST", help="Worker counts to try, e.g. 1,2,3.")
]

TuneThreadsOption = Annotated[
    str | None,
    typer.Option(metavar="LIST", help="Threads per worker to try (default 4,16,64)."),
]

TuneGreenletsOption = Annotated[
    str | None,
    typer.Option(metavar="LIST", help="Greenlets per gevent worker to try (default 100,1000)."),
]

TuneConnectionsOption = Annotated[
    int | None,
    typer.Option(
        metavar="C",
        min=1,
        max=100_000,
        help="The most connections the load may open (default 256; 50 for 'WS PATH': the "
        "WebSocket tool runs a thread a connection).",
    ),
]

TuneFmtOption = Annotated[
    str | None,
    formats.option(formats.TUNE, "Default: from the -o file's extension, else table."),
]

TuneOutputOption = Annotated[
    Path | None,
    typer.Option("-o", "--output", metavar="FILE", help="Write the report to this file."),
]
