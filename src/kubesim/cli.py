"""`kubesim`, the simulated cluster's own console script (`pip install kubesim`).

`kubesim serve` runs the same server as `jobset sim`, with the same flags: a Kubernetes API
server with simulated controllers, scheduler and kubelet, for benchmarking or testing any
controller or client against it without a real cluster.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from typing import Final

from kubesim import __version__
from kubesim.serve import add_sim_flags, serve

__all__ = ["build_parser", "main"]

# `kubesim serve` starts as `jobset sim` and kind do, with one node ('0': none).
DEFAULT_NODES: Final = "1"
EXIT_INTERRUPTED: Final = 130  # 128 + SIGINT, as shells report a command ended by Ctrl-C


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kubesim", description="A simulated Kubernetes cluster")
    parser.add_argument("--version", action="version", version=f"kubesim {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    serve_parser = sub.add_parser(
        "serve",
        help="run the simulated cluster",
        description="Run the simulated cluster: an API server on 127.0.0.1 plus a simulated "
        "job controller, scheduler, kubelet and garbage collector, as `jobset sim` does. The "
        "cluster starts with one node (pool-0-node-0) unless --nodes says otherwise "
        "(--nodes 0: none). Prints a line with 'ready' once it serves; stops on "
        "SIGINT/SIGTERM.",
        formatter_class=argparse.RawTextHelpFormatter,
    )
    add_sim_flags(serve_parser)
    serve_parser.set_defaults(nodes=DEFAULT_NODES)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        return asyncio.run(serve(args))
    except KeyboardInterrupt:  # before the server installed its own SIGINT handling
        return EXIT_INTERRUPTED
    except ValueError as exc:
        print(f"kubesim {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
