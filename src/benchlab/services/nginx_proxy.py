"""nginx as a reverse proxy in front of a stack: load tool → nginx → server (article 002)."""

from __future__ import annotations

from pathlib import Path

from benchlab.hosts.base import THIS_MACHINE, Host
from benchlab.process import ManagedProcess, ProcessRegistry
from benchlab.services.base import HOST, wait_until
from benchlab.services.ports import free_port
from benchlab.stacks.base import LISTEN_BACKLOG
from benchlab.stacks.nginx_stacks import nginx_config, nginx_launch


def proxy_config(
    workdir: Path, port: int, upstream_port: int, workers: int, address: str = HOST
) -> str:
    return nginx_config(
        workdir,
        workers,
        f"""    upstream stack {{
        server {address}:{upstream_port};
        keepalive 256;
        keepalive_requests 10000000;
    }}
    server {{
        listen {address}:{port} backlog={LISTEN_BACKLOG};
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
    host: Host = THIS_MACHINE,
) -> tuple[ManagedProcess, int]:
    """On the server's host, in front of the stack, at the same address."""
    base = workdir / "proxy"
    base.mkdir(parents=True)
    port = free_port()
    config = proxy_config(base, port, upstream_port, len(cores), host.address)
    launch = nginx_launch(base, config)
    host.push(base)
    process = registry.start(launch.argv, host=host, cores=cores, log_path=base / "nginx.log")
    wait_until("nginx proxy", process, lambda: _listening(host.address, port), timeout=10)
    return process, port


def _listening(address: str, port: int) -> bool:
    import socket

    with socket.create_connection((address, port), timeout=1):
        return True
