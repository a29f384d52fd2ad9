"""The SPDY/3.1 form of `pods/exec`, `pods/attach` and `pods/portforward`: a POST upgraded with
`Upgrade: SPDY/3.1`, what clients older than kubectl 1.31 use and what kubectl 1.32 falls back
to when a WebSocket upgrade is refused (or with `KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false`,
`KUBECTL_PORT_FORWARD_WEBSOCKETS=false`).

The protocol is negotiated with `X-Stream-Protocol-Version` as the kubelet does: exec and
attach speak `v4.channel.k8s.io` (one SPDY stream per channel, opened by the client: error,
stdin, stdout, stderr, resize; the end of stdin is the stdin stream's FIN; the Status is
written on the error stream), port-forward `portforward.k8s.io` (`PortForwardSession`).

aiohttp has no API for an upgrade to another protocol than WebSocket; the connection's bytes
are taken over the way its WebSocket response does, by installing a payload parser.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import orjson
from aiohttp import web

from kubesim.apiserver.http import podstreams, spdy
from kubesim.apiserver.http.podstreams import (
    ERROR,
    STDERR,
    STDOUT,
    ExecProcess,
    PodStreams,
    PortForwardSession,
    StreamOptions,
    parse_resize,
    run_exec,
)
from kubesim.machinery.errors import ApiError

__all__ = ["is_spdy", "serve"]

EXEC_PROTOCOL: Final = "v4.channel.k8s.io"
# The most of a client's bytes an upgraded connection holds before it stops reading.
RAW_BUFFER: Final = 1024 * 1024
PORTFORWARD_PROTOCOL: Final = "portforward.k8s.io"
_CHANNELS: Final = {STDOUT: "stdout", STDERR: "stderr", ERROR: "error"}


def is_spdy(request: web.Request) -> bool:
    return request.headers.get("Upgrade", "").lower().startswith("spdy/")


class _Raw:
    """The connection's bytes once upgraded: aiohttp feeds them here. Past `RAW_BUFFER`
    bytes not yet handled, the connection stops reading from the client until they are."""

    def __init__(self, transport: asyncio.BaseTransport | None) -> None:
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.size = 0
        self.transport = transport
        self.paused = False

    def feed_data(self, data: bytes | bytearray | memoryview) -> tuple[bool, bytes]:
        self.queue.put_nowait(bytes(data))
        self.size += len(data)
        if (
            self.size > RAW_BUFFER
            and not self.paused
            and isinstance(self.transport, asyncio.ReadTransport)
        ):
            self.transport.pause_reading()
            self.paused = True
        return False, b""

    def feed_eof(self) -> None:
        self.queue.put_nowait(None)

    async def get(self) -> bytes | None:
        data = await self.queue.get()
        self.size -= len(data or b"")
        if (
            self.paused
            and self.size <= RAW_BUFFER // 2
            and isinstance(self.transport, asyncio.ReadTransport)
        ):
            self.paused = False
            if not self.transport.is_closing():
                self.transport.resume_reading()
        return data


@dataclass
class _Connection:
    response: web.StreamResponse  # the 101, what the handler returns
    raw: _Raw
    writer: Any  # aiohttp's payload writer: its transport and drain()

    async def write(self, data: bytes) -> None:
        transport = self.writer.transport
        if transport is None or transport.is_closing():
            return
        transport.write(data)
        with contextlib.suppress(ConnectionError):
            await self.writer.drain()

    def close(self) -> None:
        transport = self.writer.transport
        if transport is not None:
            transport.close()  # after what is buffered has been sent


async def _upgrade(request: web.Request, offered: list[str], protocol: str) -> _Connection:
    if protocol not in offered:
        raise ApiError(
            403,
            "Forbidden",
            f"unable to upgrade: protocol not supported: {offered}; supports [{protocol}]",
        )
    resp = web.StreamResponse(
        status=101,
        headers={
            "Connection": "Upgrade",
            "Upgrade": "SPDY/3.1",
            "X-Stream-Protocol-Version": protocol,
        },
    )
    resp.force_close()
    writer = await resp.prepare(request)
    raw = _Raw(request.transport)
    request.protocol.set_parser(raw)  # type: ignore[arg-type]  # duck-typed, as aiohttp's own
    request.protocol.keep_alive(False)
    return _Connection(resp, raw, writer)


async def serve(
    request: web.Request, pod: Mapping[str, Any], sub: str, backend: PodStreams | None
) -> web.StreamResponse | None:
    """Answer a SPDY upgrade; None when the request is not one."""
    if not is_spdy(request):
        return None
    offered = [
        v.strip()
        for h in request.headers.getall("X-Stream-Protocol-Version", [])
        for v in h.split(",")
    ]
    if sub == "portforward":
        conn = await _upgrade(request, offered, PORTFORWARD_PROTOCOL)
        await _port_forward(conn, pod, backend)
        return conn.response
    opts = podstreams.stream_options(request, pod, sub)
    if backend is None or not backend.has_container(pod, opts.container):
        # The kubelet's own answer, which kube-apiserver passes on for a SPDY upgrade.
        return web.Response(status=500, text=f'container not found ("{opts.container}")')
    conn = await _upgrade(request, offered, EXEC_PROTOCOL)
    session = _SpdyExec(conn, opts)
    loop_task = asyncio.create_task(session.loop())
    try:
        if await session.ready():
            await run_exec(session, opts, pod, sub, backend)
    finally:
        loop_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await loop_task
        conn.close()
    return conn.response


async def _port_forward(
    conn: _Connection, pod: Mapping[str, Any], backend: PodStreams | None
) -> None:
    async def dial(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if backend is None:
            raise podstreams.StreamError(f"pod {pod['metadata']['name']} has no running sandbox")
        return await backend.dial(pod, port)

    session = PortForwardSession(conn.write, dial, str(pod["metadata"].get("uid") or ""))
    try:
        while (data := await conn.raw.get()) is not None:
            await session.feed(data)
    except spdy.FrameError:
        pass
    finally:
        await session.close()
        conn.close()


@dataclass
class _SpdyExec:
    """An exec session on SPDY streams; its frame loop runs from the upgrade on, since the
    client opens the streams before anything can start."""

    conn: _Connection
    opts: StreamOptions
    parser: spdy.Parser = field(default_factory=spdy.Parser)
    out: spdy.Writer = field(default_factory=spdy.Writer)
    streams: dict[str, int] = field(default_factory=dict)  # stream type -> id
    all_open: asyncio.Event = field(default_factory=asyncio.Event)
    gone: asyncio.Event = field(default_factory=asyncio.Event)
    proc: asyncio.Future[ExecProcess | None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )

    def expected(self) -> set[str]:
        o = self.opts
        want = {"error"}
        want |= {"stdin"} if o.stdin else set()
        want |= {"stdout"} if o.stdout else set()
        want |= {"stderr"} if o.stderr and not o.tty else set()
        want |= {"resize"} if o.tty else set()
        return want

    async def ready(self) -> bool:
        """Wait for the client's streams; False when it went away first."""
        waits = [asyncio.ensure_future(e.wait()) for e in (self.all_open, self.gone)]
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        for w in waits:
            w.cancel()
        return self.all_open.is_set()

    async def loop(self) -> None:
        try:
            while (data := await self.conn.raw.get()) is not None:
                async for frame in podstreams.frames(self.parser, data):
                    await self._frame(frame)
        except spdy.FrameError:
            pass
        finally:
            self.gone.set()

    async def _frame(self, frame: spdy.Frame) -> None:
        if isinstance(frame, spdy.SynStream):
            kind = frame.headers.get("streamtype", "")
            await self.conn.write(self.out.syn_reply(frame.stream_id))
            self.streams.setdefault(kind, frame.stream_id)
            if self.expected() <= set(self.streams):
                self.all_open.set()
        elif isinstance(frame, spdy.Data):
            kind = next((k for k, i in self.streams.items() if i == frame.stream_id), "")
            if kind == "stdin":
                await self._stdin(frame.data, frame.fin)
            elif kind == "resize" and frame.data:
                proc = await self.proc
                for width, height in parse_resize(frame.data):
                    if proc is not None:
                        proc.resize(width, height)
        elif isinstance(frame, spdy.Ping):
            await self.conn.write(self.out.ping(frame.ping_id))
        elif isinstance(frame, spdy.GoAway):
            self.gone.set()

    async def _stdin(self, data: bytes, fin: bool) -> None:
        proc = await self.proc
        if proc is None:
            return
        if data:
            await proc.write_stdin(data)
        if fin:
            proc.close_stdin()

    async def send(self, channel: int, data: bytes) -> None:
        stream = self.streams.get(_CHANNELS.get(channel, ""))
        if stream is not None and data:
            await self.conn.write(spdy.data_frame(stream, data))

    async def read_client(self, proc: ExecProcess) -> None:
        if not self.proc.done():
            self.proc.set_result(proc)
        await self.gone.wait()

    async def finish(self, status: dict[str, Any]) -> None:
        if not self.proc.done():
            self.proc.set_result(None)
        for kind in ("stdout", "stderr"):
            if kind in self.streams:
                await self.conn.write(spdy.data_frame(self.streams[kind], b"", fin=True))
        if "error" in self.streams:
            error = self.streams["error"]
            await self.conn.write(spdy.data_frame(error, orjson.dumps(status), fin=True))
