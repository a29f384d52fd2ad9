"""`jobset sim` and `jobset dev`: the simulated cluster alone, or with the product on it.

The only commands that import the simulator (`kubesim`, whose dependencies are the `[sim]`
extra: `missing_sim_extra` turns their absence into one line). `jobset dev` starts a
`kubesim.cluster.SimCluster`, installs the CRD (`jobset.controllers.crd`) and the webhook
configurations, and runs the same components as `jobset controller` (`jobset.wiring`) in the
same process.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import signal
import sys
from typing import TYPE_CHECKING, Any, Final

from jobset.wiring import add_jobset_components, check_flags, run_manager

if TYPE_CHECKING:
    from kubesim.cluster import SimOptions
    from kubeutil.gcfreeze import GcFreezer

__all__ = [
    "DEV_BIND_ADDRESS",
    "DEV_DEFAULT_NODES",
    "SIM_DEFAULT_NODES",
    "SIM_EXTRA",
    "SIM_EXTRA_MODULES",
    "add_sim_flags",
    "missing_sim_extra",
    "run_dev",
    "run_sim",
    "sim_options",
]

# Where `jobset dev` serves everything (API server, webhooks, metrics, health).
DEV_BIND_ADDRESS: Final = "127.0.0.1"
# A new user's cluster needs somewhere to run pods: 4 node pools of 4 nodes by default.
DEV_DEFAULT_NODES: Final = "pools=4x4,label=cloud.google.com/gke-nodepool"
# `jobset sim` starts as kind does, with one node, so a pod has somewhere to run ('0': none).
SIM_DEFAULT_NODES: Final = "1"


def add_sim_flags(p: argparse.ArgumentParser) -> None:
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
        "--kube-feature-gates",
        default="",
        metavar="K=V,...",
        help="Kubernetes feature gates of the simulated API server "
        "(MutablePodResourcesForSuspendedJobs; all off by default)",
    )
    p.add_argument(
        "--no-events",
        action="store_true",
        help="the simulated components record no Events (for benchmarks; see docs/sim.md)",
    )
    p.add_argument(
        "--run-image",
        action="append",
        default=[],
        metavar="REPOSITORY=DIR",
        help="run containers of this image repository (any tag or digest) as real processes, "
        "DIR first on PATH (repeatable; needs root; see docs/sim.md)",
    )
    p.add_argument(
        "--load-image",
        action="append",
        default=[],
        metavar="ARCHIVE",
        help="load the images of this docker-archive or oci-archive tar under the names it "
        "carries, as kind load image-archive; their pods run in the image's own root "
        "(repeatable; needs root; see docs/sim.md)",
    )
    p.add_argument(
        "--cluster-domain",
        default="cluster.local",
        metavar="DOMAIN",
        help="the cluster's DNS domain: Services are <svc>.<ns>.svc.DOMAIN (as the kubelet's "
        "--cluster-domain)",
    )
    p.add_argument(
        "--dns-address",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="also serve cluster DNS here, UDP and TCP, port 53 by default (repeatable; "
        "with --run-image it is always served on the pod network's gateway)",
    )


def sim_options(args: argparse.Namespace) -> SimOptions:
    """The simulated cluster's options from the flags `add_sim_flags` declares (`sim`, `dev`)."""
    from kubesim.cluster import SimOptions
    from kubesim.dns import parse_dns_address

    return SimOptions(
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
        load_images=_load_images(args.load_image),
        kube_feature_gates=_kube_feature_gates(args.kube_feature_gates),
        events=not getattr(args, "no_events", False),
        cluster_domain=args.cluster_domain,
        dns_addresses=[parse_dns_address(a) for a in args.dns_address],
    )


def _load_images(archives: list[str]) -> list[str]:
    """`--load-image` archives, each an existing file (what is in it, the store checks)."""
    from pathlib import Path

    for archive in archives:
        if not Path(archive).is_file():
            raise ValueError(f"--load-image {archive}: no such file")
    return [str(Path(a).resolve()) for a in archives]


def _kube_feature_gates(spec: str) -> dict[str, bool]:
    """`K=V,...` as kube-apiserver's --feature-gates spells it (names checked by the sim)."""
    gates: dict[str, bool] = {}
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        name, _, value = item.partition("=")
        if value.strip().lower() not in ("true", "false"):
            raise ValueError(f"invalid value of {item!r}: must be NAME=true or NAME=false")
        gates[name.strip()] = value.strip().lower() == "true"
    return gates


def _run_images(args: argparse.Namespace) -> dict[str, str]:
    from kubesim.kubelet.processes import parse_run_images

    return {repo: str(path) for repo, path in parse_run_images(args.run_image).items()}


