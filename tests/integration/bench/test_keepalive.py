"""The admission load generator's keep-alive client (`benchmarks/keepalive.py`) against a
real aiohttp HTTPS server: connections are reused, capped, and a request beyond the cap
waits for one to come free instead of dialling."""

from __future__ import annotations

import asyncio
import ssl

from benchmarks.keepalive import KeepAlivePool, request_bytes
from tests.integration.bench.conftest import Server


def _tls(ca: bytes) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cadata=ca.decode())
    ctx.check_hostname = False  # the certificate names localhost; we dial 127.0.0.1
    return ctx


async def test_requests_reuse_kept_alive_connections(server: Server) -> None:
    pool = KeepAlivePool("127.0.0.1", server.port, _tls(server.ca), limit=4)
    raw = request_bytes(f"127.0.0.1:{server.port}", "/echo", b'{"n":1}')
    try:
        await pool.warm(2)
        for _ in range(10):
            assert await pool.post(raw) == (200, b'{"n":1}')
        assert pool.opened == 2 and len(server.peers) <= 2
    finally:
        pool.close()


async def test_beyond_the_limit_requests_wait_for_a_free_connection(server: Server) -> None:
    pool = KeepAlivePool("127.0.0.1", server.port, _tls(server.ca), limit=3)
    raw = request_bytes(f"127.0.0.1:{server.port}", "/echo", b"{}")
    server.gate.clear()
    try:
        calls = [asyncio.ensure_future(pool.post(raw)) for _ in range(8)]
        for _ in range(200):
            if server.in_flight == 3:
                break
            await asyncio.sleep(0.01)
        assert server.in_flight == 3 and not any(c.done() for c in calls)
        server.gate.set()
        answers = await asyncio.wait_for(asyncio.gather(*calls), 30)
        assert answers == [(200, b"{}")] * 8
        assert pool.opened == 3 and server.most_in_flight == 3
    finally:
        pool.close()
