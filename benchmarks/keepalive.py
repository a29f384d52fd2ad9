"""A lean HTTP/1.1 keep-alive client for the admission load generator.

Why not aiohttp's client: the generator runs on the same two cores as the webhook it
measures, and aiohttp's per-request machinery (request and response objects, timers,
connector bookkeeping) cost the generators about 0.8 ms of CPU per pod - more than the
webhook itself spent - so the run measured the generators' competition for the CPU as
much as the webhook. This client sends prebuilt request bytes over kept-alive TLS
connections, one request at a time on each (no pipelining: kube-apiserver's Go client
does not pipeline either), and parses answers with `httptools` (llhttp, the parser
Node.js uses). A connection is opened when none is idle, as Go's transport does.
"""

from __future__ import annotations

import asyncio
import collections
import ssl

import httptools

from kubesim.apiserver.core.webhookhttp import request_bytes  # what the API server sends

__all__ = ["KeepAlivePool", "request_bytes"]


class _Connection(asyncio.Protocol):
    """One connection; `send` writes a request and waits for its whole answer."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.body: list[bytes] = []
        self.waiter: asyncio.Future[tuple[int, bytes]] | None = None
        self.closed = False

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(exc)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._fail(exc or ConnectionResetError("connection closed by the server"))

    # httptools callbacks
    def on_body(self, data: bytes) -> None:
        self.body.append(data)

    def on_message_complete(self) -> None:
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result((self.parser.get_status_code(), b"".join(self.body)))
        self.body = []
        if not self.parser.should_keep_alive() and self.transport is not None:
            self.closed = True
            self.transport.close()

    def _fail(self, exc: BaseException) -> None:
        self.closed = True
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)

    async def send(self, raw: bytes) -> tuple[int, bytes]:
        assert self.transport is not None and self.waiter is None
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(raw)
        return await self.waiter


class KeepAlivePool:
    """Kept-alive connections to one TLS server, at most `limit` at once; `post` takes an
    idle one, dials while under the limit, or waits for one to come free."""

    def __init__(self, host: str, port: int, tls: ssl.SSLContext | None, limit: int = 100) -> None:
        self.host, self.port, self.tls = host, port, tls
        self.limit = limit
        self.idle: list[_Connection] = []
        self.waiting: collections.deque[asyncio.Future[_Connection]] = collections.deque()
        self.live = 0  # open or being dialled
        self.opened = 0
        self.closed_idle = 0  # idle connections found closed by the server

    async def _dial(self) -> _Connection:
        loop = asyncio.get_running_loop()
        self.live += 1
        try:
            _, conn = await loop.create_connection(_Connection, self.host, self.port, ssl=self.tls)
        except BaseException:
            self.live -= 1
            raise
        self.opened += 1
        return conn

    async def _acquire(self) -> _Connection:
        while self.idle:
            conn = self.idle.pop()
            if not conn.closed:
                return conn
            self.live -= 1  # the server closed it while idle
            self.closed_idle += 1
        if self.live < self.limit:
            return await self._dial()
        waiter: asyncio.Future[_Connection] = asyncio.get_running_loop().create_future()
        self.waiting.append(waiter)
        return await waiter

    def _release(self, conn: _Connection) -> None:
        if conn.closed:
            self.live -= 1
            if self.waiting and self.live < self.limit:
                waiter = self.waiting.popleft()
                task = asyncio.ensure_future(self._dial())
                task.add_done_callback(lambda t: _settle(waiter, t))
            return
        while self.waiting:
            waiter = self.waiting.popleft()
            if not waiter.done():
                waiter.set_result(conn)
                return
        self.idle.append(conn)

    async def post(self, raw: bytes) -> tuple[int, bytes]:
        """Send prebuilt request bytes (`request_bytes`); the status and body."""
        conn = await self._acquire()
        try:
            return await conn.send(raw)
        except BaseException:
            conn.closed = True
            if conn.transport is not None:
                conn.transport.close()
            raise
        finally:
            self._release(conn)

    async def warm(self, connections: int) -> None:
        """Open `connections` idle connections now (what a busy client already holds)."""
        conns = await asyncio.gather(*(self._dial() for _ in range(connections)))
        self.idle.extend(conns)

    def close(self) -> None:
        """Close the idle connections (call when no request is in flight)."""
        for conn in self.idle:
            if conn.transport is not None:
                conn.transport.close()
        self.idle.clear()


def _settle(waiter: asyncio.Future[_Connection], dialled: asyncio.Future[_Connection]) -> None:
    if waiter.done():
        if not dialled.cancelled() and dialled.exception() is None:
            dialled.result().transport.close()  # type: ignore[union-attr]
        return
    if dialled.cancelled():
        waiter.cancel()
    elif (exc := dialled.exception()) is not None:
        waiter.set_exception(exc)
    else:
        waiter.set_result(dialled.result())
