"""One client against the streaming subresources of a real `jobset sim` process: a SPDY
header block that inflates a thousandfold, a compressed WebSocket message that does the same,
an oversized message, a message packed with half a million empty SPDY frames, and a
port-forward into a pod that never reads. Each must leave the simulator's RSS bounded and its
`/healthz` answering throughout; the bombs end the offending session.

Whoever may port-forward to a pod of their own namespace can send these, so the bounds are
the simulator's (`MAX_HEADER_BLOCK`, `MAX_MESSAGE`, `FRAMES_PER_TURN`, backpressure), not
the client's good manners. Needs root (the port-forward target is a real process).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import ssl
import struct
import tempfile
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import psutil
import pytest
import yaml

from kubesim.apiserver.http import podstreams, spdy
from kubesim.process import SimProcess, start_sim
from tests.integration.sim.test_processes import readable_realpod

pytestmark = [pytest.mark.timeout(600), pytest.mark.kubectl]

RSS_BOUND = 64 * 1024 * 1024  # growth allowed over the RSS before the attack
# Seconds: the longest a /healthz may take while a bomb is handled (generous: the machine
# running the tests may be loaded; an unbounded bomb stalls the server far longer).
HEALTHZ_BOUND = 3.0
INFLATED = 256 * 1024 * 1024  # what each compression bomb would inflate to
# What a client may get accepted into a pod that does not read: socket buffers on the way
# (the kernel's, the TLS layer's, the simulator's few to the pod), nothing that grows.
PUSH_BOUND = 64 * 1024 * 1024
CHUNK = bytes(64 * 1024)

# Listens on 7000, takes one connection and never reads it.
SINK = (
    "import socket, time\n"
    "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
    "s.bind(('127.0.0.1', 7000)); s.listen()\n"
    "conns = []\n"
    "while True: conns.append(s.accept())\n"
)


@dataclass
class Target:
    sim: SimProcess
    url: str
    token: str

    def ssl(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE  # the serving certificate is not the point here
        return ctx

    def path(self, sub: str, pod: str = "sink") -> str:
        return f"/api/v1/namespaces/default/pods/{pod}/{sub}"

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@pytest.fixture(scope="module")
def target() -> Iterator[Target]:
    with readable_realpod() as realpod, contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        sim = start_sim(tmp, "--run-image", f"example.com/web={realpod}")
        stack.callback(sim.stop)
        config = yaml.safe_load(sim.kubeconfig.read_text())
        t = Target(
            sim, config["clusters"][0]["cluster"]["server"], config["users"][0]["user"]["token"]
        )
        sim.kubectl(
            "run",
            "sink",
            "--image=example.com/web:v1",
            "--restart=Never",
            "--command",
            "--",
            "python3",
            "-c",
            SINK,
        )
        sim.kubectl("wait", "--for=condition=Ready", "pod/sink", "--timeout=60s")
        # A simulator's first port-forward grows its RSS once, whatever the protocol, by a
        # good part of RSS_BOUND; the bombs measure what an attack adds, so one ordinary
        # forward runs before any of them.
        asyncio.run(_forward_once(t))
        yield t


async def _forward_once(t: Target) -> None:
    async with (
        aiohttp.ClientSession() as s,
        s.ws_connect(
            f"{t.url}{t.path('portforward')}?ports=7000",
            headers=t.headers,
            protocols=["v4.channel.k8s.io"],
            ssl=t.ssl(),
        ) as ws,
    ):
        await ws.send_bytes(b"\0warm")
        await ws.receive(timeout=5)  # the port's first frame: the dial was made


@dataclass
class Watch:
    """The simulator's RSS and its /healthz latency, sampled while an attack runs."""

    target: Target
    start_rss: int = 0
    peak_rss: int = 0
    slowest: float = 0.0
    task: asyncio.Task[None] | None = None
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    def rss(self) -> int:
        return int(psutil.Process(self.target.sim.proc.pid).memory_info().rss)

    async def run(self) -> None:
        async with aiohttp.ClientSession() as s:
            while not self.stop.is_set():
                t0 = time.monotonic()
                async with s.get(f"{self.target.url}/healthz", ssl=self.target.ssl()) as r:
                    assert r.status == 200
                self.slowest = max(self.slowest, time.monotonic() - t0)
                self.peak_rss = max(self.peak_rss, self.rss())
                await asyncio.sleep(0.05)

    def check(self) -> None:
        growth = self.peak_rss - self.start_rss
        assert growth < RSS_BOUND, f"RSS grew by {growth >> 20} MiB"
        assert self.slowest < HEALTHZ_BOUND, f"/healthz took {self.slowest:.2f} s"


