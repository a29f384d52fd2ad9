"""The user-facing `jobset` commands: get, describe, watch, tree, submit, delete, logs.

Wiring (in `jobset.cli`): `add_user_commands(sub)` on the sub-parsers object, and in
`main`, `if args.command in USER_COMMANDS: return run_user_command(args)`.

Every command takes `--kubeconfig`, `--context` and `-n`; errors are one line on stderr
and exit 1 (see `jobset.commands.common` for every exit code).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import sys

from jobset.commands.common import EXIT_ERROR, error_line, quiet_logging
from jobset.commands.names import QUICK_COMMANDS, USER_COMMANDS

__all__ = ["QUICK_COMMANDS", "USER_COMMANDS", "add_user_commands", "run_user_command"]

# As a shell reports a command SIGPIPE ended (kubectl's fate when its reader goes).
EXIT_BROKEN_PIPE = 141
# In help order; each is the module `jobset.commands.<name>`.
_ORDER = ("get", "describe", "watch", "tree", "submit", "delete", "logs")


def add_user_commands(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], *, only: str | None = None
) -> None:
    """Register the user commands on the `jobset` command's sub-parsers (`only`: that one
    alone, when it is known to be the one invoked; the others' modules are not loaded)."""
    for name in _ORDER:
        if only is None or name == only:
            importlib.import_module(f"jobset.commands.{name}").register(sub)


def run_user_command(args: argparse.Namespace) -> int:
    """Run the parsed user command; the exit code (never raises, never a traceback)."""
    if args.command not in QUICK_COMMANDS:
        quiet_logging()  # the quick ones do it when they connect the full way
    try:
        code: int = asyncio.run(args.user_command(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `jobset logs -f NAME | head`: the reader has gone
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except Exception as exc:  # every failure becomes one clear line
        print(error_line(exc), file=sys.stderr)
        return EXIT_ERROR
    return code


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that flushing it at exit raises nothing more."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
