"""Wiring of the admission webhooks into the controller process, and their installation.

`setup_webhooks(manager, options)` registers the four handlers on a TLS server, declares
the caches the pod webhook reads (shared with placement), adds the `webhook` readiness
check, and returns a `Webhooks` whose `start()` brings up certificates and the server, and
whose `stop()` takes them down. Start it before `manager.run()` and stop it after: every
replica serves webhooks, leader or not.

Certificates: `internal` (default, upstream's `internalCertManagement.enable: true`) keeps
them in a Secret managed by `CertRotator`; `files` serves `tls.crt`/`tls.key` from
`cert_dir` (mounted by cert-manager) and reloads them when they change.

`install_webhooks(client, ...)` creates the namespace, Service and the two configurations
(from `manifests.py`); `jobset dev` and the tests call it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from jobset.api import constants as c
from jobset.api.validation import DEFAULT_LIMITS, Limits
from jobset.placement.caches import PlacementCaches, node_informer, pod_informer
from jobset.runtime.certfiles import CertFiles
from jobset.runtime.client import NAMESPACES, SERVICES, ApiError, Client, Resource
from jobset.runtime.health import CheckResult
from jobset.runtime.manager import Manager
from jobset.webhooks import manifests
from jobset.webhooks.certcontroller import (
    MUTATING_CONFIGURATIONS,
    VALIDATING_CONFIGURATIONS,
    CertOptions,
    CertRotator,
)
from jobset.webhooks.clientauth import (
    ClientAuth,
    client_auth_from_cluster,
    client_auth_from_file,
)
from jobset.webhooks.jobset_webhook import JobSetWebhook
from jobset.webhooks.pod_webhook import PodWebhook
from jobset.webhooks.server import DEFAULT_TIMEOUT, ServingCert, WebhookServer

__all__ = ["WebhookOptions", "Webhooks", "install_webhooks", "setup_webhooks"]


@dataclass
class WebhookOptions:
    port: int = manifests.WEBHOOK_PORT
    host: str = "0.0.0.0"
    timeout: float = DEFAULT_TIMEOUT
    cert_management: Literal["internal", "files"] = "internal"
    cert_dir: str = "/tmp/k8s-webhook-server/serving-certs"
    certs: CertOptions = field(default_factory=CertOptions)
    features: Mapping[str, bool] = field(default_factory=dict)
    # --max-jobs-per-jobset / --max-pods-per-job (the controller applies the same)
    limits: Limits = DEFAULT_LIMITS
    # Callers must be the API server (clientauth.py): --webhook-client-ca-file with
    # --webhook-client-names, or --webhook-client-ca-from-cluster. Off by default.
    client_ca_file: str = ""
    client_names: str = ""
    client_ca_from_cluster: bool = False


class Webhooks:
    """The webhook server and its certificate source, started and stopped together."""

    def __init__(
        self,
        server: WebhookServer,
        serving: ServingCert,
        rotator: CertRotator | None,
        files: CertFiles | None,
        client_auth: Callable[[], Awaitable[ClientAuth | None]] | None = None,
    ) -> None:
        self.server = server
        self.serving = serving
        self.rotator = rotator
        self.files = files
        self.client_auth = client_auth

    def check(self) -> CheckResult:
        server = self.server.check()
        if not server.ok or self.rotator is None:
            return server
        return self.rotator.check()

    async def start(self, first_timeout: float | None = 60.0) -> None:
        """Certificates first, then the TLS server; `first_timeout` bounds the wait for the
        first certificate (None: wait as long as it takes, readiness says why)."""
        if self.rotator is not None:
            await self.rotator.start(first_timeout)
        if self.files is not None:
            await self.files.start(first_timeout)
        auth = await self.client_auth() if self.client_auth is not None else None
        if auth is not None:
            self.server.require_client_certs(auth.ca_pem, auth.allowed_names)
        await self.server.start()

    async def stop(self) -> None:
        await self.server.stop()
        if self.rotator is not None:
            await self.rotator.stop()
        if self.files is not None:
            await self.files.stop()
        self.serving.close()


def setup_webhooks(manager: Manager, options: WebhookOptions | None = None) -> Webhooks:
    """See the module docstring."""
    options = options or WebhookOptions()
    serving = ServingCert()
    server = WebhookServer(
        serving,
        host=options.host,
        port=options.port,
        timeout=options.timeout,
        registry=manager.metrics.registry,
    )
    jobsets = JobSetWebhook(manager.client_for("webhooks"), options.features, limits=options.limits)
    pods = PodWebhook(PlacementCaches(pod_informer(manager), node_informer(manager)))
    server.register(c.MUTATING_JOBSET_WEBHOOK_PATH, jobsets.mutate)
    server.register(c.VALIDATING_JOBSET_WEBHOOK_PATH, jobsets.validate)
    server.register(c.MUTATING_POD_WEBHOOK_PATH, pods.mutate)
    server.register(c.VALIDATING_POD_WEBHOOK_PATH, pods.validate)
    rotator = (
        CertRotator(manager.client_for("webhooks"), serving, options.certs, metrics=manager.metrics)
        if options.cert_management == "internal"
        else None
    )
    files = (
        CertFiles(Path(options.cert_dir), serving, metrics=manager.metrics)
        if options.cert_management == "files"
        else None
    )
    if options.client_ca_file and options.client_ca_from_cluster:
        raise ValueError(
            "--webhook-client-ca-file and --webhook-client-ca-from-cluster exclude each other"
        )
    client_auth: Callable[[], Awaitable[ClientAuth | None]] | None = None
    if options.client_ca_file:
        path, names = options.client_ca_file, options.client_names

        async def client_auth() -> ClientAuth | None:
            return client_auth_from_file(path, names)

    elif options.client_ca_from_cluster:
        reader = manager.client_for("webhooks")

        async def client_auth() -> ClientAuth | None:
            return await client_auth_from_cluster(reader)

    webhooks = Webhooks(server, serving, rotator, files, client_auth)
    manager.add_readiness_check("webhook", webhooks.check)
    return webhooks


async def _apply(client: Client, resource: Resource, obj: dict[str, Any]) -> None:
    """Create, or replace keeping the server's caBundle (so a re-install does not undo the
    injection; the rotator would restore it, but why make calls fail meanwhile)."""
    meta = obj["metadata"]
    try:
        await client.create(resource, obj, meta.get("namespace"))
        return
    except ApiError as err:
        if not err.already_exists:
            raise
    current = await client.get(resource, meta["name"], meta.get("namespace"))
    merged = dict(obj)
    merged["metadata"] = {**meta, "resourceVersion": current["metadata"]["resourceVersion"]}
    if "webhooks" in obj:
        bundles = {
            h.get("name"): (h.get("clientConfig") or {}).get("caBundle")
            for h in current.get("webhooks") or []
        }
        for hook in merged["webhooks"]:
            if bundles.get(hook["name"]):
                hook["clientConfig"]["caBundle"] = bundles[hook["name"]]
    if resource is SERVICES:
        merged["spec"] = {**current.get("spec", {}), **obj["spec"]}
    await client.update(resource, merged)


async def install_webhooks(
    client: Client,
    *,
    namespace: str = manifests.NAMESPACE,
    target_port: int = manifests.WEBHOOK_PORT,
    address: str | None = None,
) -> None:
    """Install the namespace, the webhook Service and both configurations."""
    try:
        await client.create(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        )
    except ApiError as err:
        if not err.already_exists:
            raise
    objects = manifests.manifests(namespace, target_port, address)
    await _apply(client, SERVICES, objects[0])
    await _apply(client, MUTATING_CONFIGURATIONS, objects[1])
    await _apply(client, VALIDATING_CONFIGURATIONS, objects[2])
