"""The client's identity and rate limiting, seen from the server side."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import yaml
from aiohttp import web

from jobset import __version__
from jobset.runtime.client import CONFIGMAPS, Client


async def test_user_agent_and_client_side_rate_limit(tmp_path: Path) -> None:
    seen: list[tuple[float, str, str]] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(
            (
                time.monotonic(),
                request.headers.get("User-Agent", ""),
                request.headers.get("Authorization", ""),
            )
        )
        return web.json_response({"kind": "ConfigMap", "metadata": {"name": "x"}})

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                "users": [{"name": "u", "user": {"token": "secret-token"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            }
        )
    )
    client = await Client.connect(str(kubeconfig), qps=20, burst=2)
    try:
        await asyncio.gather(*(client.get(CONFIGMAPS, "x", "default") for _ in range(6)))
    finally:
        await client.close()
        await runner.cleanup()
    assert len(seen) == 6
    agent = seen[0][1]
    assert agent.startswith(f"jobset-controller/{__version__} (")
    assert seen[0][2] == "Bearer secret-token"
    # burst 2, then 20 qps: the 6th request cannot leave before (6 - 2) / 20 s = 0.2 s.
    assert seen[-1][0] - seen[0][0] >= 0.18
