"""`pods/portforward` over WebSocket channels, as the kubelet serves it to the Python clients
(`v4.channel.k8s.io`, `v4.base64.channel.k8s.io`, or no protocol named).

The ports come from the query (`ports=1234,1235`). Port i gets two channels, 2i for its data
(both ways) and 2i+1 for its errors (to the client); the first message on each is the port,
two bytes little-endian. Each port is one connection into the pod, dialled when the
WebSocket opens: a port nothing listens on gets its error message on its error channel while
the others carry on. The WebSocket ends when every port's connection has ended, or when the
client closes it.

Backpressure both ways: what the client sends a port waits until the pod's side has taken
the previous message (and until the port is dialled); what the pod sends waits on the
WebSocket's own drain.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final

import structlog
from aiohttp import WSMsgType, web
from multidict import MultiMapping

from kubesim.apiserver.http import wschannels
from kubesim.machinery.errors import bad_request

__all__ = ["Dial", "forward", "ports_of"]

log = structlog.get_logger("sim.podstreams")

READ_SIZE: Final = 32 * 1024
Dial = Callable[[int], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]


def ports_of(query: MultiMapping[str]) -> list[int]:
    """The `ports` of a WebSocket port-forward (repeated, or comma-separated), checked as the
    kubelet checks them."""
    values = query.getall("ports", [])
    if not values:
        raise bad_request('query parameter "port" is required')
    ports = []
    for value in values:
        if not value:
            raise bad_request('query parameter "port" cannot be empty')
        for part in value.split(","):
            if not part.isascii() or not part.isdigit() or int(part) > 65535:
                raise bad_request(
                    f'unable to parse "{value}" as a port: strconv.ParseUint: parsing '
                    f'"{part}": invalid syntax'
                )
            if int(part) < 1:
                raise bad_request(f'port "{value}" must be > 0')
            ports.append(int(part))
    return ports


@dataclass
class _Port:
    number: int
    index: int
    writer: asyncio.Future[asyncio.StreamWriter | None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


@dataclass
class _Session:
    ws: web.WebSocketResponse
    codec: wschannels.Codec
    dial: Dial
    pod_uid: str
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def send(self, channel: int, data: bytes) -> None:
        message = self.codec.encode(channel, data)
        async with self.lock:  # one message at a time; each send waits for the drain
            with contextlib.suppress(ConnectionError, RuntimeError):
                if isinstance(message, str):
                    await self.ws.send_str(message)
                else:
                    await self.ws.send_bytes(message)

    async def pump(self, port: _Port) -> None:
        """One port: dial it, then copy what the pod sends to its data channel."""
        try:
            reader, writer = await self.dial(port.number)
        except OSError as exc:
            port.writer.set_result(None)
            message = f"error forwarding port {port.number} to pod {self.pod_uid}, uid : {exc}"
            await self.send(2 * port.index + 1, message.encode())
            return
        port.writer.set_result(writer)
        try:
            while data := await reader.read(READ_SIZE):
                await self.send(2 * port.index, data)
        except OSError:
            pass
        finally:
            writer.close()

    async def read_client(self, ports: list[_Port]) -> None:
        async for msg in self.ws:
            if msg.type == WSMsgType.BINARY:
                raw = bytes(msg.data)
            elif msg.type == WSMsgType.TEXT:
                raw = str(msg.data).encode()
            else:
                continue
            decoded = self.codec.decode(raw)
            if decoded is None:
                continue
            channel, data = decoded
            if channel % 2 or channel // 2 >= len(ports) or not data:
                continue  # error channels are the server's; unknown channels are dropped
            writer = await ports[channel // 2].writer
            if writer is None or writer.is_closing():
                continue
            writer.write(data)
            with contextlib.suppress(ConnectionError):
                await writer.drain()


async def forward(
    ws: web.WebSocketResponse, codec: wschannels.Codec, ports: list[int], dial: Dial, uid: str
) -> None:
    """Serve a prepared WebSocket until every port is done or the client goes."""
    session = _Session(ws, codec, dial, uid)
    open_ports = [_Port(number, i) for i, number in enumerate(ports)]
    for port in open_ports:
        prefix = port.number.to_bytes(2, "little")
        await session.send(2 * port.index, prefix)
        await session.send(2 * port.index + 1, prefix)
    pumps = [asyncio.create_task(session.pump(port)) for port in open_ports]
    reader = asyncio.create_task(session.read_client(open_ports))
    all_done = asyncio.create_task(asyncio.wait(pumps))
    try:
        await asyncio.wait([all_done, reader], return_when=asyncio.FIRST_COMPLETED)
    finally:
        tasks = (*pumps, reader, all_done)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        with contextlib.suppress(ConnectionError, RuntimeError):
            await ws.close()
        log.debug("port-forward ended", ports=ports)
