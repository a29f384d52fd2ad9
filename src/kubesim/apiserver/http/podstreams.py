"""`pods/exec`, `pods/attach` and `pods/portforward`: the streaming subresources.

kubectl 1.32 and the Python clients open them as WebSockets (a GET with an upgrade):

- exec and attach speak `v5.channel.k8s.io` (kubectl; kube-apiserver's stream translator
  serves it whenever a client offers it), or one of the kubelet's older channel protocols
  (`v4.channel.k8s.io`, what the Python clients get, `v4.base64.channel.k8s.io`,
  `channel.k8s.io`, `base64.channel.k8s.io`; `wschannels.py` frames them). Channels: 0 stdin,
  1 stdout, 2 stderr, 3 the error channel (the `Status` at the end), 4 terminal resizes
  (`{"Width":..,"Height":..}`); under v5 a message `[255, channel]` closes that channel (stdin
  at its end of file). The server sends an empty message on the lowest output channel once
  the connection is up, and at the end writes the Status, closes the WebSocket and lets the
  client read to the end.
- port-forward speaks `SPDY/3.1+portforward.k8s.io` (kubectl): the WebSocket carries a SPDY
  session (`spdy.py`) in which the client opens, per forwarded connection, an error stream
  and a data stream tagged with the port and a request id, as the kubelet's port-forward
  server expects; or the kubelet's channel protocol of the Python clients
  (`wsportforward.py`).

Every WebSocket refuses messages over `MAX_MESSAGE` and compression (the kubelet offers no
extension); its messages are handled one at a time, so a client that sends faster than a
command or a pod takes its input waits on its own socket.

The container side is a `PodStreams` backend (the process runtime of `--run-image`); a pod it
does not run answers as a kubelet whose runtime does not know the container. The SPDY form of
the same requests (older clients, kubectl's fallback) is `spdystreams.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

import orjson
import structlog
from aiohttp import WSMsgType, web

from kubesim.apiserver.http import spdy, wschannels, wsportforward
from kubesim.machinery.errors import ApiError, bad_request

__all__ = [
    "EXEC_PROTOCOL",
    "MAX_MESSAGE",
    "PORTFORWARD_PROTOCOL",
    "ExecProcess",
    "PodStreams",
    "StreamError",
    "serve",
]

log = structlog.get_logger("sim.podstreams")

EXEC_PROTOCOL: Final = wschannels.V5
PORTFORWARD_PROTOCOL: Final = wschannels.PORTFORWARD_TUNNEL
# The largest WebSocket message a client may send: above the 1 MiB (plus its channel byte)
# the Python clients' port-forward sends at once, far below what would strain the server.
MAX_MESSAGE: Final = 4 * 1024 * 1024
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
READ_SIZE: Final = 32 * 1024
# What a SPDY port-forward holds for a connection still being dialled, and the most streams
# one session may have open (a further SYN_STREAM is refused with REFUSED_STREAM).
MAX_PENDING: Final = 1024 * 1024
MAX_STREAMS: Final = 1024
# A piece of the client's bytes can hold a great many frames: the loop gets a turn between
# every so many of them.
FRAMES_PER_TURN: Final = 64
SUBRESOURCES: Final = frozenset({"exec", "attach", "portforward"})


class StreamError(Exception):
    """The kubelet's refusal to stream a container (not running, not known to the runtime)."""


class ExecProcess(Protocol):
    """A command running in a container, as the backend gives it to an exec session."""

    async def read_stdout(self) -> bytes: ...  # b"" at its end

    async def read_stderr(self) -> bytes: ...  # b"" at its end (at once with a TTY)

    async def write_stdin(self, data: bytes) -> None: ...

    def close_stdin(self) -> None: ...

    def resize(self, width: int, height: int) -> None: ...

    async def wait(self) -> int: ...

    def kill(self) -> None: ...


