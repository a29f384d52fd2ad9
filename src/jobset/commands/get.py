"""`jobset get [NAME] [-n NS | -A] [-l SELECTOR] [-w] [-o FORMAT] [--no-headers]`: the
JobSets, one line each (`-o wide`: more columns; `-w`: then one line per change)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from jobset.commands.common import (
    EXIT_ERROR,
    EXIT_OK,
    Out,
    add_connection_flags,
    add_no_headers_flag,
    add_output_flag,
    add_selector_flag,
    connect,
    print_objects,
)
from jobset.commands.summary import age, exclusive_topology_key, phase, progress, progress_text
from jobset.sdk.models import JobSet

if TYPE_CHECKING:
    from jobset.sdk.client import JobSetClient

__all__ = ["HEADERS", "WIDE_HEADERS", "register", "rows", "run"]

HEADERS: Final = ("NAME", "PHASE", "READY/SUCCEEDED/FAILED OF REPLICAS", "RESTARTS", "AGE")
WIDE_HEADERS: Final = (*HEADERS, "MAX RESTARTS", "EXCLUSIVE", "CONDITION")
FORMATS: Final = ("json", "yaml", "name", "wide", "jsonpath")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "get",
        help="list JobSets with their progress",
        description="List JobSets: phase, per-ReplicatedJob child Jobs ready/succeeded/failed "
        "of replicas, restarts and age. -o wide adds maxRestarts, the exclusive-placement "
        "topology key and the latest condition; -w keeps printing a line per change.",
    )
    p.add_argument("name", nargs="?", help="one JobSet (default: all in the namespace)")
    add_connection_flags(p, all_namespaces=True)
    add_selector_flag(p)
    add_output_flag(p, *FORMATS)
    add_no_headers_flag(p)
    p.add_argument(
        "-w",
        "--watch",
        action="store_true",
        help="after the list, print each change (until Ctrl-C, or --request-timeout)",
    )
    p.set_defaults(user_command=run)


def _latest_condition(js: JobSet) -> str:
    conds = [cd for cd in js.conditions if cd.status == "True"]
    if not conds:
        return "<none>"
    last = max(conds, key=lambda cd: cd.last_transition_time or "")
    return f"{last.type}:{last.reason}" if last.reason else str(last.type)


def _row(js: JobSet, *, with_namespace: bool, wide: bool) -> list[str]:
    row = [
        js.name,
        phase(js),
        progress_text(progress(js)) or "-",
        str((js.status.restarts if js.status else None) or 0),
        age(js.metadata.creation_timestamp if js.metadata else None),
    ]
    if wide:
        fp = js.spec.failure_policy if js.spec else None
        row += [
            str((fp.max_restarts if fp else None) or 0),
            exclusive_topology_key(js) or "<none>",
            _latest_condition(js),
        ]
    return [js.namespace or "", *row] if with_namespace else row


def rows(jobsets: list[JobSet], *, with_namespace: bool, wide: bool = False) -> list[list[str]]:
    return [_row(js, with_namespace=with_namespace, wide=wide) for js in jobsets]


def _headers(args: argparse.Namespace) -> tuple[str, ...]:
    base = WIDE_HEADERS if args.output == "wide" else HEADERS
    return ("NAMESPACE", *base) if args.all_namespaces else base


def _print(out: Out, args: argparse.Namespace, jobsets: Sequence[JobSet], *, single: bool) -> None:
    if args.output in (None, "wide"):
        out.table(
            _headers(args),
            rows(list(jobsets), with_namespace=args.all_namespaces, wide=args.output == "wide"),
            show_headers=not args.no_headers,
        )
    else:
        print_objects(out, [js.to_dict() for js in jobsets], args.output, single=single)


class _Aligned:
    """`get -w` lines: aligned to the widths of the first table, as kubectl's watch does."""

    def __init__(self, headers: Sequence[str], first: Sequence[Sequence[str]]) -> None:
        self.widths = [len(h) for h in headers]
        for row in first:
            for i, cell in enumerate(row):
                self.widths[i] = max(self.widths[i], len(cell))

    def line(self, row: Sequence[str]) -> str:
        return "   ".join(cell.ljust(self.widths[i]) for i, cell in enumerate(row)).rstrip()


async def _watch(
    sdk: JobSetClient, out: Out, args: argparse.Namespace, shown: dict[str, str | None]
) -> None:
    """One line (or object) per change after the listed state, until cancelled."""
    headers = _headers(args)
    wide = args.output == "wide"
    table = args.output in (None, "wide")
    first = [
        _row(JobSet.from_dict(o), with_namespace=args.all_namespaces, wide=wide)
        for o in args.listed
    ]
    aligned = _Aligned(headers, first)
    if table and not args.listed and not args.no_headers:
        out.line(aligned.line(headers))
    events = sdk.watch(args.name, all_namespaces=args.all_namespaces, label_selector=args.selector)
    async with contextlib.aclosing(events) as stream:
        async for event in stream:
            js = event.jobset
            key = f"{js.namespace}/{js.name}"
            rv = js.metadata.resource_version if js.metadata else None
            if event.type != "DELETED" and key in shown and shown[key] == rv:
                continue  # the state the list already printed
            shown[key] = None if event.type == "DELETED" else rv
            if table:
                out.line(aligned.line(_row(js, with_namespace=args.all_namespaces, wide=wide)))
            else:
                print_objects(out, [js.to_dict()], args.output, single=True)
            out.stream.flush()


async def run(args: argparse.Namespace) -> int:
    out = Out(tty=False) if args.watch else Out()
    if args.name and args.selector:
        print("Error: a name cannot be given together with a selector (-l)", file=sys.stderr)
        return EXIT_ERROR
    async with await connect(args, read_only=not args.watch) as sdk:
        if args.name:
            jobsets = [await sdk.get(args.name)]
        else:
            jobsets = await sdk.list(
                all_namespaces=args.all_namespaces, label_selector=args.selector
            )
        jobsets.sort(key=lambda js: (js.namespace or "", js.name))
        if not jobsets and args.output in (None, "wide") and not args.watch:
            where = "any namespace" if args.all_namespaces else f"{sdk.namespace} namespace"
            out.line(f"No resources found in {where}.")
        elif jobsets or not args.watch:
            _print(out, args, jobsets, single=bool(args.name))
        if not args.watch:
            return EXIT_OK
        out.stream.flush()
        args.listed = [js.to_dict() for js in jobsets]
        shown = {
            f"{js.namespace}/{js.name}": (js.metadata.resource_version if js.metadata else None)
            for js in jobsets
        }
        # kubectl ends `get -w` after --request-timeout (exit 0); otherwise until Ctrl-C.
        limit = args.request_timeout or None
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(limit):
                await _watch(sdk, out, args, shown)
    return EXIT_OK
