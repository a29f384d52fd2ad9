"""`jobset logs NAME`: the logs of every pod of a JobSet, each line prefixed by where it came
from (`workers-0-1`: ReplicatedJob, Job index, pod index; `/container` when a pod has
several), coloured on a terminal.

Without `-f` the pods' logs are printed one pod after the other, in spec order. With `-f`
every container is followed as it runs, and pods that appear meanwhile are picked up: the
new attempt's after a group restart, a pod its Job recreated, a container restarted in
place. It ends once the JobSet has finished (or is gone) and every log has ended, or at
Ctrl-C. `--attempt N` keeps the pods of restart attempt N only. Only the public API is used
(pods and their `log` subresource), so it works on any cluster, as `kubectl jobset logs` too.

On a terminal, control characters in the logs are shown, not sent (as `jobset describe`
shows event messages); on a pipe the bytes are written as the containers wrote them.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from jobset.api import constants as c
from jobset.commands.common import EXIT_OK, add_connection_flags, connect, parse_duration
from jobset.commands.terminal import escape_terminal

if TYPE_CHECKING:
    from jobset.sdk.client import JobSetClient
    from jobset.sdk.models import JobSet

__all__ = ["LineSplitter", "Source", "register", "run", "select", "sources"]

# A log line longer than this is cut into pieces (a container that never writes a newline
# must not grow the buffer without bound).
MAX_LINE: Final = 64 * 1024
# How often `-f` looks for new pods and containers.
POLL_SECONDS: Final = 1.0
_COLOURS: Final = (31, 32, 33, 34, 35, 36, 91, 92, 93, 94, 95, 96)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "logs",
        help="print (or follow, -f) the logs of every pod of a JobSet",
        description=__doc__.split("\n", 2)[2] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("name")
    add_connection_flags(p)
    p.add_argument(
        "-f", "--follow", action="store_true", help="follow, across restarts, until it finishes"
    )
    p.add_argument("--replicated-job", metavar="NAME", help="only this ReplicatedJob's pods")
    p.add_argument("--job-index", type=int, metavar="N", help="only the pods of Job index N")
    p.add_argument("--pod-index", type=int, metavar="N", help="only pods of completion index N")
    p.add_argument("-c", "--container", metavar="NAME", help="only this container")
    p.add_argument(
        "--since",
        type=parse_duration,
        metavar="DURATION",
        help="only lines newer than this (5s, 2m, 1h)",
    )
    p.add_argument("--tail", type=int, metavar="N", help="the last N lines of each log first")
    p.add_argument("--attempt", type=int, metavar="N", help="only the pods of restart attempt N")
    p.set_defaults(user_command=run)


@dataclass(frozen=True)
class Source:
    """One container of one pod: what to fetch and how its lines are prefixed."""

    key: tuple[str, str, int]  # pod uid, container, restart count: one container instance
    pod: Mapping[str, Any]
    container: str
    prefix: str
    order: tuple[int, int, str]


def _labels(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    return (pod.get("metadata") or {}).get("labels") or {}


def _pod_index(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    index = (meta.get("annotations") or {}).get(c.JOB_COMPLETION_INDEX_ANNOTATION)
    index = index or _labels(pod).get(c.JOB_COMPLETION_INDEX_ANNOTATION)
    return str(index) if index is not None else str(meta.get("name") or "").rsplit("-", 1)[-1]


def _number(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return -1


def select(pod: Mapping[str, Any], args: argparse.Namespace) -> bool:
    """Whether the filters (`--replicated-job`, `--job-index`, `--pod-index`, `--attempt`)
    keep `pod`."""
    labels = _labels(pod)
    checks = (
        (args.replicated_job, labels.get(c.REPLICATED_JOB_NAME_KEY)),
        (args.job_index, _number(labels.get(c.JOB_INDEX_KEY))),
        (args.pod_index, _number(_pod_index(pod))),
        (args.attempt, _number(labels.get(c.RESTART_ATTEMPT_KEY))),
    )
    return all(want is None or want == have for want, have in checks)


def _started(pod: Mapping[str, Any], container: str) -> tuple[bool, int]:
    """Whether `container` has started (so it has a log), and its restart count."""
    for status in (pod.get("status") or {}).get("containerStatuses") or ():
        if status.get("name") == container:
            state = status.get("state") or {}
            return "running" in state or "terminated" in state, int(status.get("restartCount") or 0)
    return False, 0


def sources(pods: Iterable[Mapping[str, Any]], container: str | None) -> list[Source]:
    """Every started container of `pods` (only `container` when given), in spec order."""
    out: list[Source] = []
    for pod in pods:
        labels = _labels(pod)
        names = [str(ct.get("name")) for ct in (pod.get("spec") or {}).get("containers") or ()]
        base = "-".join(
            (
                str(labels.get(c.REPLICATED_JOB_NAME_KEY) or "?"),
                str(labels.get(c.JOB_INDEX_KEY) or "?"),
                _pod_index(pod),
            )
        )
        order = (_number(labels.get(c.JOB_GLOBAL_INDEX_KEY)), _number(_pod_index(pod)), base)
        uid = str((pod.get("metadata") or {}).get("uid") or "")
        for name in names:
            if container is not None and name != container:
                continue
            started, restarts = _started(pod, name)
            if not started:
                continue
            prefix = base if len(names) == 1 or container is not None else f"{base}/{name}"
            out.append(Source((uid, name, restarts), pod, name, prefix, order))
    return sorted(out, key=lambda s: s.order)


class LineSplitter:
    """Chunks of a log in, whole lines out (a piece of `MAX_LINE` bytes counts as a line);
    undecodable bytes are replaced, as a terminal would show them."""

    def __init__(self) -> None:
        self.buffer = b""

    def feed(self, chunk: bytes) -> list[str]:
        self.buffer += chunk
        lines: list[str] = []
        while True:
            cut = self.buffer.find(b"\n", 0, MAX_LINE)
            if cut < 0 and len(self.buffer) < MAX_LINE:
                return lines
            end = cut + 1 if cut >= 0 else MAX_LINE
            lines.append(self.buffer[:end].decode("utf-8", "replace").rstrip("\n"))
            self.buffer = self.buffer[end:]

    def rest(self) -> list[str]:
        tail, self.buffer = self.buffer, b""
        return [tail.decode("utf-8", "replace")] if tail else []


def formatter(tty: bool) -> Callable[[str, str], str]:
    """How one line is printed: `prefix line`, the prefix coloured and the line's controls
    shown (not sent) on a terminal."""

    def plain(prefix: str, line: str) -> str:
        return f"{prefix} {line}\n"

    def coloured(prefix: str, line: str) -> str:
        colour = _COLOURS[zlib.crc32(prefix.encode()) % len(_COLOURS)]
        return f"\x1b[{colour}m{escape_terminal(prefix)}\x1b[0m {escape_terminal(line)}\n"

    return coloured if tty else plain


@dataclass
class _Printer:
    args: argparse.Namespace
    show: Callable[[str, str], str]

    async def copy(self, sdk: JobSetClient, source: Source, *, follow: bool) -> None:
        """One container's log to stdout, line by line."""
        since = self.args.since
        split = LineSplitter()
        async with sdk.pod_log(
            source.pod,
            source.container,
            follow=follow,
            since_seconds=math.ceil(since) if since else None,
            tail_lines=self.args.tail,
        ) as chunks:
            async for chunk in chunks:
                self.write(source.prefix, split.feed(chunk))
        self.write(source.prefix, split.rest())

    def write(self, prefix: str, lines: list[str]) -> None:
        if lines:
            sys.stdout.write("".join(self.show(prefix, line) for line in lines))
            sys.stdout.flush()


