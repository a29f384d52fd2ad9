"""A small HTTPS API server on loopback for the in-place restart agent's client: it serves
one JobSet's list, watch and pod patches the way a test asks (well or badly), and records
every request it gets with its arrival time."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from kubeutil.tls import self_signed, server_context

__all__ = ["FakeApi", "Handler", "fake_api"]

Handler = Callable[[web.Request], Any]


@dataclass
class FakeApi:
    """What the server got (method, "list" | "watch" | "patch", monotonic time), and the
    in-cluster environment and ServiceAccount directory that reach it."""

    environ: dict[str, str]
    sa_dir: Path
    requests: list[tuple[str, str, float]] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    patched: asyncio.Event = field(default_factory=asyncio.Event)

    def record(self, method: str, kind: str) -> None:
        self.requests.append((method, kind, time.monotonic()))
        self.arrived.set()
        if kind == "patch":
            self.patched.set()

    def of(self, kind: str) -> list[float]:
        return [t for _, k, t in self.requests if k == kind]


def jobset(name: str, rv: str = "5", status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": "default", "resourceVersion": rv},
        "spec": {"failurePolicy": {"restartStrategy": "InPlaceRestart", "maxRestarts": 3}},
        "status": status or {},
    }


@asynccontextmanager
async def fake_api(
    directory: Path, *, watch: Handler, patch: Handler, listing: Handler | None = None
) -> AsyncIterator[FakeApi]:
    """Serve until the block exits; `watch`, `patch` and `listing` answer those requests."""
    ca, cert, key = self_signed(["127.0.0.1"])
    (directory / "ca.crt").write_bytes(ca)
    (directory / "token").write_text("test-token")
    api = FakeApi({}, directory)

    async def jobsets(request: web.Request) -> Any:
        watching = request.query.get("watch") == "true"
        api.record("GET", "watch" if watching else "list")
        if watching:
            return await watch(request)
        if listing is not None:
            return await listing(request)
        return web.json_response({"metadata": {"resourceVersion": "5"}, "items": [jobset("js")]})

    async def pods(request: web.Request) -> Any:
        api.record("PATCH", "patch")
        return await patch(request)

    app = web.Application()
    app.router.add_get("/apis/jobset.x-k8s.io/v1alpha2/namespaces/{ns}/jobsets", jobsets)
    app.router.add_patch("/api/v1/namespaces/{ns}/pods/{name}", pods)
    # Open watches are cut at the end, not waited for (aiohttp would wait 60 s).
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=server_context(cert, key))
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    api.environ.update(
        {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(port)}
    )
    try:
        yield api
    finally:
        await runner.cleanup()
