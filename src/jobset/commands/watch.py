"""`jobset watch NAME`: live progress per ReplicatedJob until the JobSet finishes.

Exit codes, for scripts (`jobset watch train && deploy-model`):

  0  the JobSet Completed
  1  error (the JobSet does not exist, the API cannot be reached...)
  3  the JobSet Failed
  4  --timeout expired first
  5  the JobSet was deleted while being watched

On a terminal, one progress bar per ReplicatedJob (succeeded Jobs of replicas, with ready
and failed counts); otherwise one plain line per change, for logs. Every --explain-every
seconds (5 by default, 0: never) it also says what the JobSet is waiting on, when anything
holds it up: pods the scheduler cannot place (with its "0/16 nodes are available: ..."),
pods that cannot be created (a webhook's refusal) or started, a restart in progress.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Final, Protocol

from jobset.api import constants as c
from jobset.commands.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_TIMEOUT,
    EXIT_VANISHED,
    Out,
    add_connection_flags,
    connect,
)
from jobset.commands.inspect import collect
from jobset.commands.summary import phase, progress, progress_text
from jobset.sdk.models import JobSet

if TYPE_CHECKING:
    from jobset.sdk.client import JobSetClient

__all__ = ["follow", "register", "run", "status_line"]

EXPLAIN_EVERY: Final = 5.0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "watch",
        help="follow a JobSet until it finishes (exit 0 Completed, 3 Failed)",
        description=__doc__.split("\n", 2)[2] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("name")
    add_connection_flags(p)
    p.add_argument("--timeout", type=float, default=None, help="give up after SECONDS (exit 4)")
    p.add_argument(
        "--explain-every",
        type=float,
        default=EXPLAIN_EVERY,
        metavar="SECONDS",
        help="say what the JobSet waits on this often, when something holds it up (0: never)",
    )
    p.set_defaults(user_command=run)


def status_line(js: JobSet) -> str:
    """`Running, restarts 0: leader 1/0/0 of 1, workers 2/0/0 of 3` (ready/succeeded/failed)."""
    restarts = (js.status.restarts if js.status else None) or 0
    return f"{phase(js)}, restarts {restarts}: {progress_text(progress(js))}"


def _final_line(js: JobSet) -> str:
    state = js.terminal_state or ""
    cond = js.condition(state if state == c.TERMINAL_STATE_FAILED else c.CONDITION_COMPLETED)
    why = f" ({cond.reason}: {cond.message})" if cond is not None and cond.reason else ""
    return f"JobSet {js.name} {state}{why}"


class _View(Protocol):
    def update(self, js: JobSet) -> None: ...
    def explain(self, lines: list[str]) -> None: ...
    def close(self) -> None: ...


class _PlainView:
    """A line per visible change, prefixed with the time since the watch started."""

    def __init__(self, out: Out) -> None:
        self.out = out
        self.t0 = time.monotonic()
        self.last = ""
        self.last_explained: list[str] = []

    def update(self, js: JobSet) -> None:
        text = status_line(js)
        if text != self.last:
            self.last = text
            self.out.line(f"[{time.monotonic() - self.t0:6.1f}s] {text}")

    def explain(self, lines: list[str]) -> None:
        stamp = f"[{time.monotonic() - self.t0:6.1f}s]  "
        if lines and lines != self.last_explained:
            for line in lines:
                self.out.line(f"{stamp} waiting on: {line}")
        elif not lines and self.last_explained:
            self.out.line(f"{stamp} no longer waiting")  # what held it has passed
        self.last_explained = lines

    def close(self) -> None:
        pass


class _LiveView:
    """Rich progress bars, one per ReplicatedJob, under a header with phase and restarts."""

    def __init__(self, out: Out, js: JobSet) -> None:
        from rich.console import Group
        from rich.live import Live
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn
        from rich.progress import Progress as Bars
        from rich.text import Text

        self.bars = Bars(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("succeeded  ready {task.fields[ready]}  failed {task.fields[failed]}"),
            console=out.console,
        )
        self.tasks = {
            p.name: self.bars.add_task(p.name, total=p.replicas, ready=0, failed=0)
            for p in progress(js)
        }
        self.header = Text("")
        self.waiting = Text("")
        self.live = Live(
            Group(self.header, self.bars, self.waiting), console=out.console, refresh_per_second=8
        )
        self.live.start()

    def update(self, js: JobSet) -> None:
        restarts = (js.status.restarts if js.status else None) or 0
        self.header.plain = f"JobSet {js.name}: {phase(js)}, restarts {restarts}"
        for p in progress(js):
            task = self.tasks.get(p.name)
            if task is not None:
                self.bars.update(task, completed=p.succeeded, ready=p.ready, failed=p.failed)

    def explain(self, lines: list[str]) -> None:
        self.waiting.plain = "\n".join(f"waiting on: {line}" for line in lines)

    def close(self) -> None:
        self.live.stop()


async def _explain(sdk: JobSetClient, view: _View, latest: list[JobSet], every: float) -> None:
    """Every `every` seconds, what the JobSet waits on (`jobset.commands.blockers`). The
    look-up lists the JobSet's Jobs, pods and events: for a JobSet so large that it takes a
    while, the pause grows to ten times its duration, so watching never loads the API server
    much."""
    loop = asyncio.get_running_loop()
    while True:
        js = latest[0]
        started = loop.time()
        if not js.is_finished:
            try:
                snap = await collect(sdk, js, max_events=0)
            except asyncio.CancelledError:
                raise
            except Exception:  # a failed look-up costs one explanation, not the watch
                pass
            else:
                view.explain([b.text() for b in snap.blockers])
        await asyncio.sleep(max(every, 10 * (loop.time() - started)))


async def follow(
    sdk: JobSetClient,
    name: str,
    out: Out,
    timeout: float | None = None,  # noqa: ASYNC109
    explain_every: float = EXPLAIN_EVERY,
) -> int:
    """Show `name` until it finishes; return the exit code (see the module docstring)."""
    js = await sdk.get(name)  # NotFound here is an error (exit 1), not a vanished JobSet
    view: _View = _LiveView(out, js) if out.tty else _PlainView(out)
    latest = [js]
    explainer = (
        asyncio.create_task(_explain(sdk, view, latest, explain_every))
        if explain_every > 0
        else None
    )
    try:
        async with asyncio.timeout(timeout):
            async with contextlib.aclosing(sdk.watch(name)) as events:
                async for event in events:
                    if event.type == "DELETED":
                        view.close()
                        out.line(f"JobSet {name} was deleted")
                        return EXIT_VANISHED
                    latest[0] = event.jobset
                    view.update(event.jobset)
                    if event.jobset.is_finished:
                        view.close()
                        out.line(_final_line(event.jobset))
                        completed = event.jobset.terminal_state == c.TERMINAL_STATE_COMPLETED
                        return EXIT_OK if completed else EXIT_FAILED
    except TimeoutError:
        view.close()
        out.line(f"timed out after {timeout:g}s; JobSet {name} is still running")
        return EXIT_TIMEOUT
    finally:
        if explainer is not None:
            explainer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await explainer
        view.close()
    return EXIT_VANISHED  # the watch never ends by itself


async def run(args: argparse.Namespace) -> int:
    async with await connect(args) as sdk:
        return await follow(sdk, args.name, Out(), args.timeout, args.explain_every)
