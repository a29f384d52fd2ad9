"""SPDY/3.1 framing (`kubesim.apiserver.http.spdy`) and the port-forward session on top of it,
played against a real TCP server on loopback; the client side is this module's frames."""

from __future__ import annotations

import asyncio
import zlib

import pytest

from kubesim.apiserver.http import spdy
from kubesim.apiserver.http.podstreams import PortForwardSession, exit_status, parse_resize


def test_dictionary_is_the_spdy3_one() -> None:
    # zlib names a preset dictionary by its Adler-32; Go's SPDY/3 dictionary has this one,
    # so a header block compressed with another dictionary is refused by the client.
    assert len(spdy.DICTIONARY) == 1423
    assert zlib.adler32(spdy.DICTIONARY) == 0xE3C6A7C2


def test_header_blocks_round_trip_on_one_compression_stream() -> None:
    client, server = spdy.Writer(), spdy.Parser()
    wire = client.syn_stream(1, {"streamType": "error", "port": "8080", "requestID": "0"})
    wire += client.syn_stream(3, {"streamType": "data", "port": "8080", "requestID": "0"})
    wire += spdy.data_frame(3, b"GET / HTTP/1.0\r\n\r\n", fin=True)
    frames = []
    for i in range(len(wire)):  # byte by byte: frames come out whole whatever the split
        frames += list(server.feed(wire[i : i + 1]))
    assert frames == [
        spdy.SynStream(1, {"streamtype": "error", "port": "8080", "requestid": "0"}, False),
        spdy.SynStream(3, {"streamtype": "data", "port": "8080", "requestid": "0"}, False),
        spdy.Data(3, b"GET / HTTP/1.0\r\n\r\n", True),
    ]


def test_control_frames_parse() -> None:
    parser = spdy.Parser()
    wire = spdy.Writer.ping(7) + spdy.Writer.rst_stream(5) + spdy.Writer.goaway(9)
    wire += spdy.Writer().syn_reply(1)
    assert list(parser.feed(wire)) == [
        spdy.Ping(7),
        spdy.RstStream(5, spdy.CANCEL),
        spdy.GoAway(9),
        spdy.Other(spdy.SYN_REPLY),
    ]


def test_other_versions_and_bad_header_blocks_are_refused() -> None:
    frame = bytearray(spdy.Writer.ping(1))
    frame[1] = 2  # SPDY/2
    with pytest.raises(spdy.FrameError, match="unsupported SPDY version 2"):
        list(spdy.Parser().feed(bytes(frame)))
    syn = bytearray(spdy.Writer().syn_stream(1, {"a": "b"}))
    syn[18:22] = b"\xff\xff\xff\xff"
    with pytest.raises(spdy.FrameError, match="bad header block"):
        list(spdy.Parser().feed(bytes(syn)))


def test_frames_come_out_one_at_a_time_as_they_are_parsed() -> None:
    bad = bytearray(spdy.Writer.ping(2))
    bad[1] = 2  # a frame that ends the session, after a good one
    frames = spdy.Parser().feed(spdy.Writer.ping(1) + bytes(bad))
    assert next(frames) == spdy.Ping(1)  # given before the next one is even read
    with pytest.raises(spdy.FrameError):
        next(frames)


def test_a_header_block_inflating_past_the_bound_is_refused_uninflated() -> None:
    inflated = spdy.MAX_HEADER_BLOCK * 64
    c = zlib.compressobj(9, zdict=spdy.DICTIONARY)
    block = c.compress(b"\0\0\0\1\0\0\0\1x" + inflated.to_bytes(4, "big"))
    block += b"".join(c.compress(bytes(1 << 20)) for _ in range(64))
    block += c.flush(zlib.Z_SYNC_FLUSH)
    payload = bytes(10) + block
    payload = (1).to_bytes(4, "big") + payload[4:]
    frame = bytes([0x80, 3, 0, 1]) + len(payload).to_bytes(4, "big") + payload
    parser = spdy.Parser()
    with pytest.raises(spdy.FrameError, match=f"header block larger than {spdy.MAX_HEADER_BLOCK}"):
        list(parser.feed(frame))
    # What the parser produced is the bound and no more: the rest was never inflated.
    assert len(parser.inflate.unconsumed_tail) > 0


