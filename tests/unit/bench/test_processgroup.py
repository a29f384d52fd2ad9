"""A command run through `tests.processgroup` leaves no process behind, however its run
ends - the benchmark smoke tests' simulated clusters and controllers included."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.eventually import eventually_sync
from tests.processgroup import group_alive, own_group, stop_group

# A parent that starts a grandchild in the background and then waits: what a benchmark run
# is to its simulators (and what `subprocess.run(timeout=...)` would leave running).
FAMILY = [
    sys.executable,
    "-c",
    "import subprocess, sys, time;"
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)']);"
    "time.sleep(300)",
]


def test_a_run_cut_by_its_timeout_leaves_no_grandchild() -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        with own_group(FAMILY) as proc:
            eventually_sync(lambda: len(group_alive(proc.pid)) == 2, within=30)
            proc.wait(timeout=0.2)
    assert group_alive(proc.pid) == []


def test_a_finished_run_leaves_no_grandchild() -> None:
    script = (
        "import subprocess, sys;"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])"
    )
    with own_group([sys.executable, "-c", script]) as proc:
        assert proc.wait(timeout=30) == 0
        assert len(group_alive(proc.pid)) == 1  # the grandchild outlived its parent
    assert group_alive(proc.pid) == []


def test_plain_subprocess_timeout_would_leave_the_grandchild() -> None:
    """Why: the run's own timeout kills only the process it started."""
    proc = subprocess.Popen(FAMILY, start_new_session=True)
    try:
        eventually_sync(lambda: len(group_alive(proc.pid)) == 2, within=30)
        proc.kill()  # what subprocess.run does on its timeout
        proc.wait()
        assert len(group_alive(proc.pid)) == 1
    finally:
        stop_group(proc)
    assert group_alive(proc.pid) == []
