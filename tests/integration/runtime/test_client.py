"""The client's identity and rate limiting, seen from the server side."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web

from jobset import __version__
from jobset.runtime.client import CONFIGMAPS, NAMESPACES, Client, env_proxy_for
from kubesim.process import SimProcess


async def _serve(
    handler: Callable[[web.Request], Awaitable[web.StreamResponse]], tmp_path: Path, token: str
) -> tuple[web.AppRunner, Path]:
    """`handler` for every GET, served over plain HTTP on loopback, and a kubeconfig for it."""
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
                "users": [{"name": "u", "user": {"token": token}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            }
        )
    )
    return runner, kubeconfig


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

    runner, kubeconfig = await _serve(handler, tmp_path, token="secret-token")
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


_PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy")


async def test_no_env_lookups_per_request_without_a_proxy(
    sim_none: SimProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without proxy variables the session does not consult the environment: requests go
    over TLS with the bearer token and never through the thread pool (aiohttp's
    `trust_env` costs two executor round trips per request: proxy lookup and netrc)."""
    for var in _PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
    client = await Client.connect(str(sim_none.kubeconfig))
    loop = asyncio.get_running_loop()
    calls: list[object] = []
    original = loop.run_in_executor

    def counting(executor: Any, func: Any, *args: Any) -> Any:
        calls.append(func)
        return original(executor, func, *args)

    try:
        assert client.api.configuration.host.startswith("https://")
        assert client.api.rest_client.pool_manager.trust_env is False
        ns = f"env-{uuid.uuid4().hex[:6]}"
        await client.create(NAMESPACES, {"metadata": {"name": ns}})  # connection set up
        monkeypatch.setattr(loop, "run_in_executor", counting)
        for i in range(5):
            await client.create(CONFIGMAPS, {"metadata": {"name": f"cm{i}", "namespace": ns}})
        listed = await client.list(CONFIGMAPS, ns)
    finally:
        monkeypatch.undo()
        await client.close()
    assert len(listed["items"]) == 5  # the sim enforces tokens: the bearer token was sent
    assert calls == []


async def test_proxy_variables_keep_the_environment_aware_session(
    sim_none: SimProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in _PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    assert await _session_trusts_env(sim_none) is True
    # NO_PROXY naming the API server's host: the proxy does not apply, no lookups needed.
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
    assert await _session_trusts_env(sim_none) is False


async def _session_trusts_env(sim: SimProcess) -> bool:
    """Whether a client connected to `sim` now reads the environment on every request."""
    client = await Client.connect(str(sim.kubeconfig))
    try:
        return bool(client.api.rest_client.pool_manager.trust_env)
    finally:
        await client.close()


def test_env_proxy_for(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in _PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
    assert env_proxy_for("https://10.0.0.1:6443") is None
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    assert env_proxy_for("https://10.0.0.1:6443") == "http://proxy.example:3128"
    assert env_proxy_for("http://10.0.0.1:8080") is None  # only HTTP_PROXY covers http
    monkeypatch.setenv("NO_PROXY", "10.0.0.1")
    assert env_proxy_for("https://10.0.0.1:6443") is None


def test_request_timeout_forms() -> None:
    """The forms kubernetes_asyncio's `call_api` accepted still mean the same."""
    import aiohttp

    from jobset.runtime.client import client_timeout

    assert client_timeout(60.0).total == 60.0
    pair = client_timeout((5, 30))
    assert (pair.connect, pair.sock_connect, pair.sock_read, pair.total) == (5, 5, 30, None)
    given = aiohttp.ClientTimeout(sock_read=7)
    assert client_timeout(given) is given
    assert client_timeout(None).total is None
    assert client_timeout(60.0) is client_timeout(60.0)  # immutable: one per value, shared
    assert client_timeout((5, 30)) is client_timeout((5, 30))


async def test_create_raw_answers_the_stored_object_unparsed(sim_none: SimProcess) -> None:
    """`create_raw` sends what `create` sends and hands back the server's answer as bytes:
    the object as stored (uid, resourceVersion), what `create` returns parsed."""
    import orjson

    client = await Client.connect(str(sim_none.kubeconfig))
    try:
        ns = f"raw-{uuid.uuid4().hex[:6]}"
        await client.create(NAMESPACES, {"metadata": {"name": ns}})
        raw = await client.create_raw(
            CONFIGMAPS, {"metadata": {"name": "a", "namespace": ns}, "data": {"k": "v"}}
        )
        parsed = await client.create(
            CONFIGMAPS, {"metadata": {"name": "b", "namespace": ns}, "data": {"k": "v"}}
        )
        stored = await client.get(CONFIGMAPS, "a", ns)
    finally:
        await client.close()
    assert isinstance(raw, bytes)
    made = orjson.loads(raw)
    assert made["metadata"]["uid"] == stored["metadata"]["uid"]
    assert made["data"] == {"k": "v"} == parsed["data"]
    assert parsed["metadata"]["name"] == "b" and parsed["metadata"]["uid"]


async def test_watch_lines_with_surrounding_whitespace(tmp_path: Path) -> None:
    """Watch events are parsed with their line's whitespace around them (CRLF, blanks);
    lines of whitespace alone are skipped, a stream of them too."""

    async def handler(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        await resp.prepare(request)
        await resp.write(
            b'{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n'
            b"\n \r\n\t\n"
            b'  {"type":"MODIFIED","object":{"metadata":{"name":"b"}}} \r\n'
            b'{"type":"DELETED","object":{"metadata":{"name":"c"}}}'
        )
        await resp.write_eof()
        return resp

    runner, kubeconfig = await _serve(handler, tmp_path, token="t")
    client = await Client.connect(str(kubeconfig))
    try:
        async with client.watch(CONFIGMAPS, "default") as events:
            got = [(e["type"], e["object"]["metadata"]["name"]) async for e in events]
    finally:
        await client.close()
        await runner.cleanup()
    assert got == [("ADDED", "a"), ("MODIFIED", "b"), ("DELETED", "c")]
