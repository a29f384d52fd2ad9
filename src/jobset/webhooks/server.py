"""The admission webhook server: aiohttp over TLS, one path per webhook.

What the API server needs from it, and what this module guarantees:

- TLS 1.2 or 1.3 only, TLS 1.2 with forward-secret AEAD suites only (`kubeutil.tls`, the
  settings every HTTPS server of the project shares).
- TLS with a certificate the webhook configuration's `caBundle` vouches for. The
  certificate can change while serving (rotation, or cert-manager renewing the mounted
  files): `ServingCert.update` reloads the one `SSLContext` in place; OpenSSL copies the
  certificate into each new connection, so new handshakes get the new one and open
  connections keep theirs.
- Optionally, callers authenticated as the API server (`require_client_certs`, set by
  `--webhook-client-ca-file` / `--webhook-client-ca-from-cluster`): the TLS handshake
  fails for a client without a certificate chaining to the client CA, and a verified
  certificate whose CN is not among the allowed names gets a bare 403 - never an
  AdmissionReview. Without it anyone who can reach the port can call the handlers with
  any `userInfo` and `namespace` (see docs/reliability.md, "Threat model").
- An answer to every POST, always an HTTP 200 AdmissionReview (see `review.py`): a body
  that is too large, not JSON, not an AdmissionReview, or that makes a handler fail, gets a
  denial with a code and a reason - never a traceback, never a 500 the API server would
  turn into "failed calling webhook".
- No connection held by a slow client: headers must arrive within `HEADER_TIMEOUT` of the
  connection (or of the request's first byte), a body within `timeout`; and no idle
  connection closed under the API server: it is kept `IDLE_TIMEOUT` (120 s), longer than
  kube-apiserver keeps it (90 s), so a request is never written onto a connection the server
  is closing (`jobset.runtime.http_timers`).
- An answer within `timeout` seconds (the configuration's `timeoutSeconds` is 10; a handler
  stuck on a slow API call is cut off earlier with a clear message instead of the API
  server's "context deadline exceeded").
- A graceful drain on shutdown (`drain()`, then `stop()` after `--webhook-drain-seconds`):
  the server keeps answering while the pod is taken out of the Service's endpoints, and
  every answer meanwhile carries `Connection: close`, so the API server's kept-alive
  connections end after their current request and the next one dials a replica that
  stays; `stop()` then lets requests in flight finish. The lease and the controllers
  are handed over meanwhile, independently (`wiring.run_manager`).
- controller-runtime's webhook metrics on the manager's registry, so its dashboards work:
  `controller_runtime_webhook_requests_total{webhook,code}`,
  `controller_runtime_webhook_latency_seconds{webhook}`,
  `controller_runtime_webhook_requests_in_flight{webhook}`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from jobset.runtime.health import CheckResult
from jobset.runtime.http_timers import TimedAppRunner
from jobset.runtime.logging import get_logger
from jobset.webhooks.review import (
    ADMISSION_API_VERSION,
    MAX_REQUEST_BYTES,
    AdmissionRequest,
    AdmissionResponse,
    ReviewError,
    decode_review,
    encode_review,
)
from kubeutil import tls

__all__ = ["DEFAULT_TIMEOUT", "Handler", "ServingCert", "WebhookMetrics", "WebhookServer"]

Handler = Callable[[AdmissionRequest], Awaitable[AdmissionResponse]]
DEFAULT_TIMEOUT: Final = 8.0  # under the configurations' timeoutSeconds of 10


class ServingCert(tls.ServingCert):
    """The certificate the server presents, replaceable while serving (`kubeutil.tls`'s
    `ServingCert`, with the readiness check the manager's `/readyz` runs)."""

    def check(self) -> CheckResult:
        """Ready when a certificate is loaded and not expired."""
        problem = self.problem()
        return CheckResult(problem is None, problem or "")


@dataclass
class WebhookMetrics:
    requests: Counter
    latency: Histogram
    in_flight: Gauge

    @classmethod
    def create(cls, registry: CollectorRegistry | None) -> WebhookMetrics:
        kwargs = {"registry": registry}
        return cls(
            Counter(
                "controller_runtime_webhook_requests_total",
                "Total number of admission requests by HTTP status code.",
                ["webhook", "code"],
                **kwargs,  # type: ignore[arg-type]
            ),
            Histogram(
                "controller_runtime_webhook_latency_seconds",
                "Histogram of the latency of processing admission requests",
                ["webhook"],
                **kwargs,  # type: ignore[arg-type]
            ),
            Gauge(
                "controller_runtime_webhook_requests_in_flight",
                "Current number of admission requests being served.",
                ["webhook"],
                **kwargs,  # type: ignore[arg-type]
            ),
        )


@dataclass(frozen=True)
class _PathMetrics:
    """One path's metric children, looked up once (`labels()` costs a lock and a dict
    lookup per call, several per request)."""

    answered: Counter  # requests_total{code="200"}
    latency: Histogram
    in_flight: Gauge


class WebhookServer:
    """Admission handlers by path, served over TLS on host:port (port 0: any free port)."""

    def __init__(
        self,
        cert: ServingCert,
        *,
        host: str = "0.0.0.0",
        port: int = 9443,
        timeout: float = DEFAULT_TIMEOUT,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.cert = cert
        self.host = host
        self.port = port
        self.timeout = timeout
        self.handlers: dict[str, Handler] = {}
        self.metrics = WebhookMetrics.create(registry)
        self.log = get_logger("webhook-server")
        self._runner: web.AppRunner | None = None
        self.client_names: frozenset[str] | None = None  # None: no client authentication
        self.draining = False
        self._path_metrics: dict[str, _PathMetrics] = {}

    def require_client_certs(self, ca_pem: bytes, allowed_names: tuple[str, ...] = ()) -> None:
        """Serve only clients with a certificate from `ca_pem` (refused in the handshake
        otherwise) whose subject CN is one of `allowed_names` (empty: any CN), as
        kube-apiserver's front-proxy authenticator checks `requestheader-allowed-names`."""
        tls.require_client_certs(self.cert.context, ca_pem)
        self.client_names = frozenset(allowed_names)
        self.log.info(
            "webhook callers must present a client certificate",
            allowed_names=sorted(self.client_names) or "any",
        )

    def _caller_refused(self, request: web.Request) -> bool:
        if not self.client_names:
            return False
        transport = request.transport
        peercert = transport.get_extra_info("peercert") if transport is not None else None
        return tls.peer_common_name(peercert) not in self.client_names

    def register(self, path: str, handler: Handler) -> None:
        if not path.startswith("/"):
            raise ValueError(f"webhook path must start with '/': {path!r}")
        self.handlers[path] = handler

    @property
    def started(self) -> bool:
        return self._runner is not None

    def check(self) -> CheckResult:
        """Readiness: serving, with a valid certificate (upstream's certsReady + StartedChecker)."""
        if not self.started:
            return CheckResult(False, "webhook server not started")
        return self.cert.check()

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        app = web.Application(client_max_size=MAX_REQUEST_BYTES + 1)
        for path in self.handlers:
            app.router.add_post(path, self._serve)
        # Idle connections stay open longer than kube-apiserver keeps them (http_timers).
        self._runner = TimedAppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=self.cert.context)
        await site.start()
        sockets = getattr(site._server, "sockets", None) or []
        if sockets:
            self.port = sockets[0].getsockname()[1]
        self.log.info("serving webhooks", port=self.port, paths=sorted(self.handlers))

    def drain(self) -> None:
        """From now on close each connection after its answer (see the module docstring)."""
        if not self.draining:
            self.draining = True
            self.log.info("draining webhook connections", port=self.port)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # ------------------------------------------------------------------ serving

    async def _read_body(self, request: web.Request) -> bytes:
        length = request.content_length
        if length is not None and length > MAX_REQUEST_BYTES:
            raise ReviewError(
                f"request entity is too large; limit is {MAX_REQUEST_BYTES} bytes", 413
            )
        try:
            # aiohttp stops reading past `client_max_size` (MAX_REQUEST_BYTES + 1), also
            # for a chunked body without a Content-Length.
            return await request.read()
        except web.HTTPRequestEntityTooLarge:
            raise ReviewError(
                f"request entity is too large; limit is {MAX_REQUEST_BYTES} bytes", 413
            ) from None

    def _metrics_of(self, path: str) -> _PathMetrics:
        found = self._path_metrics.get(path)
        if found is None:
            m = self.metrics
            found = self._path_metrics[path] = _PathMetrics(
                m.requests.labels(path, "200"),
                m.latency.labels(path),
                m.in_flight.labels(path),
            )
        return found

    async def _serve(self, request: web.Request) -> web.Response:
        path = request.path
        handler = self.handlers[path]
        if self._caller_refused(request):
            self.metrics.requests.labels(path, "403").inc()
            return self._closing(web.Response(status=403, text="client certificate not allowed\n"))
        m = self._metrics_of(path)
        m.in_flight.inc()
        t0 = time.perf_counter()
        uid, api_version = "", ADMISSION_API_VERSION
        try:
            try:
                async with asyncio.timeout(self.timeout):
                    body = await self._read_body(request)
                    review = decode_review(body, request.headers.get("Content-Type", ""))
                    uid, api_version = review.uid, review.api_version
                    response = await handler(review)
            except ReviewError as err:
                response = AdmissionResponse.errored(err.code, err.message)
            except TimeoutError:
                response = AdmissionResponse.errored(
                    504, f"webhook {path} did not answer within {self.timeout:g}s"
                )
            except Exception:  # a handler bug must still produce an answer
                # The details go to the operator's log only: an exception's text can hold
                # parts of the request or of objects the caller may not read.
                self.log.exception("webhook handler failed", path=path, uid=uid)
                response = AdmissionResponse.errored(
                    500, f"internal error in webhook {path} (request {uid}); see the controller log"
                )
            body_out = encode_review(response, uid, api_version)
        finally:
            m.in_flight.dec()
            m.latency.observe(time.perf_counter() - t0)
        m.answered.inc()
        return self._closing(web.Response(body=body_out, content_type="application/json"))

    def _closing(self, response: web.Response) -> web.Response:
        if self.draining:
            response.force_close()  # sends Connection: close
        return response
