"""Internal certificate management: the controller's own equivalent of cert-controller.

Upstream's manager embeds open-policy-agent's cert-controller rotator; this does the same
job with the runtime's client and informers:

1. keep a CA and a serving certificate for `<service>.<namespace>.svc` in a Secret
   (`ca.crt`, `ca.key`, `tls.crt`, `tls.key`), filling it when empty or unusable and
   replacing the serving certificate `lookahead` before it (or the CA) expires. The installs
   ship the Secret empty and grant no `create` (RBAC cannot limit create to a name); the
   rotator still creates it where it may (`jobset dev`, an admin's kubeconfig);
2. serve that certificate (`ServingCert.update`, no restart, no files to mount) - on the
   webhook server and, with `serve_also` (`--metrics-secure` without `--metrics-cert-dir`),
   on the secure metrics server too, which is why the certificate also names the metrics
   Service (`CertOptions.metrics_service_name`): a ServiceMonitor then verifies the scrape
   against `ca.crt` of the Secret and that name;
3. inject the CA as `caBundle` into every webhook of the named Mutating/Validating
   configurations, and again whenever someone changes them (a `kubectl apply` of the
   manifests resets caBundle to empty: the watch puts it back within a moment).

Every replica runs it, leader or not, because every replica serves webhooks behind the
Service. Replicas racing to create or rotate the Secret are serialized by the API server:
creation is AlreadyExists for all but one and updates carry the resourceVersion, so the
losers re-read and adopt the winner's certificate. Readiness (`check`) turns true once a
valid certificate is served and the bundle is injected, as upstream's readyz waits for
`certsReady`.

Every pass reads the Secret and loads its certificate: it counts in controller-runtime's
`certwatcher_read_certificate_total` (and, when reading or loading fails,
`certwatcher_read_certificate_errors_total`), as upstream's certwatcher counts its reads of
the files cert-controller writes.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime as dt
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from jobset.runtime.client import SECRETS, ApiError, Client, Object, Resource
from jobset.runtime.health import CheckResult
from jobset.runtime.informer import FuncHandler, Informer
from jobset.runtime.logging import get_logger
from jobset.webhooks import certs
from jobset.webhooks.server import ServingCert
from kubeutil import tls
from kubeutil.aio import cancel_and_wait

if TYPE_CHECKING:
    from jobset.runtime.metrics import RuntimeMetrics

__all__ = [
    "MUTATING_CONFIGURATIONS",
    "VALIDATING_CONFIGURATIONS",
    "CertOptions",
    "CertRotator",
    "controller_namespace",
]

MUTATING_CONFIGURATIONS: Final = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "mutatingwebhookconfigurations",
    "MutatingWebhookConfiguration",
    namespaced=False,
)
VALIDATING_CONFIGURATIONS: Final = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration",
    namespaced=False,
)
SERVICE_ACCOUNT_NAMESPACE: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
DEFAULT_NAMESPACE: Final = "jobset-system"


def controller_namespace() -> str:
    """Where the controller's Secret and Service live: $POD_NAMESPACE, the service
    account's namespace, else `jobset-system` (upstream's default)."""
    if ns := os.environ.get("POD_NAMESPACE"):
        return ns
    try:
        return SERVICE_ACCOUNT_NAMESPACE.read_text().strip() or DEFAULT_NAMESPACE
    except OSError:
        return DEFAULT_NAMESPACE


@dataclass
class CertOptions:
    """Names and timings of internal certificate management (upstream's defaults)."""

    namespace: str = field(default_factory=controller_namespace)
    secret_name: str = "jobset-webhook-server-cert"
    service_name: str = "jobset-webhook-service"
    mutating_configuration: str = "jobset-mutating-webhook-configuration"
    validating_configuration: str = "jobset-validating-webhook-configuration"
    validity: dt.timedelta = certs.DEFAULT_VALIDITY
    ca_validity: dt.timedelta = certs.DEFAULT_VALIDITY
    lookahead: dt.timedelta = certs.DEFAULT_LOOKAHEAD
    check_interval: float = 12 * 3600.0
    extra_dns_names: tuple[str, ...] = ()
    # The metrics Service, named in the certificate when the metrics server serves it too
    # (empty: not named).
    metrics_service_name: str = ""

    @property
    def dns_name(self) -> str:
        return f"{self.service_name}.{self.namespace}.svc"

    @property
    def dns_names(self) -> list[str]:
        metrics = (
            [f"{self.metrics_service_name}.{self.namespace}.svc"]
            if self.metrics_service_name
            else []
        )
        return [self.dns_name, *metrics, *self.extra_dns_names]


def _decode(data: dict[str, Any] | None) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for k, v in (data or {}).items():
        try:
            out[k] = base64.b64decode(str(v), validate=True)
        except ValueError:
            continue
    return out


def _encode(data: dict[str, bytes]) -> dict[str, str]:
    return {k: base64.b64encode(v).decode() for k, v in data.items()}


class _Retry(Exception):
    """Another writer got there first: read again."""


class CertRotator:
    """See the module docstring. `start()` returns once the first certificate is served."""

    def __init__(
        self,
        client: Client,
        serving: ServingCert,
        options: CertOptions,
        *,
        metrics: RuntimeMetrics | None = None,
    ) -> None:
        self.client = client
        self.serving = serving
        self.also_serving: list[tls.ServingCert] = []
        self.metrics = metrics
        self.options = options
        self.bundle: certs.CertBundle | None = None
        self.injected = False
        self.rotations = 0  # certificates this replica issued
        self.injections = 0  # caBundle writes this replica made
        self.log = get_logger("cert-rotator", secret=f"{options.namespace}/{options.secret_name}")
        self._changed = asyncio.Event()
        self._informers: list[Informer] = []
        self._task: asyncio.Task[None] | None = None
        self._last_error = ""

    def serve_also(self, serving: tls.ServingCert) -> None:
        """Keep `serving` loaded with the same certificate (the secure metrics server's)."""
        self.also_serving.append(serving)
        if self.bundle is not None:
            serving.update(self.bundle.cert, self.bundle.key)

    # ------------------------------------------------------------------ lifecycle

    async def start(self, first_timeout: float | None = 60.0) -> None:
        """Start rotating; return once a serving certificate exists (or raise TimeoutError
        after `first_timeout` seconds; None waits as long as it takes)."""
        opts = self.options
        poke = FuncHandler(
            add=lambda _: self._changed.set(),
            update=lambda _o, _n: self._changed.set(),
            delete=lambda _: self._changed.set(),
        )
        for resource, namespace, name in (
            (SECRETS, opts.namespace, opts.secret_name),
            (MUTATING_CONFIGURATIONS, None, opts.mutating_configuration),
            (VALIDATING_CONFIGURATIONS, None, opts.validating_configuration),
        ):
            inf = Informer(
                self.client, resource, namespace=namespace, field_selector=f"metadata.name={name}"
            )
            inf.add_event_handler(poke)
            inf.start()
            self._informers.append(inf)
        self._task = asyncio.create_task(self._run(), name="cert rotator")
        loop = asyncio.get_running_loop()
        deadline = None if first_timeout is None else loop.time() + first_timeout
        while self.serving.cert_pem is None:
            if self._task.done():
                self._task.result()
            if deadline is not None and loop.time() > deadline:
                raise TimeoutError(
                    f"no webhook certificate after {first_timeout}s: {self._last_error}"
                )
            await asyncio.sleep(0.05)

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)
        for inf in self._informers:
            await inf.stop()
        self._informers.clear()

    def check(self) -> CheckResult:
        served = self.serving.check()
        if not served.ok:
            return served
        if not self.injected:
            return CheckResult(False, f"caBundle not injected yet {self._last_error}".strip())
        return CheckResult(True)

    # ------------------------------------------------------------------ loop

    async def _run(self) -> None:
        backoff = 0.2
        while True:
            self._changed.clear()
            try:
                await self.ensure()
                backoff = 0.2
                wait = self._next_check()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._last_error = repr(exc)
                self.log.warning("certificate reconcile failed", error=repr(exc))
                wait = backoff
                backoff = min(backoff * 2, 30.0)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), wait)

    def _next_check(self) -> float:
        """Seconds until the next periodic check: the interval, or sooner if the bundle
        enters its rotation window before that."""
        wait = self.options.check_interval
        if self.bundle is not None:
            rotate_at = self.bundle.expires() - self.options.lookahead
            until = (rotate_at - dt.datetime.now(dt.UTC)).total_seconds()
            wait = min(wait, max(until, 0.05))
        return wait

    async def ensure(self) -> certs.CertBundle:
        """One pass: a good bundle in the Secret, served, and injected."""
        bundle = await self._read_and_serve()
        await self._inject(bundle.ca_cert)
        self.injected = True
        self._last_error = ""
        return bundle

    async def _read_and_serve(self) -> certs.CertBundle:
        """A good bundle in the Secret, loaded into every server (one certificate read)."""
        if self.metrics is not None:
            self.metrics.certwatcher_read_certificate_total.inc()
        try:
            for _ in range(10):
                try:
                    bundle = await self._ensure_secret()
                    break
                except _Retry:
                    continue
            else:
                raise RuntimeError("the certificate Secret keeps changing under us")
            self.bundle = bundle
            if self.serving.update(bundle.cert, bundle.key):
                self.log.info("serving certificate loaded", expires=bundle.expires().isoformat())
            for other in self.also_serving:
                other.update(bundle.cert, bundle.key)
        except asyncio.CancelledError:
            raise
        except Exception:
            if self.metrics is not None:
                self.metrics.certwatcher_read_certificate_errors_total.inc()
            raise
        return bundle

    async def _ensure_secret(self) -> certs.CertBundle:
        opts = self.options
        try:
            secret: Object | None = await self.client.get(SECRETS, opts.secret_name, opts.namespace)
        except ApiError as err:
            if not err.not_found:
                raise
            secret = None
        current = certs.CertBundle.from_secret_data(_decode((secret or {}).get("data")))
        problem = "missing" if current is None else current.problem(opts.dns_names, opts.lookahead)
        if problem is None and current is not None:
            return current
        fresh = certs.issue_bundle(
            opts.dns_names,
            opts.validity,
            ca_validity=opts.ca_validity,
            reuse_ca=current,
            lookahead=opts.lookahead,
        )
        data = _encode(fresh.secret_data())
        try:
            if secret is None:
                await self.client.create(
                    SECRETS,
                    {
                        "apiVersion": "v1",
                        "kind": "Secret",
                        "metadata": {"name": opts.secret_name, "namespace": opts.namespace},
                        "data": data,
                    },
                    opts.namespace,
                )
            else:
                updated = dict(secret)
                updated["data"] = {**(secret.get("data") or {}), **data}
                await self.client.update(SECRETS, updated)
        except ApiError as err:
            if err.already_exists or err.conflict:
                raise _Retry from None
            if secret is None and err.status == 403:
                # The installs ship the Secret and grant no create (RBAC cannot limit create
                # to a name): say what is missing rather than only "forbidden".
                raise RuntimeError(
                    f"Secret {opts.namespace}/{opts.secret_name} does not exist and the "
                    "controller may not create it: install it (empty) with the manifests "
                    f"(config/webhook/secret.yaml, the chart): {err.message}"
                ) from err
            raise
        self.rotations += 1
        self.log.info("issued webhook certificate", reason=problem, dns_names=opts.dns_names)
        return fresh

    async def _inject(self, ca_pem: bytes) -> None:
        bundle = base64.b64encode(ca_pem).decode()
        opts = self.options
        for resource, name in (
            (MUTATING_CONFIGURATIONS, opts.mutating_configuration),
            (VALIDATING_CONFIGURATIONS, opts.validating_configuration),
        ):
            for _ in range(10):
                try:
                    config = await self.client.get(resource, name)
                except ApiError as err:
                    if err.not_found:
                        break  # nothing registered under that name (yet): nothing to inject
                    raise
                hooks = config.get("webhooks") or []
                if all((h.get("clientConfig") or {}).get("caBundle") == bundle for h in hooks):
                    break
                for hook in hooks:
                    hook.setdefault("clientConfig", {})["caBundle"] = bundle
                try:
                    await self.client.update(resource, config)
                except ApiError as err:
                    if err.conflict:
                        continue
                    raise
                self.injections += 1
                self.log.info("injected caBundle", configuration=name)
                break
