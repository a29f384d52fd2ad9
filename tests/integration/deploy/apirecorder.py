"""A recording reverse proxy in front of `jobset sim`: what a client really asks the API for.

The controller under test gets a kubeconfig pointing at this proxy (plain HTTP on 127.0.0.1);
the proxy forwards every request to the simulated API server (HTTPS, the sim's bearer token),
streams the answer back (watches included) and records each request as the attributes the
Kubernetes RBAC authorizer sees: verb, API group, resource, subresource, namespace, name.
That record is what the controller's ClusterRole and Roles must allow, and all they may allow.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import aiohttp
import yaml
from aiohttp import web

__all__ = ["ApiRecorder", "RequestAttributes", "request_attributes"]

_HOP_HEADERS = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "authorization"}
)


@dataclass(frozen=True)
class RequestAttributes:
    """One request as the RBAC authorizer sees it (k8s.io/apiserver RequestInfo)."""

    verb: str
    group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""  # set for non-resource requests (discovery, /version)
    # ownerReferences with blockOwnerDeletion in a create/update body: (apiVersion, kind)
    blocks_owner_deletion_of: tuple[tuple[str, str], ...] = ()

    @property
    def is_resource(self) -> bool:
        return not self.path

    @property
    def resource_key(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


def request_attributes(method: str, raw_path: str, body: bytes = b"") -> RequestAttributes:
    """The RBAC attributes of one HTTP request (Kubernetes' RequestInfoFactory, trimmed)."""
    split = urlsplit(raw_path)
    query = parse_qs(split.query)
    parts = [p for p in split.path.split("/") if p]
    if not parts or parts[0] not in ("api", "apis"):
        return RequestAttributes(verb=method.lower(), path=split.path)
    if parts[0] == "api":
        group, rest = "", parts[2:]
        if len(parts) < 2:
            return RequestAttributes(verb=method.lower(), path=split.path)
    else:
        if len(parts) < 3:
            return RequestAttributes(verb=method.lower(), path=split.path)
        group, rest = parts[1], parts[3:]
    if not rest:
        return RequestAttributes(verb=method.lower(), path=split.path)
    watch_path = rest[0] == "watch"
    if watch_path:
        rest = rest[1:]
    namespace = ""
    if rest[0] == "namespaces" and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    elif rest[0] == "namespaces" and len(rest) == 2:
        # /api/v1/namespaces/NAME: the namespace object itself
        rest = ["namespaces", rest[1]]
        namespace = rest[1]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    watch = watch_path or query.get("watch", ["false"])[0] in ("true", "1")
    if method == "GET":
        verb = "get" if name else ("watch" if watch else "list")
    elif method == "POST":
        verb = "create"
    elif method == "PUT":
        verb = "update"
    elif method == "PATCH":
        verb = "patch"
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    else:
        verb = method.lower()
    if verb in ("list", "watch") and not name:
        # A list/watch narrowed to one name by field selector is authorized against that name.
        for selector in query.get("fieldSelector", []):
            for term in selector.split(","):
                key, _, value = term.partition("=")
                if key == "metadata.name" and value and not value.startswith("="):
                    name = value
    blocks: tuple[tuple[str, str], ...] = ()
    if verb in ("create", "update", "patch") and body:
        blocks = _blocking_owners(body)
    return RequestAttributes(
        verb=verb,
        group=group,
        resource=resource,
        subresource=subresource,
        namespace=namespace,
        name=name,
        blocks_owner_deletion_of=blocks,
    )


def _blocking_owners(body: bytes) -> tuple[tuple[str, str], ...]:
    try:
        obj = json.loads(body)
    except ValueError:
        return ()
    if not isinstance(obj, dict):
        return ()
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return tuple(
        (str(r.get("apiVersion")), str(r.get("kind")))
        for r in refs
        if isinstance(r, dict) and r.get("blockOwnerDeletion")
    )


class ApiRecorder:
    """Run the proxy on a thread of its own; `requests` is what went through it."""

    def __init__(self, sim_kubeconfig: Path) -> None:
        config = yaml.safe_load(sim_kubeconfig.read_text())
        cluster = config["clusters"][0]["cluster"]
        self.upstream = str(cluster["server"]).rstrip("/")
        self.token = str(config["users"][0]["user"]["token"])
        ca = cluster.get("certificate-authority-data")
        self._ssl: ssl.SSLContext | bool = False
        if ca:
            import base64

            self._ssl = ssl.create_default_context(cadata=base64.b64decode(ca).decode())
        self.requests: list[RequestAttributes] = []
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self.port = 0

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> ApiRecorder:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=30)
        return self

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    async def _start(self) -> None:
        self._session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
            auto_decompress=False,
        )
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._forward)
        self._runner = web.AppRunner(app, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])

    async def _stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    def write_kubeconfig(self, path: Path) -> Path:
        """A kubeconfig for clients that should go through the proxy."""
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": "recorded", "cluster": {"server": f"http://127.0.0.1:{self.port}"}}
            ],
            "users": [{"name": "recorded", "user": {"token": "recorded"}}],
            "contexts": [
                {"name": "recorded", "context": {"cluster": "recorded", "user": "recorded"}}
            ],
            "current-context": "recorded",
        }
        path.write_text(yaml.safe_dump(config))
        return path

    def snapshot(self) -> list[RequestAttributes]:
        with self._lock:
            return list(self.requests)

    # ------------------------------------------------------------------ proxying

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        assert self._session is not None
        body = await request.read()
        attrs = request_attributes(request.method, request.path_qs, body)
        with self._lock:
            self.requests.append(attrs)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_HEADERS}
        headers["Authorization"] = f"Bearer {self.token}"
        async with self._session.request(
            request.method,
            self.upstream + request.path_qs,
            headers=headers,
            data=body if body else None,
            ssl=self._ssl,
        ) as upstream:
            response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            for key, value in upstream.headers.items():
                if key.lower() not in _HOP_HEADERS:
                    response.headers[key] = value
            await response.prepare(request)
            try:
                async for chunk in upstream.content.iter_any():
                    await response.write(chunk)
            except (ConnectionResetError, aiohttp.ClientError):
                return response
            await response.write_eof()
            return response


def summarize(requests: Iterable[RequestAttributes]) -> list[str]:
    """Readable lines, for assertion messages."""
    return sorted(
        {
            f"{r.verb} {r.group or 'core'}/{r.resource_key}"
            + (f" ns={r.namespace}" if r.namespace else "")
            + (f" name={r.name}" if r.name else "")
            for r in requests
            if r.is_resource
        }
    )
