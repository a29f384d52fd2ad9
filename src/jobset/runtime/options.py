"""Manager options and the command-line flags that set them.

The flags are part of `jobset controller`'s contract (docs/architecture.md): `--kubeconfig`,
`--namespace`, `--leader-elect`, `--metrics-port`, `--health-port`, `--concurrency`,
`--qps`, `--burst`, `--log-format`; the leader-election timings keep client-go's defaults
and names. `add_runtime_flags()` lets the CLI (and test fixtures) declare them once.

`--metrics-secure` (on by default for `jobset controller`, as upstream's
`--metrics-secure=true`; `--metrics-secure=false` or `--no-metrics-secure` is the explicit
opt-in to plain HTTP) serves metrics over TLS to callers the API server authenticates and
authorizes (`health.py`, `authn.py`). `--metrics-cert-dir` holds its `tls.crt`/`tls.key`
(mounted by cert-manager, reloaded when they change); without it the process serves the
certificate its internal webhook certificate management issues (signed by the CA of the
Secret jobset-webhook-server-cert, valid for the metrics Service's name, so a scraper can
verify it), or, with nothing to issue one, a self-signed certificate made in memory at
start, as controller-runtime does. `ManagerOptions.metrics_secure` itself defaults to off,
as controller-runtime's `metricsserver.Options.SecureServing` does: the library default is
plain, the command's flag is secure.
"""

from __future__ import annotations

import argparse
import os
import socket
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from kubeutil.gilswitch import LOOP_SWITCH_INTERVAL

__all__ = [
    "ManagerOptions",
    "add_metrics_security_flags",
    "add_reconcile_timeout_flag",
    "add_runtime_flags",
    "default_identity",
    "default_namespace",
    "parse_bool",
]

SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def default_identity() -> str:
    """client-go's convention: hostname + "_" + a random UUID (unique per process)."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def default_namespace() -> str:
    """Where the lease lives: $POD_NAMESPACE, the service account's namespace, or default."""
    if ns := os.environ.get("POD_NAMESPACE"):
        return ns
    try:
        return SERVICE_ACCOUNT_NAMESPACE.read_text().strip() or "default"
    except OSError:
        return "default"


@dataclass
class ManagerOptions:
    kubeconfig: str | None = None
    namespace: str | None = None  # watch only this namespace (None: all)
    # upstream's --kube-api-qps/--kube-api-burst defaults; docs/operations.md says why
    qps: float = 500.0
    burst: int = 500
    concurrency: int = 5
    # Every pass is cut after this many seconds (controller-runtime's ReconciliationTimeout;
    # 0: no limit). Generous: a large JobSet's first pass must fit at the default budget.
    reconcile_timeout: float = 60.0
    bind_address: str = "0.0.0.0"
    metrics_port: int | None = 8080  # None: no metrics server; 0: any free port
    metrics_secure: bool = False  # HTTPS + TokenReview/SubjectAccessReview on /metrics
    metrics_cert_dir: str | None = None  # tls.crt/tls.key; None: self-signed in memory
    health_port: int | None = 8081
    # Freeze what survives each full garbage collection (kubeutil.gcfreeze): for a process
    # of its own (`jobset controller` sets it), never for a manager inside another's heap.
    gc_freeze: bool = False
    # The interpreter-lock switch interval while the manager runs (kubeutil.gilswitch): for a
    # process of its own (`jobset controller` sets it); None leaves the interpreter's.
    switch_interval: float | None = None
    leader_elect: bool = False
    leader_election_id: str = "jobset-controller-leader"
    leader_election_namespace: str = field(default_factory=default_namespace)
    identity: str = field(default_factory=default_identity)
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    graceful_shutdown_timeout: float = 30.0
    cache_sync_timeout: float = 120.0
    log_format: str = "json"
    log_level: str = "INFO"

    def validate(self) -> None:
        """Reject contradictory settings (ValueError naming the flag)."""
        if self.metrics_cert_dir and not self.metrics_secure:
            raise ValueError("--metrics-cert-dir is only used with --metrics-secure")
        if self.metrics_cert_dir and self.metrics_port is None:
            raise ValueError("--metrics-cert-dir needs a metrics server (--metrics-port is -1)")
        if self.reconcile_timeout < 0:
            raise ValueError("--reconcile-timeout must not be negative (0: no limit)")

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ManagerOptions:
        def port(value: int) -> int | None:
            return None if value < 0 else value

        options = cls(
            kubeconfig=args.kubeconfig,
            namespace=args.namespace or None,
            qps=args.qps,
            burst=args.burst,
            concurrency=args.concurrency,
            reconcile_timeout=args.reconcile_timeout,
            bind_address=args.bind_address,
            metrics_port=port(args.metrics_port),
            metrics_secure=args.metrics_secure,
            metrics_cert_dir=args.metrics_cert_dir or None,
            health_port=port(args.health_port),
            gc_freeze=True,  # the command's process is the manager's own
            switch_interval=LOOP_SWITCH_INTERVAL,  # ... and so is its interpreter
            leader_elect=args.leader_elect,
            leader_election_id=args.leader_election_id,
            leader_election_namespace=args.leader_election_namespace or default_namespace(),
            identity=args.leader_election_identity or default_identity(),
            lease_duration=args.leader_elect_lease_duration,
            renew_deadline=args.leader_elect_renew_deadline,
            retry_period=args.leader_elect_retry_period,
            graceful_shutdown_timeout=args.graceful_shutdown_timeout,
            log_format=args.log_format,
            log_level=args.log_level,
        )
        options.validate()
        return options


