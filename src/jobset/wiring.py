"""The product assembled and run: `jobset controller`.

`add_jobset_components` puts the JobSet reconciler (`jobset.controllers`), exclusive placement
(`jobset.placement`) and the admission webhooks (`jobset.webhooks`) on a runtime `Manager`;
`jobset controller` (`run_controller`) and `jobset dev` (`jobset.dev.commands`) both call it,
so the simulated setup runs exactly the product. The flags of the controller process are
declared here too. Imports are deferred into the functions: `jobset get` builds the same
parser and should not load the reconciler.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jobset.api.validation import Limits

__all__ = [
    "add_controller_flags",
    "add_jobset_components",
    "add_jobset_flags",
    "add_metrics_security_flags",
    "add_reconcile_timeout_flag",
    "check_flags",
    "jobset_limits",
    "run_controller",
    "run_manager",
]


# The defaults of --max-jobs-per-jobset / --max-pods-per-job (jobset.api.validation holds
# them; repeated so that building the parser loads no API module). A test checks they agree.
DEFAULT_MAX_JOBS_PER_JOBSET = 100_000
DEFAULT_MAX_PODS_PER_JOB = 100_000


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def jobset_limits(args: argparse.Namespace) -> Limits:
    """The `jobset.api.validation.Limits` the flags ask for."""
    from jobset.api.validation import Limits

    return Limits(
        max_jobs_per_jobset=getattr(args, "max_jobs_per_jobset", DEFAULT_MAX_JOBS_PER_JOBSET),
        max_pods_per_job=getattr(args, "max_pods_per_job", DEFAULT_MAX_PODS_PER_JOB),
    )


def add_jobset_flags(p: argparse.ArgumentParser) -> None:
    """Flags of the JobSet reconciler itself (shared by `controller` and `dev`)."""
    p.add_argument(
        "--feature-gates",
        default="",
        help="comma-separated K=V of feature gates: upstream's (RestartJob, ElasticJobSet, "
        "InPlaceRestart, TLSOptions, MutablePodResourcesForSuspendedJobSets, "
        "ExecutionAttemptsTracking) and this "
        "project's (ElasticReplicas)",
    )
    p.add_argument(
        "--max-jobs-per-jobset",
        type=_positive_int,
        default=DEFAULT_MAX_JOBS_PER_JOBSET,
        help="refuse JobSets asking for more Jobs than this (the sum of replicas; "
        "admission and stored JobSets alike; default %(default)s)",
    )
    p.add_argument(
        "--max-pods-per-job",
        type=_positive_int,
        default=DEFAULT_MAX_PODS_PER_JOB,
        help="refuse JobSets whose Jobs ask for more pods than this (parallelism or "
        "completions; default %(default)s)",
    )
    p.add_argument(
        "--per-jobset-metrics",
        action="store_true",
        help="label jobset_* counters with each JobSet's name (unbounded cardinality; "
        "off: the jobset_name label is empty, see docs/metrics.md)",
    )


def add_metrics_security_flags(p: argparse.ArgumentParser, *, secure: bool = True) -> None:
    from jobset.runtime.options import add_metrics_security_flags

    add_metrics_security_flags(p, secure=secure)


def add_reconcile_timeout_flag(p: argparse.ArgumentParser) -> None:
    from jobset.runtime.options import add_reconcile_timeout_flag

    add_reconcile_timeout_flag(p)


def add_controller_flags(p: argparse.ArgumentParser) -> None:
    from jobset.runtime.options import add_runtime_flags

    add_runtime_flags(p)
    add_jobset_flags(p)
    p.add_argument("--webhook-port", type=int, default=9443, help="admission webhook server port")
    p.add_argument(
        "--webhook-drain-seconds",
        type=float,
        default=0.0,
        help="on SIGTERM keep serving admission webhooks this long (readiness already false, "
        "each answer closing its connection) so that endpoints and the API server's "
        "connections move to other replicas first; the chart sets 5 (default: 0, stop at once)",
    )
    p.add_argument(
        "--cert-management",
        choices=("internal", "files"),
        default="internal",
        help="internal: the controller keeps its own CA and serving certificate in a Secret and "
        "injects the caBundle; files: serve tls.crt/tls.key from --cert-dir (cert-manager)",
    )
    p.add_argument(
        "--cert-dir",
        default="/tmp/k8s-webhook-server/serving-certs",
        help="directory of tls.crt/tls.key with --cert-management=files",
    )
    p.add_argument(
        "--webhook-client-ca-file",
        default="",
        help="serve webhooks only to clients with a certificate from this CA bundle (the API "
        "server, configured with --admission-control-config-file; docs/operations.md); "
        "default: no client authentication",
    )
    p.add_argument(
        "--webhook-client-names",
        default="",
        help="with --webhook-client-ca-file: comma-separated certificate CNs allowed "
        "(default: any certificate from the CA)",
    )
    p.add_argument(
        "--webhook-client-ca-from-cluster",
        action="store_true",
        help="serve webhooks only to clients with a certificate from the API server's "
        "front-proxy CA and an allowed name, as published in "
        "kube-system/extension-apiserver-authentication (requestheader-*)",
    )


def add_jobset_components(
    manager: Any, args: argparse.Namespace, webhook_port: int, host: str = "0.0.0.0"
) -> Any:
    """The JobSet reconciler, exclusive placement and the admission webhooks on `manager`.

    Shared by `jobset controller` and `jobset dev` so both run exactly the same product.
    Returns the webhooks, which must be started before `manager.run()` and stopped after
    (every replica serves admission, leader or not).
    """
    from jobset.controllers.features import parse_feature_gates
    from jobset.controllers.gang_controller import GangController
    from jobset.controllers.jobset_controller import JobSetController
    from jobset.placement.setup import add_placement_controllers
    from jobset.webhooks import CertOptions, WebhookOptions, manifests, setup_webhooks
    from kubeutil.tls import ServingCert

    features = parse_feature_gates(args.feature_gates)
    limits = jobset_limits(args)
    controller = JobSetController(
        manager, features=features, per_jobset_metrics=args.per_jobset_metrics, limits=limits
    )
    GangController(manager)  # scheduling.jobset-py.dev/gang (gang_controller.py)
    # After the reconciler: placement reuses the Job informer it declared.
    placement = add_placement_controllers(manager)
    controller.attach_placement(placement.planner)
    cert_management: Any = getattr(args, "cert_management", "internal")
    opts = manager.options
    # --metrics-secure without --metrics-cert-dir: the metrics server presents the internal
    # certificate too (named for the metrics Service, signed by the CA a ServiceMonitor
    # verifies against). With --cert-management=files, cert-manager's metrics Certificate
    # comes in through --metrics-cert-dir (chart and config/cert-manager); without that flag,
    # the self-signed fallback.
    metrics_from_rotator = (
        opts.metrics_secure
        and opts.metrics_port is not None
        and not opts.metrics_cert_dir
        and cert_management == "internal"
    )
    cert_options = CertOptions(
        extra_dns_names=("localhost",) if host == "127.0.0.1" else (),
        metrics_service_name=manifests.METRICS_SERVICE if metrics_from_rotator else "",
    )
    webhooks = setup_webhooks(
        manager,
        WebhookOptions(
            port=webhook_port,
            host=host,
            features=features,
            limits=limits,
            cert_management=cert_management,
            cert_dir=getattr(args, "cert_dir", "/tmp/k8s-webhook-server/serving-certs"),
            certs=cert_options,
            client_ca_file=getattr(args, "webhook_client_ca_file", ""),
            client_names=getattr(args, "webhook_client_names", ""),
            client_ca_from_cluster=getattr(args, "webhook_client_ca_from_cluster", False),
        ),
    )
    if metrics_from_rotator and webhooks.rotator is not None:
        metrics_cert = ServingCert()
        webhooks.rotator.serve_also(metrics_cert)
        manager.use_metrics_cert(metrics_cert)
    return webhooks


def check_flags(args: argparse.Namespace) -> None:
    """Reject bad flag values before anything is started (raises ValueError)."""
    from jobset.controllers.features import parse_feature_gates

    parse_feature_gates(args.feature_gates)


async def run_manager(manager: Any, webhooks: Any, drain_seconds: float = 0.0) -> int:
    """Run the manager; bring the webhook server up alongside it.

    Reconciling does not wait for the webhook certificate (a missing namespace or RBAC for
    its Secret must not stop JobSets from progressing); `/readyz` stays false until the
    webhook serves, which is what a Deployment's readiness probe and `jobset dev` wait on.

    Stopping: `/readyz` turns false at once and the manager hands over (controllers drained,
    lease released) while the webhook server drains (`WebhookServer.drain`); the server
    stops `drain_seconds` after the stop began, or once the hand-over is done if later,
    and only then do the informers and the client it reads from stop (a shutdown hook of
    the manager). An upgrade's old pods so keep answering admissions until nothing routes
    to them any more.
    """
    from jobset.runtime.logging import get_logger

    log = get_logger("webhooks")

    async def start_webhooks() -> None:
        try:
            await webhooks.start(first_timeout=None)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # e.g. the port is taken: stay up, report not ready
            log.error("webhook server failed to start", error=repr(exc))

    loop = asyncio.get_running_loop()
    stopping_at: list[float] = []

    async def drain_when_stopping() -> None:
        await manager.wait_stopping()
        stopping_at.append(loop.time())
        webhooks.server.drain()

    async def stop_webhooks_after_drain() -> None:
        # A shutdown hook: the caches and the client the webhooks use are still up.
        if stopping_at and webhooks.server.started:
            remaining = drain_seconds - (loop.time() - stopping_at[0])
            if remaining > 0:
                log.info("webhooks draining", seconds=round(remaining, 3))
                await asyncio.sleep(remaining)
        await webhooks.stop()

    manager.add_shutdown_hook(stop_webhooks_after_drain)
    starting = asyncio.create_task(start_webhooks(), name="webhooks start")
    draining = asyncio.create_task(drain_when_stopping(), name="webhooks drain")
    try:
        return int(await manager.run_until_signal())
    finally:
        draining.cancel()
        with contextlib.suppress(BaseException):
            await draining
        starting.cancel()
        with contextlib.suppress(BaseException):
            await starting
        with contextlib.suppress(Exception):
            await webhooks.stop()


async def run_controller(args: argparse.Namespace) -> int:
    from jobset.runtime import Manager, ManagerOptions
    from jobset.runtime.logging import configure_logging

    configure_logging(args.log_format, args.log_level)
    check_flags(args)
    manager = await Manager.create(ManagerOptions.from_args(args))
    webhooks = add_jobset_components(manager, args, args.webhook_port)
    return await run_manager(manager, webhooks, args.webhook_drain_seconds)
