"""`jobset logs`: which containers, their prefixes, and what a pod's log may hold (hostile
input: no newline ever, terminal controls, invalid UTF-8)."""

from __future__ import annotations

import argparse
from typing import Any

from jobset.api import constants as c
from jobset.commands.logs import MAX_LINE, LineSplitter, formatter, select, sources


def _pod(rjob: str, job: int, index: int, attempt: int = 0, *containers: str, **states: str) -> dict[str, Any]:  # fmt: skip
    names = containers or ("main",)
    labels = {c.REPLICATED_JOB_NAME_KEY: rjob, c.JOB_INDEX_KEY: str(job),
              c.JOB_GLOBAL_INDEX_KEY: str(job), c.RESTART_ATTEMPT_KEY: str(attempt)}  # fmt: skip
    statuses = [
        {"name": n, "restartCount": 0, "state": {states.get(n, "running"): {}}} for n in names
    ]
    return {
        "metadata": {"name": f"js-{rjob}-{job}-{index}-abcde", "uid": f"{rjob}{job}{index}{attempt}",
                     "labels": labels,
                     "annotations": {c.JOB_COMPLETION_INDEX_ANNOTATION: str(index)}},
        "spec": {"containers": [{"name": n} for n in names]},
        "status": {"containerStatuses": statuses},
    }  # fmt: skip


def _args(**kw: Any) -> argparse.Namespace:
    base = {"replicated_job": None, "job_index": None, "pod_index": None, "attempt": None}
    return argparse.Namespace(**{**base, **kw})


def test_prefixes_order_and_filters() -> None:
    pods = [
        _pod("workers", 1, 0),
        _pod("workers", 0, 1, 0, "main", "sidecar", sidecar="waiting"),
        _pod("workers", 0, 0, 1),
        _pod("leader", 0, 0, 0, "main", "sidecar"),
    ]
    got = [(s.prefix, s.container) for s in sources(pods, None)]
    assert got == [
        ("leader-0-0/main", "main"),
        ("leader-0-0/sidecar", "sidecar"),
        ("workers-0-0", "main"),
        ("workers-0-1/main", "main"),  # its sidecar has not started: no log yet
        ("workers-1-0", "main"),
    ]
    assert [s.prefix for s in sources(pods, "sidecar")] == ["leader-0-0"]
    kept = [p for p in pods if select(p, _args(replicated_job="workers", job_index=0))]
    assert [s.prefix for s in sources(kept, None)] == ["workers-0-0", "workers-0-1/main"]
    assert [p["metadata"]["uid"] for p in pods if select(p, _args(attempt=1))] == ["workers001"]
    assert [p["metadata"]["uid"] for p in pods if select(p, _args(pod_index=1))] == ["workers010"]


def test_a_log_without_newlines_is_cut_and_bad_bytes_replaced() -> None:
    split = LineSplitter()
    assert split.feed(b"first\nsec") == ["first"]
    assert split.feed(b"ond\n\xff\xfe tail") == ["second"]
    assert split.rest() == ["\ufffd\ufffd tail"]
    huge = LineSplitter()
    out: list[str] = []
    for _ in range(40):  # 2.5 MiB and never a newline
        out += huge.feed(b"x" * 65536)
    assert len(out) == 40 and all(len(line) == MAX_LINE for line in out)
    assert huge.buffer == b""


def test_on_a_terminal_controls_are_shown_not_sent() -> None:
    hostile = "\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J done\r"
    assert formatter(tty=False)("w-0-0", hostile) == f"w-0-0 {hostile}\n"
    shown = formatter(tty=True)("w-0-0", hostile)
    assert shown.endswith(" ^[]52;c;cm0gLXJmIH4=^G^[[2J done\\r\n")
    assert shown.startswith("\x1b[") and shown.count("\x1b") == 2  # the prefix's colour only