def test_a_header_block_at_the_bound_is_taken() -> None:
    value = "v" * (spdy.MAX_HEADER_BLOCK - 4 - 4 - 1 - 4)
    wire = spdy.Writer().syn_stream(1, {"x": value})
    assert list(spdy.Parser().feed(wire)) == [spdy.SynStream(1, {"x": value}, False)]


def test_exit_status_and_resize_messages() -> None:
    assert exit_status(0) == {"metadata": {}, "status": "Success"}
    failed = exit_status(3)
    assert failed["reason"] == "NonZeroExitCode"
    assert failed["details"]["causes"] == [{"reason": "ExitCode", "message": "3"}]
    assert parse_resize(b'{"Width":80,"Height":24}\n{"Width":100,"Height":30}\n') == [
        (80, 24),
        (100, 30),
    ]
    assert parse_resize(b"not json") == []


async def _echo_server() -> tuple[asyncio.Server, int]:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        data = await reader.read()
        writer.write(data.upper())
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


async def test_port_forward_session_pairs_streams_and_forwards() -> None:
    server, port = await _echo_server()
    sent = spdy.Parser()
    frames: list[spdy.Frame] = []
    done = asyncio.Event()

    async def send(data: bytes) -> None:
        frames.extend(sent.feed(data))
        if any(isinstance(f, spdy.Data) and f.fin and f.stream_id == 1 for f in frames):
            done.set()

    async def dial(p: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection("127.0.0.1", p)

    session = PortForwardSession(send, dial, "uid-1")
    client = spdy.Writer()
    async with server:
        await session.feed(
            client.syn_stream(1, {"streamType": "error", "port": str(port), "requestID": "0"})
            + client.syn_stream(3, {"streamType": "data", "port": str(port), "requestID": "0"})
            + spdy.data_frame(3, b"hello", fin=True)
            + spdy.Writer.ping(2)
        )
        await asyncio.wait_for(done.wait(), 10)
        await session.close()
    replies = [f for f in frames if isinstance(f, spdy.Other)]
    assert len(replies) == 2  # a SYN_REPLY for each stream
    assert spdy.Ping(2) in frames
    data = b"".join(f.data for f in frames if isinstance(f, spdy.Data) and f.stream_id == 3)
    assert data == b"HELLO"
    assert spdy.Data(3, b"", True) in frames
    assert [f for f in frames if isinstance(f, spdy.Data) and f.stream_id == 1] == [
        spdy.Data(1, b"", True)  # no error: the error stream just ends
    ]


async def test_port_forward_session_reports_a_refused_port_on_the_error_stream() -> None:
    sent = spdy.Parser()
    frames: list[spdy.Frame] = []
    done = asyncio.Event()

    async def send(data: bytes) -> None:
        frames.extend(sent.feed(data))
        if spdy.Data(1, b"", True) in frames:
            done.set()

    async def dial(p: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        raise OSError(f"failed to connect to localhost:{p} inside the pod: refused")

    session = PortForwardSession(send, dial, "uid-1")
    client = spdy.Writer()
    await session.feed(
        client.syn_stream(1, {"streamType": "error", "port": "81", "requestID": "7"})
        + client.syn_stream(3, {"streamType": "data", "port": "81", "requestID": "7"})
        + client.syn_stream(5, {"streamType": "data", "port": "0"})
    )
    await asyncio.wait_for(done.wait(), 10)
    await session.close()
    assert spdy.RstStream(5, spdy.PROTOCOL_ERROR) in frames
    errors = b"".join(f.data for f in frames if isinstance(f, spdy.Data) and f.stream_id == 1)
    assert errors == (
        b"error forwarding port 81 to pod uid-1, uid : "
        b"failed to connect to localhost:81 inside the pod: refused"
    )
