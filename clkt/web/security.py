"""The endpoint's guards, as aiohttp middlewares, on every route (pages, files, /healthz, /status, /metrics):

- the Host header must name this service: a loopback name or address, the configured `http.host`, or one
  of `http.allowed_hosts` (with any port). A page fetched through a DNS-rebinding name carries that name in
  its Host header and gets 421 Misdirected Request; a request without a Host header gets 400;
- only GET and HEAD: nothing served here changes state, so any other method is 405 (with `Allow`); the one
  exception is a POST to a path in `writable` (the result packs' upload, `clkt.web.intake`, only when an intake
  token is configured; it checks the token itself);
- security headers on every answer: a CSP that allows only this origin's script, style and images and no
  inline script, no framing (`frame-ancestors 'none'`, `X-Frame-Options: DENY`), `nosniff`, no referrer,
  no caching of pages that show live state.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Awaitable, Callable, Iterable

from aiohttp import web

__all__ = ["CSP", "SECURITY_HEADERS", "HostGuard", "host_name", "security_middlewares"]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
log = logging.getLogger("clkt.web")
SAFE_METHODS = frozenset({"GET", "HEAD"})
LOOPBACK_NAMES = frozenset({"localhost", "localhost.", "127.0.0.1", "::1"})

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def host_name(header: str) -> str | None:
    """The host part of a Host header, lower-cased, without the port (`[::1]:8765` -> `::1`); None when it
    does not parse."""
    h = header.strip().lower()
    if not h or any(c.isspace() for c in h):
        return None
    if h.startswith("["):
        end = h.find("]")
        if end < 0:
            return None
        rest = h[end + 1 :]
        if rest and not (rest.startswith(":") and rest[1:].isdigit()):
            return None
        return h[1:end]
    if h.count(":") == 1:
        name, port = h.split(":")
        if not port.isdigit():
            return None
        return name
    if ":" in h:  # a bare IPv6 address is not a valid Host header
        return None
    return h


def _is_loopback(name: str) -> bool:
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class HostGuard:
    """Which Host header names are this service."""

    def __init__(self, *, host: str, allowed: Iterable[str] = ()) -> None:
        names = {host.strip("[]").lower(), *(a.strip("[]").lower() for a in allowed)}
        # a wildcard bind address is not a name anyone reaches us by: only loopback and the allowed names
        names -= {"0.0.0.0", "::", ""}
        self.names = frozenset(names)

    def accepts(self, header: str | None) -> bool:
        if header is None:
            return False
        name = host_name(header)
        if name is None:
            return False
        return _is_loopback(name) or name in self.names


def _secure(resp: web.StreamResponse) -> web.StreamResponse:
    for k, v in SECURITY_HEADERS.items():
        resp.headers.setdefault(k, v)
    resp.headers.setdefault("Cache-Control", "no-store")
    return resp


def _plain(status: int, text: str, **headers: str) -> web.Response:
    return web.Response(status=status, text=text + "\n", content_type="text/plain", charset="utf-8", headers=headers)


def security_middlewares(
    guard: HostGuard, writable: Iterable[str] = (),
) -> list[Callable[..., Awaitable[web.StreamResponse]]]:
    posts = frozenset(writable)

    @web.middleware
    async def guard_mw(request: web.Request, handler: Handler) -> web.StreamResponse:
        host = request.headers.get("Host")
        if host is None:
            return _secure(_plain(400, "a Host header is required"))
        if not guard.accepts(host):
            return _secure(_plain(421, "misdirected request: this service answers only to its own host names"))
        if request.method not in SAFE_METHODS and not (request.method == "POST" and request.path in posts):
            return _secure(_plain(405, "read-only: only GET and HEAD", Allow="GET, HEAD"))
        try:
            resp = await handler(request)
        except web.HTTPException as e:
            # aiohttp's own 404/405 pages: plain text, with the same headers
            return _secure(_plain(e.status, e.reason, **({"Allow": "GET, HEAD"} if e.status == 405 else {})))
        except Exception:
            log.exception("%s %s failed", request.method, request.path[:200])
            return _secure(_plain(500, "internal error: see the daemon's log"))
        return _secure(resp)

    return [guard_mw]
