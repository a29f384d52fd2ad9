"""The simulated cluster as a command: its flags, its options from them, and the loop that
serves it until SIGINT or SIGTERM.

`kubesim serve` (`kubesim.cli`) and `jobset sim` run this; `jobset dev` takes the flags and
the options and runs the controller beside the cluster. The modules behind the flags
(cluster, DNS, the real-process runtime) load when a command runs, not when its parser is
built, so `--help` stays quick.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubesim.cluster import SimOptions
    from kubeutil.gcfreeze import GcFreezer

__all__ = ["add_sim_flags", "serve", "sim_options"]


def add_sim_flags(p: argparse.ArgumentParser) -> None:
    """The simulated cluster's flags (`kubesim serve`, `jobset sim`, `jobset dev`)."""
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
    p.add_argument(
        "--dns-allow-wildcard",
        action="store_true",
        help="let --dns-address be a wildcard address (0.0.0.0, ::): cluster DNS on every "
        "network of the host",
    )


def sim_options(args: argparse.Namespace) -> SimOptions:
    """The simulated cluster's options from the flags `add_sim_flags` declares."""
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
        dns_addresses=[
            parse_dns_address(a, allow_wildcard=args.dns_allow_wildcard) for a in args.dns_address
        ],
    )


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


def _load_images(archives: list[str]) -> list[str]:
    """`--load-image` archives, each an existing file (what is in it, the store checks)."""
    for archive in archives:
        if not Path(archive).is_file():
            raise ValueError(f"--load-image {archive}: no such file")
    return [str(Path(a).resolve()) for a in archives]


def _run_images(args: argparse.Namespace) -> dict[str, str]:
    from kubesim.kubelet.processes import parse_run_images

    return {repo: str(path) for repo, path in parse_run_images(args.run_image).items()}


async def serve(args: argparse.Namespace, name: str = "kubesim serve") -> int:
    """Run the simulated cluster the flags describe until SIGINT or SIGTERM; `name` starts
    the ready and stopped lines (`kubesim serve`, `jobset sim`)."""
    from kubeutil.gilswitch import favour_the_loop

    # The simulator handles large request bodies in worker threads (kubeutil.gilswitch).
    with favour_the_loop():
        return await _serve(args, name)


async def _serve(args: argparse.Namespace, name: str) -> int:
    from kubesim.cluster import SimCluster

    freezer, reclaims = _freeze_gc_survivors()
    cluster = SimCluster(sim_options(args))
    await cluster.start()
    cluster.http.debug_views["gc"] = freezer.report
    cluster.http.debug_views["interpreter"] = _interpreter_report
    freezer.collect_and_freeze()
    print(
        f"{name} ready: {cluster.url} (kubeconfig {args.kubeconfig}, sim-level {args.sim_level})",
        flush=True,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await cluster.stop()
    reclaims.cancel()
    print(f"{name} stopped", flush=True)
    return 0


def _interpreter_report() -> dict[str, Any]:
    """`/debug/interpreter` of the served cluster: the process-wide interpreter settings it
    runs with."""
    return {"switchInterval": sys.getswitchinterval()}


def _freeze_gc_survivors() -> tuple[GcFreezer, asyncio.Task[None]]:
    """Keep the served cluster's full collections short (kubeutil.gcfreeze); the task
    reclaims. (`jobset dev` has its manager do it.)"""
    from kubeutil.gcfreeze import GcFreezer

    freezer = GcFreezer()
    freezer.install()
    return freezer, asyncio.create_task(freezer.run(), name="gc reclaim")
