"""`jobset`, the console script (pyproject `jobset = "jobset.cli:main"`): parser and dispatch.

Every sub-command and flag is a stable contract (docs/architecture.md, docs/cli.md). This module
only builds the parser and hands the parsed arguments to where each command lives:

* `jobset controller`: the product as a process, `jobset.wiring`;
* `jobset sim`, `jobset dev`: the simulated cluster (with the product on it), `jobset.dev.commands`
  (the only commands that import `kubesim`; they need the `[sim]` extra); `jobset sim
  load-image`, which loads images into a running one, `jobset.dev.loadimage`;
* `jobset get/describe/watch/tree/submit/delete`: the user commands, `jobset.commands`
  (also the kubectl plugin `kubectl-jobset`, `jobset.commands.plugin`);
* `jobset completion bash|zsh|fish`: a completion script of this parser,
  `jobset.commands.completion`;
* `jobset in-place-restart-agent`: the InPlaceRestart agent in a worker pod, `jobset.agent`.

Ctrl-C that arrives before a long-running command has installed its own signal handling
(`jobset sim` still starting, say) exits 130, as every user command does.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

# Nothing else is imported at module level: `from jobset.cli import main` (the console
# script) must be instant, so that a Ctrl-C while the commands' modules load is caught by
# `main` (exit 130) instead of ending in a traceback, and so that a user command loads only
# its own modules (a command's start-up is most of its time).

__all__ = ["build_parser", "main"]


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole `jobset` parser (the tests render the chart's and kustomize's flags against it).

    With `command` other than `sim` or `dev`, those two get only their `--kubeconfig`: the
    simulator is a distribution of its own, and `jobset controller` never imports it."""
    simulator = command in (None, "sim", "dev")
    from jobset import __version__
    from jobset.commands import add_user_commands
    from jobset.commands.completion import add_completion_command
    from jobset.dev.commands import DEV_DEFAULT_NODES, SIM_DEFAULT_NODES, add_sim_flags
    from jobset.wiring import (
        add_controller_flags,
        add_jobset_flags,
        add_metrics_security_flags,
        add_reconcile_timeout_flag,
    )

    parser = argparse.ArgumentParser(prog="jobset", description="JobSet controller and tools")
    parser.add_argument("--version", action="version", version=f"jobset {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    sim = sub.add_parser(
        "sim",
        help="run the simulated Kubernetes cluster",
        description="Run the simulated cluster: an API server on 127.0.0.1 plus a simulated "
        "job controller, scheduler, kubelet and garbage collector. The cluster starts with "
        "one node (pool-0-node-0), as kind does, unless --nodes says otherwise (--nodes 0: "
        "none). Prints a line with 'ready' once it serves; stops on SIGINT/SIGTERM. "
        "`jobset sim load-image ARCHIVE...` loads images into a running one.",
        formatter_class=argparse.RawTextHelpFormatter,
    )
    add_sim_flags(sim, simulator)
    sim.set_defaults(nodes=SIM_DEFAULT_NODES)
    controller = sub.add_parser(
        "controller",
        help="run the JobSet controller",
        description="Run the JobSet controller against a cluster (the in-cluster config, "
        "or --kubeconfig). Stops on SIGINT/SIGTERM.",
    )
    add_controller_flags(controller)
    dev = sub.add_parser(
        "dev",
        help="simulated cluster + JobSet CRD + controller in one process",
        description="Start a simulated cluster, install the JobSet CRD and run the controller "
        "against it, in one process. Prints a line with 'ready' once JobSets can be "
        "submitted (kubectl apply -f examples/...); stops on SIGINT/SIGTERM. The cluster "
        f"starts with 4 node pools of 4 nodes ({DEV_DEFAULT_NODES}) unless --nodes says "
        "otherwise.",
        formatter_class=argparse.RawTextHelpFormatter,
    )
    add_sim_flags(dev, simulator)
    # A new user's cluster needs somewhere to run pods: 4 node pools of 4 nodes by default.
    dev.set_defaults(nodes=DEV_DEFAULT_NODES)
    add_jobset_flags(dev)
    dev.add_argument("--concurrency", type=int, default=5, help="reconcile workers")
    add_reconcile_timeout_flag(dev)
    dev.add_argument("--metrics-port", type=int, default=-1, help="Prometheus /metrics (-1: off)")
    # Loopback only: plain unless asked (`jobset controller` is secure by default).
    add_metrics_security_flags(dev, secure=False)
    dev.add_argument("--health-port", type=int, default=-1, help="/healthz, /readyz (-1: off)")
    dev.add_argument("--log-format", choices=("json", "console"), default="console")
    dev.add_argument("--log-level", default="INFO")
    dev.add_argument(
        "--webhook-port", type=int, default=0, help="admission webhook port (0: a free port)"
    )
    from jobset.agent.flags import add_agent_flags

    add_agent_flags(
        sub.add_parser(
            "in-place-restart-agent", help="the InPlaceRestart agent, run in every worker pod"
        )
    )
    add_user_commands(sub)
    add_completion_command(sub, build_parser)
    return parser


EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report a command ended by Ctrl-C


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:  # while parsing or importing a command's modules
        return EXIT_INTERRUPTED


def _main(argv: Sequence[str] | None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["in-place-restart-agent"]:
        # The agent starts on every in-place restart: it skips the full parser's imports.
        from jobset.agent.run import main as agent_main

        return agent_main(args_list[1:])
    if args_list[:2] == ["sim", "load-image"]:  # a client of a running `jobset sim`
        from jobset.dev.loadimage import main as load_image_main

        return load_image_main(args_list[2:])
    from jobset.commands.names import USER_COMMANDS

    if args_list[:1] and args_list[0] in USER_COMMANDS:
        return _user_command(args_list)
    from jobset.commands import run_user_command
    from jobset.dev.commands import missing_sim_extra, run_dev, run_sim
    from jobset.wiring import run_controller

    # Before parsing: without the simulator installed its flags are not declared either.
    if args_list[:1] in (["sim"], ["dev"]) and not {"-h", "--help"} & set(args_list):
        if missing := missing_sim_extra(args_list[0]):
            _error_line(_log_format_only(args_list), missing)
            return 2
    parser = build_parser(args_list[0] if args_list else None)
    args = parser.parse_args(args_list)
    if args.command in ("sim", "controller", "dev"):
        runner = {"sim": run_sim, "controller": run_controller, "dev": run_dev}[args.command]
        try:
            return asyncio.run(runner(args))
        except KeyboardInterrupt:
            # Ctrl-C before the command's own SIGINT handler was installed (still starting):
            # once running, SIGINT is a graceful stop with the command's own exit code.
            return EXIT_INTERRUPTED
        except ValueError as exc:
            _error_line(args, f"jobset {args.command}: {exc}")
            return 2
    if args.command == "completion":
        return run_user_command(args)
    parser.error(f"unknown command {args.command}")
    return 2


def _log_format_only(args_list: Sequence[str]) -> argparse.Namespace:
    """`--log-format` of a command line that is not parsed as a whole."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--log-format", default=None)
    return pre.parse_known_args(args_list)[0]


def _user_command(args_list: list[str]) -> int:
    """`jobset get|describe|...`: parsed by the user commands' parser alone, the same
    sub-parser the full one holds (usage lines and errors read the same), without loading
    the controller's, the simulator's and the agent's flags."""
    from jobset.commands import add_user_commands, run_user_command

    parser = argparse.ArgumentParser(prog="jobset", description="JobSet controller and tools")
    add_user_commands(parser.add_subparsers(dest="command", required=True), only=args_list[0])
    return run_user_command(parser.parse_args(args_list))


def _error_line(args: argparse.Namespace, message: str) -> None:
    """The one line a refused start prints on stderr: under --log-format json a JSON record
    too, as every other line of the command."""
    from jobset.runtime.logging import status_line

    json_lines = getattr(args, "log_format", None) == "json"
    status_line("json" if json_lines else "console", message, level="error", stream=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
