"""Go stacks, built with `go build` from the project's own sources into a cache by content hash."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from benchlab.core.errors import UserError
from benchlab.http.scenarios import WEBSOCKET_SCENARIOS
from benchlab.stacks.base import APPS_DIR, WITH_API, WITH_CPU, Launch, LaunchContext, Stack
from benchlab.system.build_cache import cache_dir, trusted, usable_cache
from benchlab.system.go_toolchain import build_env, go_command

GO_APPS = APPS_DIR / "go"
BUILD_TIMEOUT_S = 600


def binary_path(app: str) -> Path:
    """The binary's name carries a hash of the module's sources: any change means a rebuild."""
    digest = hashlib.sha256()
    for path in sorted(GO_APPS.rglob("*")):
        if path.is_file():
            digest.update(path.relative_to(GO_APPS).as_posix().encode())
            digest.update(path.read_bytes())
    return cache_dir() / f"{app}-{digest.hexdigest()[:12]}"


def build(app: str) -> Path:
    target = binary_path(app)
    if trusted(target):
        return target
    go = go_command()  # the machine's if new enough, else benchlab's pinned one
    usable_cache()
    target.unlink(missing_ok=True)
    partial = target.with_suffix(".partial")
    try:
        result = subprocess.run(
            [go, "build", "-trimpath", "-o", str(partial), f"./{app}"],
            cwd=GO_APPS, capture_output=True, text=True, check=False, timeout=BUILD_TIMEOUT_S,
            env=build_env(),
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise UserError(
            f"go build of '{app}' took over {BUILD_TIMEOUT_S // 60} minutes (downloading its "
            "modules?); run 'benchlab build' where the Go module proxy answers"
        ) from None
    if result.returncode != 0:
        raise UserError(f"go build of '{app}' failed:\n{result.stderr.strip()[-2000:]}")
    partial.chmod(0o755)  # the stacks' unprivileged user runs it when benchlab is root
    partial.rename(target)
    for stale in target.parent.glob(f"{app}-*"):
        if stale != target:
            stale.unlink(missing_ok=True)  # binaries of sources that no longer exist
    return target


def _build_quietly(app: str) -> None:
    build(app)


def _go_launch(app: str):
    def launch(ctx: LaunchContext) -> Launch:
        tls = (
            {"BENCHLAB_TLS_CERT": str(ctx.tls.cert), "BENCHLAB_TLS_KEY": str(ctx.tls.key)}
            if ctx.tls
            else {}
        )
        return Launch(
            argv=[str(binary_path(app))],
            env={
                **tls,
                **({"BENCHLAB_H2C": "1"} if ctx.protocol == "h2c" else {}),
                "BENCHLAB_ADDR": f"{ctx.host}:{ctx.port}",
                # Go would use every core it may run on; say explicitly how many (fairness).
                "GOMAXPROCS": str(ctx.workers),
                "GODEBUG": "containermaxprocs=0",
                "GIN_MODE": "release",
            },
        )

    return launch


def _go_stack(
    name: str,
    app: str,
    framework: str,
    scenarios: tuple[str, ...],
    protocols: tuple[str, ...],
    protocol_note: str = "",
) -> Stack:
    """A Go app of apps/go, built on first use (the build runs once per source change)."""
    return Stack(
        name=name,
        framework=framework,
        server="Go net/http",
        worker_model="goroutines over GOMAXPROCS threads (pgx, go-sql-driver, go-redis)",
        scenarios=scenarios,
        protocols=protocols,
        protocol_note=protocol_note,
        launch=_go_launch(app),
        fix="benchlab build (it installs a pinned Go when the machine has none new enough)",
        build=lambda: _build_quietly(app),
        websocket_ceiling=WEBSOCKET_SCENARIOS[0] in scenarios,
    )


GO_STACKS = (
    _go_stack("gin", "gin", "Gin", WITH_API, ("h1", "h1-tls", "h2", "h2c")),
    _go_stack(
        "go-nethttp",
        "nethttp",
        "none (standard library; gorilla/websocket for the WebSocket scenarios)",
        (*WITH_CPU, *WEBSOCKET_SCENARIOS),
        ("h1", "h1-tls", "h2"),
        "h2c needs golang.org/x/net's handler, which this app does not use",
    ),
)
