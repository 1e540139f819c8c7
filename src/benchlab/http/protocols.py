"""The wire protocols a load profile can ask for (`[[load]] protocol`), declared once: what
each is called, whether it runs over TLS, whether it is HTTP/2, and what a client that
verifies it must see negotiated."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Protocol:
    name: str
    description: str
    tls: bool
    http2: bool

    @property
    def scheme(self) -> str:
        return "https" if self.tls else "http"

    @property
    def http_version(self) -> str:
        """What the response's status line must say (httpx's http_version)."""
        return "HTTP/2" if self.http2 else "HTTP/1.1"


PROTOCOLS: dict[str, Protocol] = {
    p.name: p
    for p in (
        Protocol("h1", "HTTP/1.1 over TCP", tls=False, http2=False),
        Protocol("h1-tls", "HTTP/1.1 over TLS (ALPN http/1.1)", tls=True, http2=False),
        Protocol("h2", "HTTP/2 over TLS (ALPN h2)", tls=True, http2=True),
        Protocol("h2c", "HTTP/2 over TCP, prior knowledge (no TLS)", tls=False, http2=True),
    )
}
PLAIN = PROTOCOLS["h1"]
# TLS versions benchlab's clients offer: 1.3 only, what every server here speaks (granian
# accepts nothing older by default), so no stack is measured on an older handshake.
TLS_VERSION = "TLSv1.3"
