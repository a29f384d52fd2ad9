"""The agent's JobSet watch backs off against a misbehaving API server.

Every worker pod runs an agent; one that watches again at once after a failed watch turns
a broken server answer into thousands of requests a second per pod. Against a real HTTPS
server on loopback that answers every watch badly, the agent's client (`InClusterApi`)
must wait as client-go's reflector does (0.8 s doubling, jittered): list + watch at t=0,
then after at least 0.8 s, 0.8 + 1.6 s, 0.8 + 1.6 + 3.2 s - so at most 3 rounds (6
requests) within the first 4 seconds, where no backoff makes thousands.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from jobset.agent.apiclient import InClusterApi
from tests.integration.agent.fakeapi import fake_api

WINDOW = 4.0
MOST = 6  # 3 rounds of list + watch (see the module docstring)


async def error_event(request: web.Request) -> web.StreamResponse:
    """A watch that fails at once with a non-410 ERROR event (e.g. an etcd hiccup)."""
    resp = web.StreamResponse()
    await resp.prepare(request)
    await resp.write(
        b'{"type":"ERROR","object":{"kind":"Status","code":500,"reason":"InternalError",'
        b'"message":"etcdserver: request timed out"}}\n'
    )
    return resp


async def empty_watch(request: web.Request) -> web.StreamResponse:
    """A watch answered 200 and closed at once with no event (a proxy cutting it)."""
    return web.Response(status=200, body=b"")


async def never_patched(request: web.Request) -> web.Response:
    return web.json_response({}, status=200)


@pytest.mark.parametrize(
    "watch",
    [pytest.param(error_event, id="error-event"), pytest.param(empty_watch, id="empty-watch")],
)
async def test_a_failing_watch_is_retried_with_backoff(tmp_path: Path, watch: Any) -> None:
    async with fake_api(tmp_path, watch=watch, patch=never_patched) as api:
        client = InClusterApi("default", "js", "pod", api.environ, sa_dir=api.sa_dir)
        views = client.jobset_views()

        async def follow() -> None:
            async for _ in views:
                pass

        task = asyncio.create_task(follow())
        try:
            await api.arrived.wait()
            first = api.requests[0][2]
            await asyncio.sleep(WINDOW + 0.5)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await client.close()
        within = [t for _, _, t in api.requests if t - first < WINDOW]
        assert 2 <= len(within) <= MOST, [round(t - first, 2) for _, _, t in api.requests[:20]]
        # Each round lists again, then watches.
        assert [k for _, k, _ in api.requests[:4]] == ["list", "watch", "list", "watch"]