def parse_bool(text: str) -> bool:
    """A flag's boolean value as Go's `strconv.ParseBool` reads it (`--metrics-secure=false`
    is how upstream's manifests turn it off)."""
    value = text.strip().lower()
    if value in ("1", "t", "true", "y", "yes", "on"):
        return True
    if value in ("0", "f", "false", "n", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def add_metrics_security_flags(parser: argparse.ArgumentParser, *, secure: bool = True) -> None:
    """`--metrics-secure[=BOOL]`, `--no-metrics-secure` and `--metrics-cert-dir` (shared by
    `controller`, secure by default, and `dev`, whose loopback-only metrics are plain unless
    asked: `secure=False`)."""
    help_secure = (
        "serve /metrics over HTTPS to callers whose bearer token the API server "
        "authenticates (TokenReview) and authorizes for GET /metrics (SubjectAccessReview)"
    )
    parser.add_argument(
        "--metrics-secure",
        nargs="?",
        const=True,
        default=secure,
        type=parse_bool,
        metavar="BOOL",
        help=f"{help_secure} (default {str(secure).lower()}; =false: plain HTTP)",
    )
    parser.add_argument(
        "--no-metrics-secure",
        dest="metrics_secure",
        action="store_false",
        help="plain HTTP /metrics without authentication (same as --metrics-secure=false)",
    )
    parser.add_argument(
        "--metrics-cert-dir",
        default="",
        help="directory of tls.crt/tls.key for --metrics-secure, reloaded when they change "
        "(default: the certificate the internal webhook certificate management issues for "
        "the metrics Service, else a self-signed one made at start)",
    )


def add_reconcile_timeout_flag(parser: argparse.ArgumentParser) -> None:
    """`--reconcile-timeout` (shared by `controller` and `dev`)."""
    parser.add_argument(
        "--reconcile-timeout",
        type=float,
        default=ManagerOptions.reconcile_timeout,
        help="seconds a reconcile pass may run before it is cancelled, logged, counted and "
        "requeued with backoff (0: no limit; default %(default)s)",
    )


def add_runtime_flags(parser: argparse.ArgumentParser) -> None:
    d = ManagerOptions(leader_election_namespace="", identity="")
    add = parser.add_argument
    add("--kubeconfig", default=None, help="kubeconfig file (default: in-cluster config)")
    add("--namespace", default="", help="watch only this namespace (default: all)")
    add(
        "--qps",
        "--kube-api-qps",  # upstream's name, so its manifests' flags work here too
        dest="qps",
        type=float,
        default=d.qps,
        help="client-side request rate limit (per concern, see docs/operations.md)",
    )
    add(
        "--burst",
        "--kube-api-burst",
        dest="burst",
        type=int,
        default=d.burst,
        help="client-side request burst",
    )
    add("--concurrency", type=int, default=d.concurrency, help="reconcile workers per controller")
    add_reconcile_timeout_flag(parser)
    add("--bind-address", default=d.bind_address, help="address of the metrics/health servers")
    add("--metrics-port", type=int, default=d.metrics_port, help="Prometheus /metrics (-1: off)")
    add_metrics_security_flags(parser)
    add("--health-port", type=int, default=d.health_port, help="/healthz and /readyz (-1: off)")
    add("--leader-elect", action="store_true", help="run leader election (HA replicas)")
    add("--leader-election-id", default=d.leader_election_id, help="name of the Lease")
    add("--leader-election-namespace", default="", help="namespace of the Lease")
    add(
        "--leader-election-identity",
        default="",
        help="this replica's identity (default: host_uuid)",
    )
    add("--leader-elect-lease-duration", type=float, default=d.lease_duration)
    add("--leader-elect-renew-deadline", type=float, default=d.renew_deadline)
    add("--leader-elect-retry-period", type=float, default=d.retry_period)
    add("--graceful-shutdown-timeout", type=float, default=d.graceful_shutdown_timeout)
    add("--log-format", choices=("json", "console"), default=d.log_format)
    add("--log-level", default=d.log_level)