async def _pods(sdk: JobSetClient, js: JobSet, args: argparse.Namespace) -> list[dict[str, Any]]:
    return [p for p in await sdk.pods(js) if select(p, args)]


async def _follow(sdk: JobSetClient, js: JobSet, printer: _Printer) -> None:
    """Follow every container as it starts, until the JobSet is over and every log ended."""
    from jobset.runtime.apitypes import ApiError

    tasks: dict[tuple[str, str, int], asyncio.Task[None]] = {}

    async def copy(source: Source) -> None:
        try:
            await printer.copy(sdk, source, follow=True)
        except ApiError:
            pass  # gone before its log could be read (deleted by a restart)

    try:
        while True:
            for source in sources(await _pods(sdk, js, printer.args), printer.args.container):
                if source.key not in tasks:
                    tasks[source.key] = asyncio.create_task(copy(source))
            for task in tasks.values():  # a failed write (stdout closed) ends it all
                failed = task.exception() if task.done() and not task.cancelled() else None
                if failed is not None:
                    raise failed
            if await _over(sdk, js, printer.args) and all(t.done() for t in tasks.values()):
                return
            await asyncio.sleep(POLL_SECONDS)
    finally:
        for task in tasks.values():
            task.cancel()
        await asyncio.gather(*tasks.values(), return_exceptions=True)


async def _over(sdk: JobSetClient, js: JobSet, args: argparse.Namespace) -> bool:
    """The JobSet has finished or is gone, or (`--attempt N`) restarted past attempt N."""
    from jobset.runtime.apitypes import ApiError

    try:
        now = await sdk.get(js.name, js.namespace)
    except ApiError as err:
        if err.not_found:
            return True
        raise
    restarts = (now.status.restarts if now.status else None) or 0
    return now.is_finished or (args.attempt is not None and restarts > args.attempt)


async def run(args: argparse.Namespace) -> int:
    printer = _Printer(args, formatter(sys.stdout.isatty()))
    async with await connect(args) as sdk:
        js = await sdk.get(args.name)
        if args.follow:
            await _follow(sdk, js, printer)
            return EXIT_OK
        for source in sources(await _pods(sdk, js, args), args.container):
            await printer.copy(sdk, source, follow=False)
    return EXIT_OK
