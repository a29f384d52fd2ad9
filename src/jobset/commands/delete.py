"""`jobset delete NAME...`: delete JobSets (their Jobs and pods are garbage-collected)."""

from __future__ import annotations

import argparse
import sys

from jobset.commands.common import (
    EXIT_ERROR,
    EXIT_OK,
    RESOURCE,
    Out,
    add_connection_flags,
    connect,
    error_line,
)
from jobset.runtime.client import ApiError

__all__ = ["register", "run"]

_CASCADE = {"background": "Background", "foreground": "Foreground", "orphan": "Orphan"}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "delete",
        help="delete JobSets",
        description="Delete JobSets. Their child Jobs, pods and headless Service are removed "
        "by garbage collection (--cascade as kubectl).",
    )
    p.add_argument("names", nargs="+", metavar="NAME")
    add_connection_flags(p)
    p.add_argument("--cascade", choices=tuple(_CASCADE), default="background")
    p.set_defaults(user_command=run)


async def run(args: argparse.Namespace) -> int:
    out = Out()
    code = EXIT_OK
    async with await connect(args) as sdk:
        for name in args.names:
            try:
                await sdk.delete(name, propagation=_CASCADE[args.cascade])
            except ApiError as err:
                print(error_line(err), file=sys.stderr)
                code = EXIT_ERROR
                continue
            out.line(f'{RESOURCE} "{name}" deleted')
    return code
