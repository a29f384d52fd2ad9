"""`jobset delete NAME... | --all | -l SELECTOR | -f FILE`: delete JobSets (their Jobs and
pods are garbage-collected)."""

from __future__ import annotations

import argparse
import sys

from jobset.commands.common import (
    EXIT_ERROR,
    EXIT_OK,
    RESOURCE,
    Out,
    add_connection_flags,
    add_dry_run_flag,
    add_selector_flag,
    connect,
    error_line,
)
from jobset.runtime.apitypes import ApiError
from jobset.sdk.models import load_all

__all__ = ["register", "run"]

_CASCADE = {"background": "Background", "foreground": "Foreground", "orphan": "Orphan"}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "delete",
        help="delete JobSets",
        description="Delete JobSets: by name, every one of the namespace (--all), by label "
        "(-l) or those a file describes (-f, '-': stdin). Their child Jobs, pods and headless "
        "Service are removed by garbage collection (--cascade as kubectl).",
    )
    p.add_argument("names", nargs="*", metavar="NAME")
    add_connection_flags(p)
    add_selector_flag(p)
    p.add_argument("--all", action="store_true", help="every JobSet of the namespace")
    p.add_argument(
        "-f",
        "--filename",
        action="append",
        default=[],
        metavar="FILE",
        help="delete the JobSets this YAML file describes ('-': stdin); repeatable",
    )
    p.add_argument(
        "--ignore-not-found",
        action="store_true",
        help="a JobSet that does not exist is no error (exit 0, nothing printed)",
    )
    p.add_argument("--cascade", choices=tuple(_CASCADE), default="background")
    add_dry_run_flag(
        p,
        "client (also a bare --dry-run): print what would be deleted, delete nothing; server: "
        "the API server checks each deletion but keeps the JobSet",
    )
    p.set_defaults(user_command=run)


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    with open(path) as fh:
        return fh.read()


def _usage_error(args: argparse.Namespace, names: list[str]) -> str | None:
    chosen = [
        what
        for what, given in (
            ("names", names),
            ("--all", args.all),
            ("-l", args.selector),
            ("-f", args.filename),
        )
        if given
    ]
    if not chosen:
        return "Error: give JobSet names, --all, -l SELECTOR or -f FILE"
    if len(chosen) > 1:
        return f"Error: {' and '.join(chosen)} cannot be combined"
    return None


async def run(args: argparse.Namespace) -> int:
    out = Out()
    spill = getattr(args, "dry_run_spill", None)
    names: list[str] = ([spill] if spill else []) + list(args.names)
    if (problem := _usage_error(args, names)) is not None:
        print(problem, file=sys.stderr)
        return EXIT_ERROR
    suffix = {"client": " (dry run)", "server": " (server dry run)"}.get(args.dry_run, "")
    code = EXIT_OK
    async with await connect(args) as sdk:
        targets: list[tuple[str, str]] = [(name, sdk.namespace) for name in names]
        if args.filename:
            if args.filename.count("-") > 1:
                print("Error: standard input ('-') can be read only once", file=sys.stderr)
                return EXIT_ERROR
            for path in args.filename:
                for js in load_all(_read(path)):
                    own = js.namespace
                    if own and args.namespace and own != args.namespace:
                        print(
                            f'Error: the namespace from the provided object "{own}" does not '
                            f'match the namespace "{args.namespace}". You must pass '
                            f"'--namespace={own}' to perform this operation.",
                            file=sys.stderr,
                        )
                        return EXIT_ERROR
                    targets.append((js.name, own or sdk.namespace))
        elif args.all or args.selector:
            found = await sdk.list(label_selector=args.selector)
            targets = [(js.name, js.namespace or sdk.namespace) for js in found]
            if not targets:
                print(f"No resources found in {sdk.namespace} namespace.", file=sys.stderr)
        for name, namespace in targets:
            try:
                if args.dry_run == "client":
                    await sdk.get(name, namespace)  # kubectl checks that it exists
                else:
                    await sdk.delete(
                        name,
                        namespace,
                        propagation=_CASCADE[args.cascade],
                        dry_run=args.dry_run == "server",
                    )
            except ApiError as err:
                if err.not_found and args.ignore_not_found:
                    continue
                print(error_line(err), file=sys.stderr)
                code = EXIT_ERROR
                continue
            out.line(f'{RESOURCE} "{name}" deleted{suffix}')
    return code
