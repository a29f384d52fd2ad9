"""The `jobset` command. Its sub-commands and flags are a stable contract (see docs/design)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Sequence
from typing import Any

from jobset import __version__
from jobset.usercli import USER_COMMANDS, add_user_commands, run_user_command


def _add_sim_flags(p: argparse.ArgumentParser) -> None:
    from kubesim.nodespec import NODE_SPEC_HELP

    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free port)")
    p.add_argument("--kubeconfig", required=True, help="where to write the kubeconfig for clients")
    p.add_argument(
        "--sim-level",
        choices=("pods", "jobs", "none"),
        default="pods",
        help="pods: job controller, scheduler and kubelet; jobs: Job status advanced without "
        "pods; none: no simulated controllers (tests patch Job status themselves)",
    )
    p.add_argument("--nodes", default="", help=NODE_SPEC_HELP)
    p.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        help="multiply every simulated duration (0.01: `sleep 100s` takes about 1 s)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed for every simulated random choice")
    p.add_argument("--faults", default=None, help="fault-injection plan (YAML), see docs/sim.md")
    p.add_argument("--data-dir", default=None, help="keep the cluster state here across restarts")
    p.add_argument("--insecure-http", action="store_true", help="serve plain HTTP instead of HTTPS")
    p.add_argument(
        "--run-image",
        action="append",
        default=[],
        metavar="REPOSITORY=DIR",
        help="run containers of this image repository (any tag or digest) as real processes, "
        "DIR first on PATH (repeatable; needs root; see docs/sim.md)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jobset", description="JobSet controller and tools")
    parser.add_argument("--version", action="version", version=f"jobset {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    sim = sub.add_parser(
        "sim",
        help="run the simulated Kubernetes cluster",
        description="Run the simulated cluster: an API server on 127.0.0.1 plus a simulated "
        "job controller, scheduler, kubelet and garbage collector. Prints a line with "
        "'ready' once it serves; stops on SIGINT/SIGTERM.",
        formatter_class=argparse.RawTextHelpFormatter,
    )
    _add_sim_flags(sim)
    controller = sub.add_parser(
        "controller",
        help="run the JobSet controller",
        description="Run the JobSet controller against a cluster (the in-cluster config, "
        "or --kubeconfig). Stops on SIGINT/SIGTERM.",
    )
    _add_controller_flags(controller)
    dev = sub.add_parser(
        "dev",
        help="simulated cluster + JobSet CRD + controller in one process",
        description="Start a simulated cluster, install the JobSet CRD and run the controller "
        "against it, in one process. Prints a line with 'ready' once JobSets can be "
        "submitted (kubectl apply -f examples/...); stops on SIGINT/SIGTERM.",
        formatter_class=argparse.RawTextHelpFormatter,
    )
    _add_sim_flags(dev)
    # A new user's cluster needs somewhere to run pods: 4 node pools of 4 nodes by default.
    dev.set_defaults(nodes=DEV_DEFAULT_NODES)
    _add_jobset_flags(dev)
    dev.add_argument("--concurrency", type=int, default=5, help="reconcile workers")
    dev.add_argument("--metrics-port", type=int, default=-1, help="Prometheus /metrics (-1: off)")
    _add_metrics_security_flags(dev)
    dev.add_argument("--health-port", type=int, default=-1, help="/healthz, /readyz (-1: off)")
    dev.add_argument("--log-format", choices=("json", "console"), default="console")
    dev.add_argument("--log-level", default="INFO")
    dev.add_argument(
        "--webhook-port", type=int, default=0, help="admission webhook port (0: a free port)"
    )
    add_user_commands(sub)
    return parser


DEV_DEFAULT_NODES = "pools=4x4,label=cloud.google.com/gke-nodepool"


def _add_jobset_flags(p: argparse.ArgumentParser) -> None:
    """Flags of the JobSet reconciler itself (shared by `controller` and `dev`)."""
    p.add_argument(
        "--feature-gates",
        default="",
        help="comma-separated K=V of upstream feature gates "
        "(RestartJob, ElasticJobSet, InPlaceRestart, TLSOptions)",
    )
    p.add_argument(
        "--per-jobset-metrics",
        action="store_true",
        help="label jobset_* counters with each JobSet's name (unbounded cardinality; "
        "off: the jobset_name label is empty, see docs/metrics.md)",
    )


def _add_metrics_security_flags(p: argparse.ArgumentParser) -> None:
    from jobset.runtime.options import add_metrics_security_flags

    add_metrics_security_flags(p)


def _add_controller_flags(p: argparse.ArgumentParser) -> None:
    from jobset.runtime.options import add_runtime_flags

    add_runtime_flags(p)
    _add_jobset_flags(p)
    p.add_argument("--webhook-port", type=int, default=9443, help="admission webhook server port")
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


def _add_jobset_components(
    manager: Any, args: argparse.Namespace, webhook_port: int, host: str = "0.0.0.0"
) -> Any:
    """The JobSet reconciler, exclusive placement and the admission webhooks on `manager`.

    Shared by `jobset controller` and `jobset dev` so both run exactly the same product.
    Returns the webhooks, which must be started before `manager.run()` and stopped after
    (every replica serves admission, leader or not).
    """
    from jobset.controllers.features import parse_feature_gates
    from jobset.controllers.jobset_controller import JobSetController
    from jobset.placement.setup import add_placement_controllers
    from jobset.webhooks import CertOptions, WebhookOptions, setup_webhooks

    features = parse_feature_gates(args.feature_gates)
    controller = JobSetController(
        manager, features=features, per_jobset_metrics=args.per_jobset_metrics
    )
    # After the reconciler: placement reuses the Job informer it declared.
    placement = add_placement_controllers(manager)
    controller.attach_placement(placement.planner)
    cert_options = CertOptions(extra_dns_names=("localhost",) if host == "127.0.0.1" else ())
    return setup_webhooks(
        manager,
        WebhookOptions(
            port=webhook_port,
            host=host,
            features=features,
            cert_management=getattr(args, "cert_management", "internal"),
            cert_dir=getattr(args, "cert_dir", "/tmp/k8s-webhook-server/serving-certs"),
            certs=cert_options,
        ),
    )


def _check_flags(args: argparse.Namespace) -> None:
    """Reject bad flag values before anything is started (raises ValueError)."""
    from jobset.controllers.features import parse_feature_gates

    parse_feature_gates(args.feature_gates)


async def _run_manager(manager: Any, webhooks: Any) -> int:
    """Run the manager; bring the webhook server up alongside it.

    Reconciling does not wait for the webhook certificate (a missing namespace or RBAC for
    its Secret must not stop JobSets from progressing); `/readyz` stays false until the
    webhook serves, which is what a Deployment's readiness probe and `jobset dev` wait on.
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

    starting = asyncio.create_task(start_webhooks(), name="webhooks start")
    try:
        return int(await manager.run_until_signal())
    finally:
        starting.cancel()
        with contextlib.suppress(BaseException):
            await starting
        with contextlib.suppress(Exception):
            await webhooks.stop()