@contextlib.asynccontextmanager
async def watched(target: Target) -> AsyncIterator[Watch]:
    w = Watch(target)
    w.start_rss = w.peak_rss = w.rss()
    w.task = asyncio.create_task(w.run())
    try:
        yield w
    finally:
        await asyncio.sleep(0.5)  # what the attack left behind is measured too
        w.stop.set()
        await w.task
    w.check()


async def upgrade(
    target: Target, path: str, headers: dict[str, str], method: str = "GET"
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A raw connection upgraded by `headers`; the 101's head is read."""
    host, port = target.url.removeprefix("https://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port), ssl=target.ssl())
    lines = [
        f"{method} {path} HTTP/1.1",
        f"Host: {host}",
        *(f"{k}: {v}" for k, v in {**target.headers, **headers}.items()),
    ]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
    assert head.startswith(b"HTTP/1.1 101"), head
    return reader, writer


def ws_headers(protocol: str, deflate: bool = False) -> dict[str, str]:
    headers = {
        "Connection": "Upgrade",
        "Upgrade": "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode(),
        "Sec-WebSocket-Protocol": protocol,
    }
    if deflate:
        headers["Sec-WebSocket-Extensions"] = "permessage-deflate"
    return headers


def ws_frame(payload: bytes, rsv1: bool = False) -> bytes:
    """A masked, final binary frame (the mask is zero: the payload goes as it is)."""
    first = 0x80 | (0x40 if rsv1 else 0) | 0x2
    n = len(payload)
    if n < 126:
        head = struct.pack(">BB", first, 0x80 | n)
    elif n < 1 << 16:
        head = struct.pack(">BBH", first, 0x80 | 126, n)
    else:
        head = struct.pack(">BBQ", first, 0x80 | 127, n)
    return head + b"\0\0\0\0" + payload


def deflated_zeros(
    n: int, raw: bool = False, zdict: bytes | None = None, prefix: bytes = b""
) -> bytes:
    c = zlib.compressobj(
        9, zlib.DEFLATED, -15 if raw else 15, **({"zdict": zdict} if zdict else {})
    )
    out = [c.compress(prefix)]
    chunk = bytes(1 << 20)
    for _ in range(n >> 20):
        out.append(c.compress(chunk))
    out.append(c.flush(zlib.Z_SYNC_FLUSH))
    data = b"".join(out)
    return data[:-4] if raw else data  # permessage-deflate drops the flush's 00 00 ff ff


async def closed_by_server(reader: asyncio.StreamReader, within: float = 60) -> bytes:
    """What the server sent until it closed the connection."""
    got = b""
    async with asyncio.timeout(within):
        with contextlib.suppress(ConnectionError):
            while chunk := await reader.read(65536):
                got += chunk
    return got


async def test_a_spdy_header_block_bomb_ends_the_session_and_nothing_more(target: Target) -> None:
    block = deflated_zeros(
        INFLATED,
        zdict=spdy.DICTIONARY,
        prefix=struct.pack(">II", 1, 1) + b"x" + struct.pack(">I", INFLATED),
    )
    payload = struct.pack(">IIBB", 1, 0, 0, 0) + block
    frame = struct.pack(">HHI", 0x8000 | 3, 1, len(payload)) + payload
    async with watched(target):
        reader, writer = await upgrade(
            target,
            target.path("portforward"),
            {
                "Connection": "Upgrade",
                "Upgrade": "SPDY/3.1",
                "X-Stream-Protocol-Version": "portforward.k8s.io",
            },
            method="POST",
        )
        writer.write(frame)
        await closed_by_server(reader)
        writer.close()


async def test_a_compressed_websocket_message_is_refused_uninflated(target: Target) -> None:
    message = deflated_zeros(INFLATED, raw=True)
    async with watched(target):
        reader, writer = await upgrade(
            target,
            target.path("portforward"),
            ws_headers(podstreams.PORTFORWARD_PROTOCOL, deflate=True),
        )
        writer.write(ws_frame(message, rsv1=True))
        got = await closed_by_server(reader)
        writer.close()
    assert got[:1] == b"\x88"  # a close frame
    assert struct.unpack(">H", got[2:4])[0] == 1002  # protocol error: nothing was negotiated


async def test_a_websocket_message_over_the_limit_is_refused(target: Target) -> None:
    url = f"{target.url}{target.path('exec')}?command=cat&stdin=true&stdout=true"
    async with (
        watched(target),
        aiohttp.ClientSession() as s,
        s.ws_connect(
            url,
            headers=target.headers,
            protocols=["v4.channel.k8s.io"],
            ssl=target.ssl(),
            max_msg_size=0,
        ) as ws,
    ):
        assert (await ws.receive_bytes()) == b"\x01"  # the connection is up
        await ws.send_bytes(b"\0" + bytes(podstreams.MAX_MESSAGE))
        # The server ends the session (its close frame may be lost to the reset of a
        # connection it stopped reading); `cat` never echoes a byte of it.
        async with asyncio.timeout(60):
            while (msg := await ws.receive()).type == aiohttp.WSMsgType.BINARY:
                assert msg.data[1:] == b"", "the oversized message reached the command"
        assert ws.close_code in (
            aiohttp.WSCloseCode.MESSAGE_TOO_BIG,
            aiohttp.WSCloseCode.ABNORMAL_CLOSURE,
        )


async def test_half_a_million_spdy_frames_in_one_message_leave_the_loop_free(
    target: Target,
) -> None:
    frame = struct.pack(">II", 1, 0)  # an empty DATA frame
    most = frame * ((podstreams.MAX_MESSAGE - 1) // len(frame))
    url = f"{target.url}{target.path('portforward')}"
    async with (
        watched(target),
        aiohttp.ClientSession() as s,
        s.ws_connect(
            url,
            headers=target.headers,
            protocols=[podstreams.PORTFORWARD_PROTOCOL],
            ssl=target.ssl(),
            max_msg_size=0,
        ) as ws,
    ):
        for _ in range(2):
            await ws.send_bytes(most)
        # A PING answered means every frame before it was handled.
        await ws.send_bytes(spdy.Writer.ping(7))
        got = await asyncio.wait_for(ws.receive_bytes(), 120)
        assert list(spdy.Parser().feed(got)) == [spdy.Ping(7)]
        # Four times as many frames in one message: the message itself is refused.
        await ws.send_bytes(most * 4)
        async with asyncio.timeout(120):
            while (await ws.receive()).type == aiohttp.WSMsgType.BINARY:
                pass
        assert ws.close_code in (
            aiohttp.WSCloseCode.MESSAGE_TOO_BIG,
            aiohttp.WSCloseCode.ABNORMAL_CLOSURE,
        )


async def _push(send: Callable[[bytes], Awaitable[None]], chunk: bytes, seconds: float) -> int:
    """Bytes sent before `seconds` ran out (the server stops reading when it should)."""
    sent = 0
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            while sent < 512 * 1024 * 1024:
                await send(chunk)
                sent += len(chunk)
    return sent


async def test_port_forward_input_waits_for_a_pod_that_does_not_read(target: Target) -> None:
    """kubectl's SPDY tunnel: each DATA frame waits until the pod's side has taken the last."""
    out = spdy.Writer()
    async with (
        watched(target),
        aiohttp.ClientSession() as s,
        s.ws_connect(
            f"{target.url}{target.path('portforward')}",
            headers=target.headers,
            protocols=[podstreams.PORTFORWARD_PROTOCOL],
            ssl=target.ssl(),
        ) as ws,
    ):
        for stream_id, kind in ((1, "error"), (3, "data")):
            headers = {"streamtype": kind, "port": "7000", "requestid": "0"}
            await ws.send_bytes(out.syn_stream(stream_id, headers))
        sent = await _push(lambda data: ws.send_bytes(spdy.data_frame(3, data)), CHUNK, 10)
    assert sent < PUSH_BOUND


async def test_channel_port_forward_input_waits_for_a_pod_that_does_not_read(
    target: Target,
) -> None:
    """The kubelet's channel protocol (the Python clients'): the same."""
    async with (
        watched(target),
        aiohttp.ClientSession() as s,
        s.ws_connect(
            f"{target.url}{target.path('portforward')}?ports=7000",
            headers=target.headers,
            protocols=["v4.channel.k8s.io"],
            ssl=target.ssl(),
        ) as ws,
    ):
        sent = await _push(lambda data: ws.send_bytes(b"\0" + data), CHUNK, 10)
    assert sent < PUSH_BOUND
