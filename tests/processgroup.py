"""Run a command in a process group of its own, and leave nothing of it behind.

`subprocess.run(..., timeout=...)` kills only the process it started: a benchmark run cut
short left its simulated clusters and controllers running, and the next test shared the
machine with them. Here the command leads a new session (its own process group), and on
the way out - finished, timed out or failed - the whole group gets SIGTERM, then SIGKILL
for whatever is still alive after `grace` seconds.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

__all__ = ["group_alive", "own_group", "stop_group"]


def group_alive(pgid: int) -> list[int]:
    """The pids of the group's processes that are not zombies (a zombie is dead: only its
    exit status waits to be read)."""
    alive = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # gone meanwhile
        # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(int(entry.name))
    return alive


def stop_group(proc: subprocess.Popen[Any], grace: float = 2.0) -> None:
    """SIGTERM to `proc`'s group, SIGKILL to what outlives `grace`; then reap `proc`."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + grace
        while group_alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not group_alive(proc.pid):
            break
    proc.wait()


@contextlib.contextmanager
def own_group(cmd: Sequence[str], **popen: Any) -> Iterator[subprocess.Popen[Any]]:
    """`subprocess.Popen(cmd, **popen)` leading its own process group; the group is stopped
    when the block ends, however it ends."""
    proc = subprocess.Popen(cmd, start_new_session=True, **popen)
    try:
        yield proc
    finally:
        stop_group(proc)