async def _run_controller(args: argparse.Namespace) -> int:
    from jobset.runtime import Manager, ManagerOptions
    from jobset.runtime.logging import configure_logging

    configure_logging(args.log_format, args.log_level)
    _check_flags(args)
    manager = await Manager.create(ManagerOptions.from_args(args))
    webhooks = _add_jobset_components(manager, args, args.webhook_port)
    return await _run_manager(manager, webhooks)


async def _run_dev(args: argparse.Namespace) -> int:
    from jobset.controllers.crd import apply_crds
    from jobset.runtime import Manager, ManagerOptions
    from jobset.runtime.health import Probes
    from jobset.runtime.logging import configure_logging
    from jobset.webhooks import install_webhooks
    from kubesim.cluster import SimCluster, SimOptions
    from kubesim.process import free_port

    configure_logging(args.log_format, args.log_level)
    _check_flags(args)
    options = ManagerOptions(
        kubeconfig=args.kubeconfig,
        concurrency=args.concurrency,
        metrics_port=None if args.metrics_port < 0 else args.metrics_port,
        metrics_secure=args.metrics_secure,
        metrics_cert_dir=args.metrics_cert_dir or None,
        health_port=None if args.health_port < 0 else args.health_port,
        log_format=args.log_format,
        log_level=args.log_level,
    )
    options.validate()
    cluster = SimCluster(
        SimOptions(
            port=args.port,
            kubeconfig=args.kubeconfig,
            sim_level=args.sim_level,
            nodes=args.nodes,
            time_scale=args.time_scale,
            seed=args.seed,
            faults=args.faults,
            data_dir=args.data_dir,
            tls=not args.insecure_http,
            run_images=_run_images(args),
        )
    )
    await cluster.start()
    try:
        manager = await Manager.create(options)
        await apply_crds(manager.client)
        port = args.webhook_port or free_port()
        webhooks = _add_jobset_components(manager, args, port, host="127.0.0.1")
        # The simulated API server reaches the webhook Service at this process's port.
        await install_webhooks(manager.client, target_port=port, address=f"127.0.0.1:{port}")
        run = asyncio.create_task(_run_manager(manager, webhooks))
        while not Probes.evaluate(manager.probes.readiness)[0]:
            if run.done():
                return run.result()
            await asyncio.sleep(0.05)
        print(
            f"jobset dev ready: {cluster.url} (kubeconfig {args.kubeconfig}, "
            f"sim-level {args.sim_level}, webhooks on 127.0.0.1:{port})",
            flush=True,
        )
        code = await run
    finally:
        await cluster.stop()
    print("jobset dev stopped", flush=True)
    return code


def _run_images(args: argparse.Namespace) -> dict[str, str]:
    from kubesim.kubelet.processes import parse_run_images

    return {repo: str(path) for repo, path in parse_run_images(args.run_image).items()}


async def _run_sim(args: argparse.Namespace) -> int:
    from kubesim.cluster import SimCluster, SimOptions

    options = SimOptions(
        port=args.port,
        kubeconfig=args.kubeconfig,
        sim_level=args.sim_level,
        nodes=args.nodes,
        time_scale=args.time_scale,
        seed=args.seed,
        faults=args.faults,
        data_dir=args.data_dir,
        tls=not args.insecure_http,
        run_images=_run_images(args),
    )
    cluster = SimCluster(options)
    await cluster.start()
    print(
        f"jobset sim ready: {cluster.url} (kubeconfig {args.kubeconfig}, "
        f"sim-level {args.sim_level})",
        flush=True,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await cluster.stop()
    print("jobset sim stopped", flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "sim":
        try:
            with contextlib.suppress(KeyboardInterrupt):
                return asyncio.run(_run_sim(args))
        except ValueError as exc:
            print(f"jobset sim: {exc}", file=sys.stderr)
            return 2
    if args.command in ("controller", "dev"):
        runner = _run_controller if args.command == "controller" else _run_dev
        try:
            with contextlib.suppress(KeyboardInterrupt):
                return asyncio.run(runner(args))
        except ValueError as exc:
            print(f"jobset {args.command}: {exc}", file=sys.stderr)
            return 2
        return 0
    if args.command in USER_COMMANDS:
        return run_user_command(args)
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
