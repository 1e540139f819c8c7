"""nginx as a reverse proxy in front of a stack: load tool → nginx → server (article 002)."""

from __future__ import annotations

from pathlib import Path

from benchlab.process import ManagedProcess, ProcessRegistry
from benchlab.services.base import HOST, wait_until
from benchlab.services.ports import free_port
from benchlab.stacks.base import LISTEN_BACKLOG
from benchlab.stacks.nginx_stacks import nginx_config, nginx_launch


def proxy_config(workdir: Path, port: int, upstream_port: int, workers: int) -> str:
    return nginx_config(
        workdir,
        workers,
        f"""    upstream stack {{
        server {HOST}:{upstream_port};
        keepalive 256;
        keepalive_requests 10000000;
    }}
    server {{
        listen {HOST}:{port} backlog={LISTEN_BACKLOG};
        location / {{
            proxy_pass http://stack;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering on;
        }}
    }}""",
    )


def start_proxy(
    registry: ProcessRegistry,
    workdir: Path,
    cores: tuple[int, ...],
    upstream_port: int,
) -> tuple[ManagedProcess, int]:
    base = workdir / "proxy"
    base.mkdir(parents=True)
    port = free_port()
    launch = nginx_launch(base, proxy_config(base, port, upstream_port, len(cores)))
    process = registry.start(launch.argv, cores=cores, log_path=base / "nginx.log")
    wait_until("nginx proxy", process, lambda: _listening(port), timeout=10)
    return process, port


def _listening(port: int) -> bool:
    import socket

    with socket.create_connection((HOST, port), timeout=1):
        return True