# What the `[sim]` extra installs (pyproject.toml), by top-level module; the simulator imports
# them. A unit test keeps this list and the extra in step.
SIM_EXTRA: Final = "jobset-py[sim]"
SIM_EXTRA_MODULES: Final = ("celpy", "lark", "dns")


def missing_sim_extra(command: str) -> str | None:
    """The one line `jobset sim` / `jobset dev` print when the simulator's dependencies are
    not installed (the controller image and a plain `pip install jobset-py` have none), or None.

    Checked before anything starts: a missing module would otherwise surface as a traceback
    from deep inside the simulator, or only once a CRD with CEL rules is applied.
    """
    for module in SIM_EXTRA_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            return (
                f"jobset {command}: the simulated cluster needs the {exc.name or module!r} module, "
                f"from the sim extra: pip install '{SIM_EXTRA}'"
            )
    return None


async def run_sim(args: argparse.Namespace) -> int:
    from kubeutil.gilswitch import favour_the_loop

    # The simulator handles large request bodies in worker threads (kubeutil.gilswitch).
    with favour_the_loop():
        return await _serve_sim(args)


async def _serve_sim(args: argparse.Namespace) -> int:
    from kubesim.cluster import SimCluster

    freezer, reclaims = _freeze_gc_survivors()
    cluster = SimCluster(sim_options(args))
    await cluster.start()
    cluster.http.debug_views["gc"] = freezer.report
    cluster.http.debug_views["interpreter"] = _interpreter_report
    freezer.collect_and_freeze()
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
    reclaims.cancel()
    print("jobset sim stopped", flush=True)
    return 0


def _interpreter_report() -> dict[str, Any]:
    """`/debug/interpreter` of `jobset sim`: the process-wide interpreter settings it runs
    with."""
    return {"switchInterval": sys.getswitchinterval()}


def _freeze_gc_survivors() -> tuple[GcFreezer, asyncio.Task[None]]:
    """Keep `jobset sim`'s full collections short (kubeutil.gcfreeze); the task reclaims.
    (`jobset dev` has its manager do it: `ManagerOptions.gc_freeze`.)"""
    from kubeutil.gcfreeze import GcFreezer

    freezer = GcFreezer()
    freezer.install()
    return freezer, asyncio.create_task(freezer.run(), name="gc reclaim")


async def run_dev(args: argparse.Namespace) -> int:
    from jobset.controllers.crd import apply_crds
    from jobset.runtime import Manager, ManagerOptions
    from jobset.runtime.health import Probes
    from jobset.runtime.logging import configure_logging, status_line
    from jobset.webhooks import install_webhooks
    from kubesim.cluster import SimCluster
    from kubesim.process import free_port
    from kubeutil.gilswitch import LOOP_SWITCH_INTERVAL

    configure_logging(args.log_format, args.log_level)
    check_flags(args)
    options = ManagerOptions(
        kubeconfig=args.kubeconfig,
        # Loopback, like the simulated API server and the webhooks: a developer's metrics
        # and health servers are nobody else's business.
        bind_address=DEV_BIND_ADDRESS,
        concurrency=args.concurrency,
        reconcile_timeout=args.reconcile_timeout,
        metrics_port=None if args.metrics_port < 0 else args.metrics_port,
        metrics_secure=args.metrics_secure,
        metrics_cert_dir=args.metrics_cert_dir or None,
        health_port=None if args.health_port < 0 else args.health_port,
        log_format=args.log_format,
        log_level=args.log_level,
        gc_freeze=True,  # this process is the manager's (and the simulator's)
        switch_interval=LOOP_SWITCH_INTERVAL,  # ... and so is its interpreter
    )
    options.validate()
    cluster = SimCluster(sim_options(args))
    await cluster.start()
    try:
        manager = await Manager.create(options)
        if manager.gc_freezer is not None:  # gc_freeze above: always
            cluster.http.debug_views["gc"] = manager.gc_freezer.report
        await apply_crds(manager.client)
        port = args.webhook_port or free_port()
        webhooks = add_jobset_components(manager, args, port, host=DEV_BIND_ADDRESS)
        # The simulated API server reaches the webhook Service at this process's port.
        address = f"{DEV_BIND_ADDRESS}:{port}"
        await install_webhooks(manager.client, target_port=port, address=address)
        run = asyncio.create_task(run_manager(manager, webhooks))
        while not Probes.evaluate(manager.probes.readiness)[0]:
            if run.done():
                return run.result()
            await asyncio.sleep(0.05)
        status_line(
            args.log_format,
            f"jobset dev ready: {cluster.url} (kubeconfig {args.kubeconfig}, "
            f"sim-level {args.sim_level}, webhooks on 127.0.0.1:{port})",
            url=cluster.url,
            kubeconfig=str(args.kubeconfig),
            webhook_address=address,
        )
        code = await run
    finally:
        await cluster.stop()
    status_line(args.log_format, "jobset dev stopped")
    return code
