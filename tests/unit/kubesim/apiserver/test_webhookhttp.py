"""The webhook calls' HTTP/1.1 pool against real servers on loopback, hostile ones
included: chunked and close-delimited answers, huge or endless headers and bodies,
garbage, a connection cut mid-answer, a server that never answers."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import pytest

from kubesim.apiserver import certs
from kubesim.apiserver.core import webhookhttp
from kubesim.apiserver.core.webhookhttp import (
    Endpoint,
    HttpPool,
    ProtocolError,
    UnexpectedEOF,
    request_bytes,
)

pytestmark = pytest.mark.timeout(30)

Answer = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
REQUEST = request_bytes("hooks.default.svc:443", "/v?timeout=10s", b'{"kind":"AdmissionReview"}')


@dataclass
class RawServer:
    """A TCP server whose answer to each request is written byte for byte by `answer`."""

    answer: Answer
    port: int = 0
    connections: int = 0
    requests: list[bytes] = field(default_factory=list)


async def read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    return head + await reader.readexactly(length)


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Answer], Awaitable[RawServer]]]:
    servers: list[asyncio.Server] = []

    async def start(answer: Answer, tls: ssl.SSLContext | None = None) -> RawServer:
        raw = RawServer(answer)

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            raw.connections += 1
            try:
                while True:
                    raw.requests.append(await read_request(reader))
                    await raw.answer(reader, writer)
                    if writer.is_closing():
                        return
            except (asyncio.IncompleteReadError, ConnectionError):
                pass
            finally:
                writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=tls)
        servers.append(server)
        raw.port = server.sockets[0].getsockname()[1]
        return raw

    yield start
    for server in servers:
        server.close()
        await server.wait_closed()


def ok(body: bytes, extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), extra, body)


async def test_keep_alive_answers_reuse_one_connection(
    serve: Callable[..., Awaitable[RawServer]],
) -> None:
    async def answer(_r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        w.write(ok(b'{"n":1}'))

    server = await serve(answer)
    pool = HttpPool(4)
    ep = Endpoint("127.0.0.1", server.port, None, None)
    for _ in range(3):
        assert await pool.post(ep, REQUEST) == (200, b'{"n":1}')
    assert server.connections == 1 and pool.host(ep).opened == 1
    assert server.requests[0] == REQUEST
    pool.close()


async def test_chunked_answer(serve: Callable[..., Awaitable[RawServer]]) -> None:
    async def answer(_r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        w.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        for piece in (b'{"a":', b'"b"', b"}"):
            w.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            await w.drain()
        w.write(b"0\r\n\r\n")

    server = await serve(answer)
    pool = HttpPool(4)
    ep = Endpoint("127.0.0.1", server.port, None, None)
    assert await pool.post(ep, REQUEST) == (200, b'{"a":"b"}')
    assert await pool.post(ep, REQUEST) == (200, b'{"a":"b"}')
    assert server.connections == 1
    pool.close()


async def test_answer_delimited_by_close_is_whole_and_not_reused(
    serve: Callable[..., Awaitable[RawServer]],
) -> None:
    async def answer(_r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        w.write(b"HTTP/1.1 500 Internal Server Error\r\n\r\nboom")
        await w.drain()
        w.close()

    server = await serve(answer)
    pool = HttpPool(4)
    ep = Endpoint("127.0.0.1", server.port, None, None)
    assert await pool.post(ep, REQUEST) == (500, b"boom")
    assert await pool.post(ep, REQUEST) == (500, b"boom")
    assert server.connections == 2
    pool.close()


@pytest.mark.parametrize("chunked", [False, True])
async def test_huge_body_is_refused_without_reading_it_all(
    serve: Callable[..., Awaitable[RawServer]], monkeypatch: pytest.MonkeyPatch, chunked: bool
) -> None:
    monkeypatch.setattr(webhookhttp, "MAX_BODY_BYTES", 64 * 1024)
    sent = 0

    async def answer(_r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        nonlocal sent
        block = b"x" * 16384
        if chunked:
            w.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        else:
            w.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (1 << 30))
        while sent < (1 << 30):  # a gigabyte, unless the client hangs up first
            w.write(b"4000\r\n" + block + b"\r\n" if chunked else block)
            sent += len(block)
            await w.drain()

    server = await serve(answer)
    pool = HttpPool(4)
    ep = Endpoint("127.0.0.1", server.port, None, None)
    with pytest.raises(ProtocolError, match="response body exceeds 65536 bytes"):
        await pool.post(ep, REQUEST)
    assert sent < 64 << 20
    assert pool.host(ep).live == 0  # the connection was closed, not kept
    pool.close()


async def test_endless_headers_are_refused(
    serve: Callable[..., Awaitable[RawServer]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(webhookhttp, "MAX_HEADER_BYTES", 8 * 1024)

    async def answer(_r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        w.write(b"HTTP/1.1 200 OK\r\n")
        for i in range(100_000):
            w.write(b"X-Filler-%d: %s\r\n" % (i, b"y" * 100))
            await w.drain()

    server = await serve(answer)
    pool = HttpPool(4)
    ep = Endpoint("127.0.0.1", server.port, None, None)
    with pytest.raises(ProtocolError, match="server response headers exceeded 8192 bytes"):
        await pool.post(ep, REQUEST)
    pool.close()


@pytest.mark.parametrize(
    "garbage",
    [
        b"HELLO\r\n\r\n",
        b"HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"\x00\xff" * 64,
    ],
)
async def test_garbage_is_a_protocol_error(
    serve: Callable[..., Awaitable[RawServer]], garbage: bytes
) -> None:
    async def answer(_r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        w.write(garbage)

    server = await serve(answer)
    pool = HttpPool(4)
    ep = Endpoint("127.0.0.1", server.port, None, None)
    with pytest.raises(ProtocolError, match="malformed HTTP response"):
        await pool.post(ep, REQUEST)
    assert pool.host(ep).live == 0
    pool.close()


@pytest.mark.parametrize(
    ("partial", "message"),
    [(b"", "EOF"), (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{", "unexpected EOF")],
    ids=["before-any-byte", "mid-answer"],
)
async def test_connection_cut_before_the_whole_answer(
    serve: Callable[..., Awaitable[RawServer]], partial: bytes, message: str
) -> None:
    async def answer(_r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        w.write(partial)
        await w.drain()
        w.close()

    server = await serve(answer)
    pool = HttpPool(4)
    ep = Endpoint("127.0.0.1", server.port, None, None)
    with pytest.raises(UnexpectedEOF) as info:
        await pool.post(ep, REQUEST)
    assert str(info.value) == message
    pool.close()


async def test_a_call_cut_off_by_its_deadline_closes_its_connection(
    serve: Callable[..., Awaitable[RawServer]],
) -> None:
    release = asyncio.Event()

    async def answer(_r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        if len(server.requests) == 1:
            await release.wait()  # the first request is never answered in time
        w.write(ok(b"{}"))

    server = await serve(answer)
    pool = HttpPool(1)
    ep = Endpoint("127.0.0.1", server.port, None, None)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.2):
            await pool.post(ep, REQUEST)
    release.set()
    # The late answer to the first request must not be taken for the second one's.
    assert await pool.post(ep, REQUEST) == (200, b"{}")
    assert server.connections == 2 and pool.host(ep).live == 1
    pool.close()


async def test_callers_beyond_the_limit_wait_for_a_connection(
    serve: Callable[..., Awaitable[RawServer]],
) -> None:
    async def answer(_r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await asyncio.sleep(0.02)
        w.write(ok(b"{}"))

    server = await serve(answer)
    pool = HttpPool(2)
    ep = Endpoint("127.0.0.1", server.port, None, None)
    answers = await asyncio.gather(*(pool.post(ep, REQUEST) for _ in range(10)))
    assert answers == [(200, b"{}")] * 10
    assert server.connections == 2
    pool.close()


async def test_a_waiter_dials_when_a_connection_fails(
    serve: Callable[..., Awaitable[RawServer]],
) -> None:
    """A connection the server closes frees its slot for a caller waiting at the limit."""

    async def answer(_r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await asyncio.sleep(0.02)
        w.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}")
        await w.drain()
        w.close()

    server = await serve(answer)
    pool = HttpPool(1)
    ep = Endpoint("127.0.0.1", server.port, None, None)
    answers = await asyncio.gather(*(pool.post(ep, REQUEST) for _ in range(4)))
    assert answers == [(200, b"{}")] * 4 and server.connections == 4
    pool.close()


async def test_tls_is_verified_against_the_bundle(
    serve: Callable[..., Awaitable[RawServer]],
) -> None:
    ca_cert, ca_key = certs.make_ca("hooks-ca")
    cert, key = certs.make_serving_cert(ca_cert, ca_key, ["hooks.default.svc"])

    async def answer(_r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        w.write(ok(b"{}"))

    server = await serve(answer, certs.server_ssl_context(cert, key))
    pool = HttpPool(2)
    good = Endpoint(
        "127.0.0.1", server.port, certs.client_ssl_context(ca_cert), "hooks.default.svc"
    )
    assert await pool.post(good, REQUEST) == (200, b"{}")
    wrong_name = Endpoint("127.0.0.1", server.port, certs.client_ssl_context(ca_cert), "other.svc")
    with pytest.raises(ssl.SSLCertVerificationError):
        await pool.post(wrong_name, REQUEST)
    other_ca, _ = certs.make_ca("someone-else")
    untrusted = Endpoint(
        "127.0.0.1", server.port, certs.client_ssl_context(other_ca), "hooks.default.svc"
    )
    with pytest.raises(ssl.SSLCertVerificationError):
        await pool.post(untrusted, REQUEST)
    pool.close()


async def test_an_idle_connection_the_server_closed_is_not_reused(
    serve: Callable[..., Awaitable[RawServer]],
) -> None:
    async def answer(_r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        w.write(ok(b"{}"))
        await w.drain()
        if len(server.requests) == 1:
            await asyncio.sleep(0.05)
            w.write(b"HTTP/1.1 200 OK\r\n")  # unsolicited bytes on an idle connection
            await w.drain()

    server = await serve(answer)
    pool = HttpPool(2)
    ep = Endpoint("127.0.0.1", server.port, None, None)
    assert await pool.post(ep, REQUEST) == (200, b"{}")
    await asyncio.sleep(0.2)
    assert await pool.post(ep, REQUEST) == (200, b"{}")
    assert server.connections == 2
    pool.close()


async def test_a_connection_idle_too_long_is_closed_not_reused(
    serve: Callable[..., Awaitable[RawServer]],
) -> None:
    async def answer(_r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        w.write(ok(b"{}"))

    server = await serve(answer)
    pool = HttpPool(2, idle_timeout=0.05)
    ep = Endpoint("127.0.0.1", server.port, None, None)
    assert await pool.post(ep, REQUEST) == (200, b"{}")
    assert await pool.post(ep, REQUEST) == (200, b"{}")  # at once: the same connection
    assert server.connections == 1
    await asyncio.sleep(0.1)
    assert await pool.post(ep, REQUEST) == (200, b"{}")
    assert server.connections == 2 and pool.host(ep).live == 1
    pool.close()
