"""Health probes (`/healthz`, `/readyz`) and the Prometheus `/metrics` endpoint, on aiohttp.

Probes answer like kube-apiserver's and controller-runtime's: 200 with `ok` when every
check passes, 500 otherwise, and with `?verbose` (or on failure) one line per check,
`[+]name ok` / `[-]name failed: reason`, so a person running curl sees *why* a replica is not
ready. `/readyz/<check>` runs one check.

`/metrics` speaks the text format 0.0.4, or OpenMetrics to a client whose `Accept` asks for
it (`metrics_app`), as a Go controller's promhttp handler does.

Nothing else is served: the metrics server answers `/metrics` and the probe server
`/healthz`, `/healthz/<check>`, `/readyz`, `/readyz/<check>` and `/livez`, all GET only
(405 for another method, 404 for another path; no HEAD, no index, no profiler).

Secure metrics (`--metrics-secure`): the metrics server speaks TLS (`kubeutil.tls` settings)
and every request must carry a bearer token that the API server authenticates and
authorizes for the path (`authn.py`, controller-runtime's
`filters.WithAuthenticationAndAuthorization`): 401 without a valid token, 403 without RBAC
for it. As upstream, the check runs before routing, so without credentials even an unknown
path is 401. The probe server stays plain HTTP without authentication: the kubelet's probes
send no token, and upstream leaves them open too.

Slow and idle clients: every server here (and the webhook server) runs on
`http_timers.TimedAppRunner`: a connection that has not sent complete headers within
`HEADER_TIMEOUT` of connecting or of its request's first byte is closed, an idle kept-alive
one after `IDLE_TIMEOUT` (longer than its clients keep it), and bodies are capped
(`client_max_size`).
"""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from aiohttp import web
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from jobset.runtime.http_timers import HEADER_TIMEOUT, TimedAppRunner

if TYPE_CHECKING:
    from jobset.runtime.authn import DelegatingAuth

__all__ = [
    "HEADER_TIMEOUT",
    "Check",
    "CheckResult",
    "HttpServer",
    "Probes",
    "metrics_app",
    "probes_app",
]

# The probe and metrics endpoints take no body.
MAX_BODY_BYTES: Final = 64 * 1024


@dataclass(frozen=True)
class CheckResult:
    ok: bool
    detail: str = ""


Check = Callable[[], CheckResult]


@dataclass
class Probes:
    """Named liveness and readiness checks."""

    liveness: dict[str, Check] = field(default_factory=dict)
    readiness: dict[str, Check] = field(default_factory=dict)

    @staticmethod
    def evaluate(checks: dict[str, Check]) -> tuple[bool, list[str]]:
        lines: list[str] = []
        healthy = True
        for name, check in checks.items():
            try:
                res = check()
            except Exception as exc:  # a broken check is a failed check
                res = CheckResult(False, repr(exc))
            healthy = healthy and res.ok
            detail = f" ({res.detail})" if res.detail else ""
            lines.append(f"[+]{name} ok{detail}" if res.ok else f"[-]{name} failed: {res.detail}")
        return healthy, lines


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _probe_handler(checks: dict[str, Check], probe: str) -> Handler:
    async def handler(request: web.Request) -> web.Response:
        selected = checks
        name = request.match_info.get("check")
        if name is not None:
            if name not in checks:
                return web.Response(status=404, text=f"no such check: {name}\n")
            selected = {name: checks[name]}
        healthy, lines = Probes.evaluate(selected)
        verbose = "verbose" in request.query or not healthy
        if not verbose:
            return web.Response(text="ok", content_type="text/plain")
        tail = f"{probe} check passed" if healthy else f"{probe} check failed"
        return web.Response(
            status=200 if healthy else 500,
            text="\n".join([*lines, tail]) + "\n",
            content_type="text/plain",
        )

    return handler


def probes_app(probes: Probes) -> web.Application:
    app = web.Application(client_max_size=MAX_BODY_BYTES)
    for probe, checks in (("healthz", probes.liveness), ("readyz", probes.readiness)):
        handler = _probe_handler(checks, probe)
        app.router.add_get(f"/{probe}", handler, allow_head=False)
        app.router.add_get(f"/{probe}/{{check}}", handler, allow_head=False)
    app.router.add_get("/livez", _probe_handler(probes.liveness, "livez"), allow_head=False)
    return app


def _auth_middleware(auth: DelegatingAuth) -> Callable[..., Awaitable[web.StreamResponse]]:
    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        decision = await auth.check(request.headers, request.method, request.path)
        if not decision.ok:
            return web.Response(
                status=decision.status,
                text=decision.message + "\n",
                content_type="text/plain",
                headers={"Retry-After": "1"} if decision.status == 429 else None,
            )
        return await handler(request)

    return check


def metrics_app(registry: CollectorRegistry, auth: DelegatingAuth | None = None) -> web.Application:
    """`GET /metrics`; with `auth`, only for callers it allows.

    The format is negotiated as client_golang's promhttp does it, by prometheus-client's own
    `choose_encoder`: an `Accept` naming `application/openmetrics-text` gets OpenMetrics
    1.0.0 (what Prometheus asks for first), anything else the text format 0.0.4."""

    async def metrics(request: web.Request) -> web.Response:
        encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
        resp = web.Response(body=encoder(registry))
        resp.headers["Content-Type"] = content_type
        return resp

    middlewares = [_auth_middleware(auth)] if auth is not None else []
    app = web.Application(client_max_size=MAX_BODY_BYTES, middlewares=middlewares)
    app.router.add_get("/metrics", metrics, allow_head=False)
    return app


class HttpServer:
    """One aiohttp app on host:port (port 0: any free port; `port` tells which), over TLS
    when given an `ssl_context` (see `kubeutil.tls.server_context`)."""

    def __init__(
        self,
        app: web.Application,
        host: str,
        port: int,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.app = app
        self.host = host
        self.port = port
        self.ssl_context = ssl_context
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        self._runner = TimedAppRunner(self.app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=self.ssl_context)
        await site.start()
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        if sockets:
            self.port = sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
