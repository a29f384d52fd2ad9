"""Two timers on every connection of the controller's HTTP servers, as Go's `net/http` has.

Upstream's servers (controller-runtime's webhook, metrics and probe servers) are Go
`http.Server`s with `IdleTimeout` 90 s and `ReadHeaderTimeout` 32 s. aiohttp has one timer
per connection, `keepalive_timeout`, which is both how long an idle kept-alive connection
stays open and the only bound on a connection still sending its headers. One timer cannot be
both:

- short (this project used 10 s), the server closes idle connections while the client still
  holds them: kube-apiserver's webhook client keeps an idle connection 90 s, and a request
  it writes onto one the server is closing fails with "failed calling webhook ...: EOF" - a
  failed admission (Go does not retry a POST). Under load the window is wide: the client
  notices the close only when its loop runs;
- long, a slowloris client holds a connection that long with a byte now and then.

`TimedAppRunner` serves an aiohttp `Application` with both timers:

- `IDLE_TIMEOUT` (120 s) between requests: longer than kube-apiserver's 90 s and than the
  simulated cluster's 30 s, so the client closes an idle connection first and never writes
  onto one the server has given up;
- `HEADER_TIMEOUT` (10 s, the project's bound before) for a request's headers, counted from
  the connection or from the first byte after the previous response. A body is bounded by
  the handlers' own timeouts and size caps.

What is subclassed: aiohttp's `RequestHandler` (the per-connection protocol) to add the header
timer, using its `_waiter` (the future it parks on between requests) and `_request_count`
(incremented for each request whose headers are complete); no library offers a header
timeout for aiohttp. A pipelined second request that arrives while the first is being
answered is bounded by the idle timer only.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

__all__ = ["HEADER_TIMEOUT", "IDLE_TIMEOUT", "HeaderTimedHandler", "TimedAppRunner"]

# Seconds a connection may take to send a request's headers, from connecting or from the
# request's first byte.
HEADER_TIMEOUT: Final = 10.0
# Seconds an idle kept-alive connection stays open: above every client's own idle timeout.
IDLE_TIMEOUT: Final = 120.0


class HeaderTimedHandler(RequestHandler):
    """aiohttp's connection protocol, closing a connection whose headers are late."""

    header_timeout: float = HEADER_TIMEOUT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._arm()  # a new connection's first request

    def data_received(self, data: bytes) -> None:
        before = self._request_count
        super().data_received(data)
        if self._request_count > before:
            self._disarm()  # a request's headers are complete
        elif data and self._header_timer is None and self._idle():
            self._arm()  # the first byte of the next request

    def connection_lost(self, exc: BaseException | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _idle(self) -> bool:
        """Parked between requests (not answering one, nothing queued)."""
        waiter = self._waiter
        return waiter is not None and not waiter.done()

    def _arm(self) -> None:
        self._disarm()
        self._header_timer = asyncio.get_running_loop().call_later(
            self.header_timeout, self._headers_late
        )

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_late(self) -> None:
        self._header_timer = None
        self.force_close()


class _TimedServer(web.Server):
    __slots__ = ()  # the same layout as web.Server, so an instance can take this class

    def __call__(self) -> RequestHandler:
        loop = self._loop  # private-ok: aiohttp's own state
        return HeaderTimedHandler(self, loop=loop, **self._kwargs)


class TimedAppRunner(web.AppRunner):
    """`web.AppRunner` whose connections have an idle and a header timer (module docstring)."""

    def __init__(self, app: web.Application, **kwargs: Any) -> None:
        kwargs.setdefault("keepalive_timeout", IDLE_TIMEOUT)
        super().__init__(app, **kwargs)

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        # The Application builds a plain web.Server; only its protocol factory differs.
        server.__class__ = _TimedServer
        return server
