"""nginx as a reverse proxy in front of a stack: load tool → nginx → server (article 002)."""

from __future__ import annotations

from pathlib import Path

from benchlab.hosts.base import THIS_MACHINE, Host
from benchlab.http.protocols import PROTOCOLS
from benchlab.http.tls import TlsFiles
from benchlab.services.base import HOST, start_listening
from benchlab.stacks.nginx_stacks import nginx_config, nginx_launch
from benchlab.stacks.servers import LISTEN_BACKLOG
from benchlab.system.process import ManagedProcess, ProcessRegistry


def proxy_config(
    workdir: Path,
    port: int,
    upstream_port: int,
    workers: int,
    address: str = HOST,
    protocol: str = "h1",
    tls: TlsFiles | None = None,
) -> str:
    spoken = PROTOCOLS[protocol]
    # nginx 1.22 (Debian 12) names HTTP/2 on the listen line; without ssl it is h2c.
    flags = (" ssl" if spoken.tls else "") + (" http2" if spoken.http2 else "")
    certificate = (
        f"""
        ssl_certificate {tls.cert};
        ssl_certificate_key {tls.key};
        ssl_protocols TLSv1.3;"""
        if spoken.tls and tls is not None
        else ""
    )
    return nginx_config(
        workdir,
        workers,
        f"""    upstream stack {{
        server {address}:{upstream_port};
        keepalive 256;
        keepalive_requests 10000000;
    }}
    server {{
        listen {address}:{port}{flags} backlog={LISTEN_BACKLOG};{certificate}
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
    protocol: str = "h1",
    tls: TlsFiles | None = None,
) -> tuple[ManagedProcess, int]:
    """On the server's host, in front of the stack, at the same address: it speaks the
    cell's protocol to the load tool (terminating TLS and HTTP/2) and HTTP/1.1 to the
    stack."""
    base = workdir / "proxy"
    base.mkdir()

    def argv(port: int) -> list[str]:
        config = proxy_config(base, port, upstream_port, len(cores), host.address, protocol, tls)
        launch = nginx_launch(base, config)
        host.push(base)
        return launch.argv

    def ready(port: int, process: ManagedProcess) -> bool:
        # Its own socket answering, not whatever else might listen there.
        return _listening(host.address, port) and process.listens_on(port)

    return start_listening(
        "nginx proxy",
        registry,
        host,
        argv,
        ready,
        cores=cores,
        log_path=base / "nginx.log",
    )


def _listening(address: str, port: int) -> bool:
    import socket

    with socket.create_connection((address, port), timeout=1):
        return True