class PodStreams(Protocol):
    def has_container(self, pod: Mapping[str, Any], container: str) -> bool:
        """Whether the runtime runs `container` of `pod` (it knows running containers only)."""

    async def exec(
        self, pod: Mapping[str, Any], container: str, command: list[str], stdin: bool, tty: bool
    ) -> ExecProcess: ...

    async def attach(self, pod: Mapping[str, Any], container: str) -> ExecProcess: ...

    async def dial(
        self, pod: Mapping[str, Any], port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]: ...


@dataclass(frozen=True)
class StreamOptions:
    container: str
    command: list[str]
    stdin: bool
    stdout: bool
    stderr: bool
    tty: bool


def _flag(q: Mapping[str, str], name: str) -> bool:
    return q.get(name, "").lower() in ("1", "t", "true")


def stream_options(request: web.Request, pod: Mapping[str, Any], sub: str) -> StreamOptions:
    """The query of an exec or attach, checked as kube-apiserver checks it before proxying."""
    q = request.query
    name = pod["metadata"]["name"]
    spec = pod.get("spec") or {}
    containers = [
        c["name"]
        for key in ("containers", "initContainers", "ephemeralContainers")
        for c in spec.get(key) or []
    ]
    container = q.get("container", "")
    if not container:
        main = [c["name"] for c in spec.get("containers") or []]
        if len(main) != 1:
            raise bad_request(
                f"a container name must be specified for pod {name}, choose one of: {main}"
            )
        container = main[0]
    elif container not in containers:
        raise bad_request(f"container {container} is not valid for pod {name}")
    opts = StreamOptions(
        container,
        q.getall("command", []),
        _flag(q, "stdin"),
        _flag(q, "stdout"),
        _flag(q, "stderr"),
        _flag(q, "tty"),
    )
    if not (opts.stdin or opts.stdout or opts.stderr):
        raise bad_request("you must specify at least 1 of stdin, stdout, stderr")
    if sub == "exec" and not opts.command:
        raise bad_request("you must specify at least one command for the container")
    if not spec.get("nodeName"):
        raise bad_request(f"pod {name} does not have a host assigned")
    return opts


def offered_protocols(request: web.Request) -> list[str]:
    return [
        p.strip()
        for header in request.headers.getall("Sec-WebSocket-Protocol", [])
        for p in header.split(",")
        if p.strip()
    ]


def _upgrade(
    request: web.Request, protocol: str | None, supported: tuple[str, ...]
) -> web.WebSocketResponse:
    ws = web.WebSocketResponse(
        protocols=(protocol,) if protocol else (),
        autoping=True,
        max_msg_size=MAX_MESSAGE,
        compress=False,
    )
    ready = ws.can_prepare(request)
    if protocol is None or not ready.ok or (ready.protocol or "") != protocol:
        # The answer to a request it cannot upgrade; kubectl then tries SPDY.
        offered = request.headers.get("Sec-WebSocket-Protocol", "")
        raise ApiError(
            400,
            "BadRequest",
            f"unable to upgrade: requested protocol(s) are not supported: [{offered}]; "
            f"supports [{' '.join(p for p in supported if p)}]",
        )
    return ws


async def serve(
    request: web.Request, pod: Mapping[str, Any], sub: str, backend: PodStreams | None
) -> web.StreamResponse:
    """Answer one streaming request for `pod` (RBAC already checked by the caller)."""
    offered = offered_protocols(request)
    if sub == "portforward":
        return await _serve_port_forward(request, pod, offered, backend)
    opts = stream_options(request, pod, sub)
    # kube-apiserver serves v5 itself whenever it is offered; the kubelet picks among the rest.
    protocol = (
        EXEC_PROTOCOL
        if EXEC_PROTOCOL in offered
        else wschannels.choose(offered, wschannels.EXEC_PROTOCOLS)
    )
    ws = _upgrade(request, protocol, wschannels.EXEC_PROTOCOLS)
    if protocol != EXEC_PROTOCOL and (
        backend is None or not backend.has_container(pod, opts.container)
    ):
        # The kubelet's own refusal, before the upgrade, which kube-apiserver passes on.
        return web.Response(status=500, text=f'container not found ("{opts.container}")')
    await ws.prepare(request)
    t = _WebSocketExec(ws, opts, wschannels.codec(protocol or ""))
    # As the kubelet does: an empty message on the lowest output channel says it is up.
    await t.send(STDOUT if opts.stdout else STDERR if opts.stderr else ERROR, b"")
    await run_exec(t, opts, pod, sub, backend)
    return ws


