"""`jobset submit FILE`: create the JobSets of a (multi-document) YAML file.

Every document is validated first with the webhook's rules (defaulting, then
`validate_create`, plus the preset annotations); if any is invalid nothing is created, so
a file is never half-submitted because of a typo. `-` reads standard input; `-f FILE`
(repeatable) as kubectl. `--dry-run` (= `client`) stops after that check;
`--dry-run=server` sends each JobSet with `dryRun=All`: the API server runs defaulting,
the webhooks and validation, and stores nothing.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping

from jobset.commands.common import (
    EXIT_ERROR,
    EXIT_OK,
    RESOURCE,
    Out,
    add_connection_flags,
    add_dry_run_flag,
    add_output_flag,
    connect,
    error_line,
    print_objects,
)
from jobset.commands.watch import follow
from jobset.controllers.features import parse_feature_gates
from jobset.runtime.client import ApiError
from jobset.sdk.models import JobSet, load_all
from jobset.sdk.validation import ValidationError, check

__all__ = ["load_and_check", "register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "submit",
        help="validate and create JobSets from a YAML file",
        description=__doc__.split("\n", 2)[2] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "file",
        metavar="FILE",
        nargs="?",
        help="YAML file with one or more JobSets ('-': stdin); or -f",
    )
    p.add_argument(
        "-f",
        "--filename",
        action="append",
        default=[],
        metavar="FILE",
        help="YAML file with JobSets ('-': stdin); repeatable, as kubectl create -f",
    )
    add_connection_flags(p)
    add_output_flag(p, "json", "yaml", "name", "jsonpath")
    add_dry_run_flag(
        p,
        "client (also a bare --dry-run): validate here, contact no server; server: the API "
        "server admits each JobSet (defaulting, webhooks, validation) but stores nothing",
    )
    p.add_argument(
        "--wait",
        action="store_true",
        help="then follow each JobSet as `jobset watch` does (exit 0 Completed, 3 Failed)",
    )
    p.add_argument("--timeout", type=float, default=None, help="with --wait: give up after SECONDS")
    p.add_argument(
        "--feature-gates",
        default="",
        help="validate as a controller with these gates would (e.g. RestartJob=true)",
    )
    p.set_defaults(user_command=run)


def load_and_check(
    text: str, namespace: str | None, features: Mapping[str, bool] | None = None
) -> tuple[list[JobSet], list[str]]:
    """The JobSets of `text` and one error line per invalid one (empty when all are valid)."""
    jobsets = load_all(text)
    errors: list[str] = []
    if not jobsets:
        errors.append("Error: no objects passed to submit")
    for js in jobsets:
        own = js.namespace
        if own and namespace and own != namespace:
            errors.append(
                f'Error: the namespace from the provided object "{own}" does not match the '
                f"namespace \"{namespace}\". You must pass '--namespace={own}' to perform this "
                "operation."
            )
            continue
        try:
            check(js, features=features)
        except ValidationError as err:
            errors.append(f"Error: {err}")
    return jobsets, errors


def _generate_name(js: JobSet) -> str:
    return (js.metadata.generate_name if js.metadata else None) or ""


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    with open(path) as fh:
        return fh.read()


async def run(args: argparse.Namespace) -> int:
    out = Out()
    try:
        features = parse_feature_gates(args.feature_gates)
    except ValueError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    given = args.file or getattr(args, "dry_run_spill", None)
    files = ([given] if given else []) + list(args.filename)
    if not files:
        print("Error: no file given: jobset submit FILE, or -f FILE ('-': stdin)", file=sys.stderr)
        return EXIT_ERROR
    if files.count("-") > 1:
        print("Error: standard input ('-') can be read only once", file=sys.stderr)
        return EXIT_ERROR
    text = "\n---\n".join(_read(path) for path in files)
    jobsets, errors = load_and_check(text, args.namespace, features)
    if errors:
        for line in errors:
            print(line, file=sys.stderr)
        return EXIT_ERROR
    if args.dry_run == "client":
        for js in jobsets:
            out.line(f"{RESOURCE}/{js.name or _generate_name(js)} valid (dry run)")
        return EXIT_OK
    server_dry_run = args.dry_run == "server"
    suffix = " (server dry run)" if server_dry_run else ""
    code = EXIT_OK
    created: list[JobSet] = []
    async with await connect(args) as sdk:
        for js in jobsets:
            try:
                made = await sdk.create(js, validate=False, dry_run=server_dry_run)
            except ApiError as err:
                print(error_line(err), file=sys.stderr)
                code = EXIT_ERROR
                continue
            created.append(made)
            if not args.output:
                out.line(f"{RESOURCE}/{made.name} created{suffix}")
        if args.output:
            objs = [js.to_dict() for js in created]
            print_objects(out, objs, args.output, single=len(created) == 1)
        if args.wait and code == EXIT_OK and not server_dry_run:
            for js in created:
                result = await follow(sdk, js.name, out, args.timeout)
                code = max(code, result)
    return code
