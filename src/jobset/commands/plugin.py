"""`kubectl-jobset`: the user commands as a kubectl plugin (`kubectl jobset get ...`).

kubectl finds an executable named `kubectl-jobset` on PATH (pyproject's second console
script) and runs it with every argument after `jobset`. kubectl does not interpret or
forward its own global flags for a plugin: `kubectl jobset get -n team --context prod`
reaches us as plain arguments, and `kubectl jobset -n team get` puts them *before* the
sub-command. Both forms are accepted: the connection flags found before the sub-command
are moved after it. `kubectl -n team jobset get` (flags before the plugin name) is refused by
kubectl itself, which then does not look for plugins. The kubeconfig, context and namespace
are resolved exactly as kubectl does (`jobset.sdk.kubeconfig`), so the plugin and kubectl
agree on where things are.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Final

from jobset import __version__
from jobset.commands import add_user_commands, run_user_command
from jobset.commands.completion import add_completion_command

__all__ = ["PROG", "build_parser", "hoist_global_flags", "main"]

PROG: Final = "kubectl jobset"
# The connection flags kubectl users put anywhere (flag -> takes a value).
_GLOBAL_FLAGS: Final = {
    "--kubeconfig": True,
    "--context": True,
    "-n": True,
    "--namespace": True,
    "--request-timeout": True,
    "-A": False,
    "--all-namespaces": False,
}


def hoist_global_flags(argv: Sequence[str]) -> list[str]:
    """`-n ns --context c get x` -> `get -n ns --context c x`: global flags given before
    the sub-command move just after it (where each sub-command's parser accepts them)."""
    hoisted: list[str] = []
    i = 0
    args = list(argv)
    while i < len(args):
        tok = args[i]
        name = tok.split("=", 1)[0]
        if name in _GLOBAL_FLAGS:
            takes_value = _GLOBAL_FLAGS[name] and "=" not in tok
            hoisted.extend(args[i : i + 2] if takes_value else [tok])
            i += 2 if takes_value else 1
        elif tok.startswith("-n") and len(tok) > 2 and not tok.startswith("--"):
            hoisted.append(tok)  # -nteam
            i += 1
        else:
            break
    rest = args[i:]
    if not hoisted or not rest or rest[0].startswith("-"):
        return args
    return [rest[0], *hoisted, *rest[1:]]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="JobSet user commands as a kubectl plugin: kubectl jobset get|describe|"
        "watch|tree|submit|delete|logs (the same commands as `jobset ...`).",
    )
    parser.add_argument("--version", action="version", version=f"kubectl-jobset {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    add_user_commands(sub)
    add_completion_command(sub, build_parser, prog="kubectl-jobset")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(hoist_global_flags(sys.argv[1:] if argv is None else argv))
    return run_user_command(args)


if __name__ == "__main__":
    sys.exit(main())
