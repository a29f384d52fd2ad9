"""The `jobset` command. Its sub-commands and flags are a stable contract (see docs/design)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Sequence

from jobset import __version__


def _add_sim_flags(p: argparse.ArgumentParser) -> None:
    from jobset.sim.nodespec import NODE_SPEC_HELP

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
    return parser


async def _run_sim(args: argparse.Namespace) -> int:
    from jobset.sim.cluster import SimCluster, SimOptions

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
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
