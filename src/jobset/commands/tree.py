"""`jobset tree NAME`: JobSet → Jobs → Pods, with states, nodes and domains."""

from __future__ import annotations

import argparse

from jobset.commands.common import EXIT_OK, Out, add_connection_flags, add_output_flag, connect
from jobset.commands.inspect import JobView, PodView, Snapshot, collect
from jobset.commands.summary import phase

__all__ = ["lines", "register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "tree",
        help="show a JobSet's Jobs and pods as a tree",
        description="Show JobSet -> Jobs -> Pods with their states, nodes and topology domains.",
    )
    p.add_argument("name")
    add_connection_flags(p)
    add_output_flag(p)
    p.set_defaults(user_command=run)


def _root(snap: Snapshot) -> str:
    js = snap.jobset
    return f"JobSet {js.namespace}/{js.name} ({phase(js)})"


def _job(j: JobView) -> str:
    return (
        f"Job {j.name} ({j.state}, {j.active} active, {j.succeeded} succeeded, {j.failed} failed)"
    )


def _pod(p: PodView) -> str:
    where = f", {p.node}" if p.node else ""
    domain = f" [{p.domain}]" if p.domain else ""
    return f"Pod {p.name} ({p.phase}{where}){domain}"


def lines(snap: Snapshot) -> list[str]:
    """The tree as plain text lines (box-drawing connectors, no colour)."""
    out = [_root(snap)]
    for ji, job in enumerate(snap.jobs):
        last_job = ji == len(snap.jobs) - 1
        out.append(("└── " if last_job else "├── ") + _job(job))
        stem = "    " if last_job else "│   "
        for pi, pod in enumerate(job.pods):
            out.append(stem + ("└── " if pi == len(job.pods) - 1 else "├── ") + _pod(pod))
    return out


async def run(args: argparse.Namespace) -> int:
    out = Out()
    async with await connect(args, read_only=True) as sdk:
        snap = await collect(sdk, await sdk.get(args.name), with_events=False)
    if args.output:
        out.data(snap.to_dict(), args.output)
    elif out.tty:
        from rich.text import Text
        from rich.tree import Tree

        tree = Tree(Text(_root(snap)))
        for job in snap.jobs:
            branch = tree.add(Text(_job(job)))
            for pod in job.pods:
                branch.add(Text(_pod(pod)))
        out.console.print(tree)
    else:
        for text in lines(snap):
            out.line(text)
    return EXIT_OK