async def _serve_port_forward(
    request: web.Request, pod: Mapping[str, Any], offered: list[str], backend: PodStreams | None
) -> web.StreamResponse:
    supported = (PORTFORWARD_PROTOCOL, *wschannels.PORTFORWARD_PROTOCOLS)
    if PORTFORWARD_PROTOCOL in offered:
        ws = _upgrade(request, PORTFORWARD_PROTOCOL, supported)
        await ws.prepare(request)
        await _port_forward(ws, pod, backend)
        return ws
    protocol = wschannels.choose(offered, wschannels.PORTFORWARD_PROTOCOLS)
    ws = _upgrade(request, protocol, supported)
    ports = wsportforward.ports_of(request.query)
    if not (pod.get("spec") or {}).get("nodeName"):
        raise bad_request(f"pod {pod['metadata']['name']} does not have a host assigned")
    await ws.prepare(request)
    uid = str(pod["metadata"].get("uid") or "")
    await wsportforward.forward(
        ws, wschannels.codec(protocol or ""), ports, _dialer(pod, backend), uid
    )
    return ws


def _dialer(pod: Mapping[str, Any], backend: PodStreams | None) -> wsportforward.Dial:
    async def dial(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        try:
            if backend is None:
                raise StreamError(f"pod {pod['metadata']['name']} has no running sandbox")
            return await backend.dial(pod, port)
        except StreamError as exc:
            raise ConnectionRefusedError(str(exc)) from None

    return dial


def _internal_error(message: str) -> dict[str, Any]:
    return {
        "metadata": {},
        "status": "Failure",
        "message": f"Internal error occurred: {message}",
        "reason": "InternalError",
        "details": {"causes": [{"message": message}]},
        "code": 500,
    }


def exit_status(code: int) -> dict[str, Any]:
    """The error channel's Status for a command that ended with `code`."""
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {
        "metadata": {},
        "status": "Failure",
        "message": "command terminated with non-zero exit code: "
        f"command terminated with exit code {code}",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
    }


def parse_resize(data: bytes) -> list[tuple[int, int]]:
    """Terminal sizes in a resize message (one JSON object per line)."""
    out = []
    for line in data.splitlines():
        if not line.strip():
            continue
        try:
            size = json.loads(line)
            out.append((int(size.get("Width") or 0), int(size.get("Height") or 0)))
        except (ValueError, TypeError, AttributeError):
            continue
    return out


class ExecTransport(Protocol):
    """How an exec or attach session talks to its client (WebSocket, or SPDY streams)."""

    async def send(self, channel: int, data: bytes) -> None: ...

    async def read_client(self, proc: ExecProcess) -> None:
        """Give the client's stdin, its end and resizes to `proc` until the client is gone."""

    async def finish(self, status: dict[str, Any]) -> None:
        """Write `status` on the error channel and end the session."""


async def run_exec(
    t: ExecTransport,
    opts: StreamOptions,
    pod: Mapping[str, Any],
    sub: str,
    backend: PodStreams | None,
) -> None:
    """Start the command (or attach), stream it to the client, and report how it ended."""
    try:
        if backend is None:
            raise StreamError(f'container not found ("{opts.container}")')
        if sub == "attach":
            proc = await backend.attach(pod, opts.container)
        else:
            proc = await backend.exec(pod, opts.container, opts.command, opts.stdin, opts.tty)
    except StreamError as exc:
        await t.finish(_internal_error(f"unable to upgrade connection: {exc}"))
        return
    reader = asyncio.create_task(t.read_client(proc))
    reader.add_done_callback(lambda _: proc.kill())  # a client that goes away ends the command
    try:
        await asyncio.gather(
            _pump(t, proc.read_stdout, STDOUT if opts.stdout else None),
            _pump(t, proc.read_stderr, STDERR if opts.stderr else None),
        )
        code = await proc.wait()
    finally:
        proc.kill()
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader
    await t.finish(exit_status(code))


async def _pump(
    t: ExecTransport, read: Callable[[], Awaitable[bytes]], channel: int | None
) -> None:
    while data := await read():
        if channel is not None:
            await t.send(channel, data)


@dataclass
class _WebSocketExec:
    ws: web.WebSocketResponse
    opts: StreamOptions
    codec: wschannels.Codec
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def send(self, channel: int, data: bytes) -> None:
        message = self.codec.encode(channel, data)
        async with self.lock:  # each send waits for the drain: the command's output waits
            with contextlib.suppress(ConnectionError, RuntimeError):
                if isinstance(message, str):
                    await self.ws.send_str(message)
                else:
                    await self.ws.send_bytes(message)

    async def read_client(self, proc: ExecProcess) -> None:
        async for msg in self.ws:
            if msg.type == WSMsgType.BINARY:
                decoded = self.codec.decode(bytes(msg.data))
            elif msg.type == WSMsgType.TEXT:  # what the Python clients send a str as
                decoded = self.codec.decode(str(msg.data).encode())
            else:
                continue
            if decoded is None:
                continue
            channel, data = decoded
            if channel == STDIN and self.opts.stdin and data:
                await proc.write_stdin(data)
            elif channel == CLOSE and self.codec.stream_close and data[:1] == bytes([STDIN]):
                proc.close_stdin()
            elif channel == RESIZE and self.opts.tty:
                for width, height in parse_resize(data):
                    proc.resize(width, height)

    async def finish(self, status: dict[str, Any]) -> None:
        if self.codec.json_status:
            await self.send(ERROR, orjson.dumps(status))
        elif status.get("status") != "Success":
            await self.send(ERROR, str(status.get("message", "")).encode())
        with contextlib.suppress(ConnectionError, RuntimeError):
            await self.ws.close()


# ------------------------------------------------------------------ port-forward


async def frames(parser: spdy.Parser, data: bytes) -> AsyncIterator[spdy.Frame]:
    """The frames of `data` as they are parsed, letting the event loop run between every
    `FRAMES_PER_TURN` of them."""
    for n, frame in enumerate(parser.feed(data), 1):
        yield frame
        if n % FRAMES_PER_TURN == 0:
            await asyncio.sleep(0)


async def _port_forward(
    ws: web.WebSocketResponse, pod: Mapping[str, Any], backend: PodStreams | None
) -> None:
    lock = asyncio.Lock()

    async def send(data: bytes) -> None:
        async with lock:
            with contextlib.suppress(ConnectionError, RuntimeError):
                await ws.send_bytes(data)

    async def dial(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if backend is None:
            raise StreamError(f"pod {pod['metadata']['name']} has no running sandbox")
        return await backend.dial(pod, port)

    uid = str(pod["metadata"].get("uid") or "")
    session = PortForwardSession(send, dial, uid)
    try:
        async for msg in ws:
            if msg.type == WSMsgType.BINARY:
                await session.feed(msg.data)
    except spdy.FrameError as exc:
        log.info("port-forward session ended", error=str(exc))
    finally:
        await session.close()


@dataclass
class _Pair:
    """The error and data streams of one forwarded connection."""

    port: int
    error_id: int = 0
    data_id: int = 0
    writer: asyncio.StreamWriter | None = None
    pending: list[bytes] = field(default_factory=list)
    dialled: asyncio.Event = field(default_factory=asyncio.Event)  # or its dial failed
    client_done: bool = False
    task: asyncio.Task[None] | None = None


@dataclass
class PortForwardSession:
    """The server side of the SPDY port-forward protocol over any byte transport."""

    send: Callable[[bytes], Awaitable[None]]
    dial: Callable[[int], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]
    pod_uid: str = ""
    parser: spdy.Parser = field(default_factory=spdy.Parser)
    out: spdy.Writer = field(default_factory=spdy.Writer)
    pairs: dict[str, _Pair] = field(default_factory=dict)
    by_stream: dict[int, _Pair] = field(default_factory=dict)

    async def feed(self, data: bytes) -> None:
        async for frame in frames(self.parser, data):
            await self._frame(frame)

    async def _frame(self, frame: spdy.Frame) -> None:
        if isinstance(frame, spdy.SynStream):
            await self._open(frame)
        elif isinstance(frame, spdy.Data):
            pair = self.by_stream.get(frame.stream_id)
            if pair is None or frame.stream_id != pair.data_id:
                return  # the client's error stream carries nothing for the server
            if frame.data:
                await self._to_pod(pair, frame.data)
            if frame.fin:
                pair.client_done = True
                if pair.writer is not None and pair.writer.can_write_eof():
                    pair.writer.write_eof()
        elif isinstance(frame, spdy.RstStream):
            pair = self.by_stream.get(frame.stream_id)
            if pair is not None and pair.task is not None:
                pair.task.cancel()
        elif isinstance(frame, spdy.Ping):
            await self.send(self.out.ping(frame.ping_id))

    async def _to_pod(self, pair: _Pair, data: bytes) -> None:
        """Backpressure: past `MAX_PENDING` bytes before the dial, and after every write to
        the pod, the session reads no further frames until the pod's side has taken them."""
        if pair.writer is None and sum(map(len, pair.pending)) >= MAX_PENDING:
            await pair.dialled.wait()
        if pair.writer is None:
            if not pair.dialled.is_set():
                pair.pending.append(data)
            return
        if not pair.writer.is_closing():
            pair.writer.write(data)
            with contextlib.suppress(ConnectionError):
                await pair.writer.drain()

    async def _open(self, frame: spdy.SynStream) -> None:
        if len(self.by_stream) + len(self.pairs) >= MAX_STREAMS:
            await self.send(self.out.rst_stream(frame.stream_id, spdy.REFUSED_STREAM))
            return
        kind = frame.headers.get("streamtype", "")
        try:
            port = int(frame.headers.get("port", ""))
        except ValueError:
            port = 0
        if kind not in ("error", "data") or not 0 < port < 65536:
            await self.send(self.out.rst_stream(frame.stream_id, spdy.PROTOCOL_ERROR))
            return
        await self.send(self.out.syn_reply(frame.stream_id))
        request_id = frame.headers.get("requestid") or str(
            frame.stream_id if kind == "error" else frame.stream_id - 2
        )
        pair = self.pairs.setdefault(request_id, _Pair(port))
        if kind == "error":
            pair.error_id = frame.stream_id
        else:
            pair.data_id = frame.stream_id
        self.by_stream[frame.stream_id] = pair
        if pair.error_id and pair.data_id and pair.task is None:
            del self.pairs[request_id]
            pair.task = asyncio.create_task(self._forward(pair))

    async def _forward(self, pair: _Pair) -> None:
        try:
            try:
                reader, writer = await self.dial(pair.port)
            except (StreamError, OSError) as exc:
                pair.dialled.set()
                message = f"error forwarding port {pair.port} to pod {self.pod_uid}, uid : {exc}"
                await self.send(spdy.data_frame(pair.error_id, message.encode()))
                return
            pair.writer = writer
            pair.dialled.set()
            for data in pair.pending:
                writer.write(data)
            pair.pending.clear()
            if pair.client_done and writer.can_write_eof():
                writer.write_eof()
            try:
                while data := await reader.read(READ_SIZE):
                    await self.send(spdy.data_frame(pair.data_id, data))
            except OSError:
                pass
            finally:
                writer.close()
        finally:
            await self.send(spdy.data_frame(pair.data_id, b"", fin=True))
            await self.send(spdy.data_frame(pair.error_id, b"", fin=True))
            self.by_stream.pop(pair.data_id, None)
            self.by_stream.pop(pair.error_id, None)

    async def close(self) -> None:
        tasks = [p.task for p in self.by_stream.values() if p.task is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
