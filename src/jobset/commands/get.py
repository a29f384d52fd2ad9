"""`jobset get [NAME] [-n NS | -A] [-o json|yaml|name]`: the JobSets, one line each."""

from __future__ import annotations

import argparse
from typing import Any

from jobset.commands.common import (
    EXIT_OK,
    RESOURCE,
    Out,
    add_connection_flags,
    add_output_flag,
    connect,
)
from jobset.commands.summary import age, phase, progress, progress_text
from jobset.sdk.models import JobSet

__all__ = ["HEADERS", "register", "rows", "run"]

HEADERS = ("NAME", "PHASE", "READY/SUCCEEDED/FAILED OF REPLICAS", "RESTARTS", "AGE")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "get",
        help="list JobSets with their progress",
        description="List JobSets: phase, per-ReplicatedJob child Jobs ready/succeeded/failed "
        "of replicas, restarts and age.",
    )
    p.add_argument("name", nargs="?", help="one JobSet (default: all in the namespace)")
    add_connection_flags(p, all_namespaces=True)
    add_output_flag(p, "json", "yaml", "name")
    p.set_defaults(user_command=run)


def rows(jobsets: list[JobSet], *, with_namespace: bool) -> list[list[str]]:
    out = []
    for js in jobsets:
        row = [
            js.name,
            phase(js),
            progress_text(progress(js)) or "-",
            str((js.status.restarts if js.status else None) or 0),
            age(js.metadata.creation_timestamp if js.metadata else None),
        ]
        out.append([js.namespace or "", *row] if with_namespace else row)
    return out


async def run(args: argparse.Namespace) -> int:
    out = Out()
    async with await connect(args) as sdk:
        if args.name:
            jobsets = [await sdk.get(args.name)]
        else:
            jobsets = await sdk.list(all_namespaces=args.all_namespaces)
    jobsets.sort(key=lambda js: (js.namespace or "", js.name))
    if args.output == "name":
        for js in jobsets:
            out.line(f"{RESOURCE}/{js.name}")
    elif args.output:
        data: Any = (
            jobsets[0].to_dict()
            if args.name
            else {"apiVersion": "v1", "kind": "List", "items": [js.to_dict() for js in jobsets]}
        )
        out.data(data, args.output)
    elif not jobsets:
        where = "any namespace" if args.all_namespaces else f"{sdk.namespace} namespace"
        out.line(f"No resources found in {where}.")
    else:
        headers = ("NAMESPACE", *HEADERS) if args.all_namespaces else HEADERS
        out.table(headers, rows(jobsets, with_namespace=args.all_namespaces))
    return EXIT_OK
