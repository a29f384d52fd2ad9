"""`jobset submit FILE`: create the JobSets of a (multi-document) YAML file, all or none.

First the API server admits every document without storing it (`dryRun=All`, with
`fieldValidation=Strict` as kubectl sends it): its validation, the CRD schema (an unknown
field such as a typo is refused) and the admission webhooks. Every document's errors are
listed, and nothing is created unless all pass. `-` reads standard input; `-f FILE`
(repeatable) as kubectl. `--dry-run=client` (also a bare `--dry-run`) contacts no server: it
runs the same rules here (the CRD schema, unknown fields included, then the webhook's
defaulting and validation; `--feature-gates` as the controller's); `--dry-run=server`
stops after the server's dry run.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

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

if TYPE_CHECKING:
    from jobset.sdk.client import JobSetClient
    from jobset.sdk.models import JobSet

__all__ = ["client_errors", "load", "load_and_check", "register", "run"]

# kubectl's default for create and apply: unknown fields are an error.
FIELD_VALIDATION: Final = "Strict"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "submit",
        help="validate and create JobSets from a YAML file (all or none)",
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
        "client (also a bare --dry-run): validate here with the CRD schema and the webhook's "
        "rules, contact no server; server: the API server admits each JobSet (schema, "
        "webhooks, validation) but stores nothing",
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
        help="with --dry-run=client: validate as a controller with these gates would "
        "(e.g. RestartJob=true); the server applies its own",
    )
    p.set_defaults(user_command=run)


def load(text: str, namespace: str | None) -> tuple[list[JobSet], list[str]]:
    """The JobSets of `text` and one error line per document refused before any check
    (none at all, a namespace other than `-n`'s)."""
    from jobset.sdk.models import load_all

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
    return jobsets, errors


def client_errors(js: JobSet, features: Mapping[str, bool] | None = None) -> list[str]:
    """What the API server would answer for `js`, found here: unknown fields (its 400 under
    `fieldValidation=Strict`), else the schema's and the webhook's field errors (its 422)."""
    from jobset.api.schema import strict_decoding_message
    from jobset.sdk.validation import ValidationError, check, unknown_fields

    unknown = unknown_fields(js)
    if unknown:
        return [f"Error: {strict_decoding_message(unknown)}"]
    try:
        check(js, features=features)
    except ValidationError as err:
        return [f"Error: {err}"]
    return []


def load_and_check(
    text: str, namespace: str | None, features: Mapping[str, bool] | None = None
) -> tuple[list[JobSet], list[str]]:
    """The JobSets of `text` and one error line per invalid one, all checked here (the
    `--dry-run=client` verdict; empty when all are valid)."""
    jobsets, errors = load(text, namespace)
    if errors:
        return jobsets, errors
    for js in jobsets:
        errors += client_errors(js, features)
    return jobsets, errors


def _generate_name(js: JobSet) -> str:
    return (js.metadata.generate_name if js.metadata else None) or ""


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    with open(path) as fh:
        return fh.read()


def _files(args: argparse.Namespace) -> list[str] | str:
    """The files to read, or the error line when none or stdin twice."""
    given = args.file or getattr(args, "dry_run_spill", None)
    files = ([given] if given else []) + list(args.filename)
    if not files:
        return "Error: no file given: jobset submit FILE, or -f FILE ('-': stdin)"
    if files.count("-") > 1:
        return "Error: standard input ('-') can be read only once"
    return files


async def run(args: argparse.Namespace) -> int:
    files = _files(args)
    if isinstance(files, str):
        print(files, file=sys.stderr)
        return EXIT_ERROR
    text = "\n---\n".join(_read(path) for path in files)
    if args.dry_run == "client":
        return _client_dry_run(args, text)
    jobsets, errors = load(text, args.namespace)
    if errors:
        return _refused(errors)
    async with await connect(args) as sdk:
        admitted, errors = await _server_dry_run(sdk, jobsets)
        if errors:
            return _refused(errors)
        if args.dry_run == "server":
            return _print_created(Out(), args, admitted, " (server dry run)")
        return await _create(sdk, args, jobsets)


def _refused(errors: list[str]) -> int:
    for line in errors:
        print(line, file=sys.stderr)
    return EXIT_ERROR


def _client_dry_run(args: argparse.Namespace, text: str) -> int:
    from jobset.controllers.features import parse_feature_gates

    try:
        features = parse_feature_gates(args.feature_gates)
    except ValueError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    jobsets, errors = load_and_check(text, args.namespace, features)
    if errors:
        return _refused(errors)
    out = Out()
    for js in jobsets:
        out.line(f"{RESOURCE}/{js.name or _generate_name(js)} valid (dry run)")
    return EXIT_OK


async def _server_dry_run(
    sdk: JobSetClient, jobsets: list[JobSet]
) -> tuple[list[JobSet], list[str]]:
    """The API server's verdict on every document, stored nowhere: what it would have
    created, and one line per refusal."""
    from jobset.runtime.client import ApiError

    admitted: list[JobSet] = []
    errors: list[str] = []
    for js in jobsets:
        try:
            admitted.append(
                await sdk.create(
                    js, validate=False, dry_run=True, field_validation=FIELD_VALIDATION
                )
            )
        except ApiError as err:
            errors.append(error_line(err))
    return admitted, errors


def _print_created(
    out: Out, args: argparse.Namespace, created: list[JobSet], suffix: str = ""
) -> int:
    if args.output:
        objs = [js.to_dict() for js in created]
        print_objects(out, objs, args.output, single=len(created) == 1)
    else:
        for js in created:
            out.line(f"{RESOURCE}/{js.name or _generate_name(js)} created{suffix}")
    return EXIT_OK


async def _create(sdk: JobSetClient, args: argparse.Namespace, jobsets: list[JobSet]) -> int:
    """Create every JobSet (all passed the dry run); then `--wait` for them."""
    from jobset.commands.watch import follow
    from jobset.runtime.client import ApiError

    out = Out()
    code = EXIT_OK
    created: list[JobSet] = []
    for js in jobsets:
        try:
            made = await sdk.create(js, validate=False, field_validation=FIELD_VALIDATION)
        except ApiError as err:  # a race the dry run could not see (AlreadyExists, quota)
            print(error_line(err), file=sys.stderr)
            code = EXIT_ERROR
            continue
        created.append(made)
    _print_created(out, args, created)
    if args.wait and code == EXIT_OK:
        for js in created:
            code = max(code, await follow(sdk, js.name, out, args.timeout))
    return code
