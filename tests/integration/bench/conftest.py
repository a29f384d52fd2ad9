"""An HTTPS echo server on loopback for the admission load generator's tests: it answers
each POST with its body, counts connections and requests in flight, and can hold answers
back (`gate`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from jobset.webhooks import certs
from kubeutil import tls


class Server:
    def __init__(self) -> None:
        self.port = 0
        self.peers: set[tuple[str, int]] = set()
        self.in_flight = 0
        self.most_in_flight = 0
        self.gate = asyncio.Event()
        self.ca = b""


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    bundle = certs.issue_bundle(["localhost"])
    srv = Server()
    srv.ca = bundle.ca_cert
    srv.gate.set()

    async def echo(request: web.Request) -> web.Response:
        peer = request.transport.get_extra_info("peername") if request.transport else None
        srv.peers.add(tuple(peer[:2]) if peer else ("", 0))
        srv.in_flight += 1
        srv.most_in_flight = max(srv.most_in_flight, srv.in_flight)
        try:
            await srv.gate.wait()
            return web.Response(body=await request.read(), content_type="application/json")
        finally:
            srv.in_flight -= 1

    app = web.Application()
    app.router.add_post("/{path:.*}", echo)  # any path: the generator posts to both webhooks' paths
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    ctx = tls.server_context(bundle.cert, bundle.key)
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ctx)
    await site.start()
    srv.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield srv
    await runner.cleanup()
