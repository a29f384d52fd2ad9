"""Shared machinery of the reliability suite.

The simulated cluster runs in the test's process (so the invariants are checked on the
store's own change stream, which fault injection never touches), the controller under test
runs as the real `jobset controller` command in its own process (so it can be SIGKILLed),
talking to the cluster over HTTPS through whatever faults the plan injects.
"""

from __future__ import annotations

import asyncio
import functools
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from jobset.api import constants as c
from jobset.resources import JOBSETS
from jobset.runtime.client import NAMESPACES, ApiError, Client
from kubesim.apiserver.core.store import WatchEvent
from kubesim.process import controller_command, free_port
from tests import builders
from tests.eventually import eventually as _eventually
from tests.logs import traceback_lines

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[3]
RESTART_ATTEMPT = "jobset.sigs.k8s.io/restart-attempt"


# These tests poll an API server that faults, restarts or goes away: an API error means
# "not yet", and they poll less often than the unit-sized tests do.
eventually = functools.partial(_eventually, interval=0.2, retry_on=(ApiError,))


# ------------------------------------------------------------------------ the workload


@dataclass(frozen=True)
class Expected:
    """How a JobSet ends without faults: its terminal condition, reason and restarts."""

    condition: str  # Completed or Failed
    reason: str
    restarts: int


KINDS = ("ok", "restarts", "fails")


def workload(
    name: str, kind: str, ns: str, run_seconds: float = 3.0
) -> tuple[dict[str, Any], Expected]:
    """A JobSet of one of three kinds whose end state is fixed by the JobSet API:

    - ok: a leader and two workers that succeed after `run_seconds` (simulated): Completed,
      0 restarts;
    - restarts: every pod exits 1, failurePolicy.maxRestarts 2: exactly 2 restarts, then
      Failed/ReachedMaxRestarts;
    - fails: every pod exits 1, no failure policy: Failed/FailedJobs, 0 restarts.
    """
    ok = {"SIM_DURATION": str(run_seconds), "SIM_EXIT_CODE": "0"}
    bad = {"SIM_DURATION": "0.5", "SIM_EXIT_CODE": "1"}
    policy: dict[str, Any] = {}
    if kind == "ok":
        rjobs = builders.rjob("leader", 1, env=ok), builders.rjob("workers", 2, env=ok)
        expected = Expected("Completed", c.ALL_JOBS_COMPLETED_REASON, 0)
    elif kind == "restarts":
        rjobs = builders.rjob("leader", 1, env=bad), builders.rjob("workers", 1, env=ok)
        policy = {"failurePolicy": {"maxRestarts": 2}}
        expected = Expected("Failed", c.REACHED_MAX_RESTARTS_REASON, 2)
    else:
        rjobs = builders.rjob("leader", 1, env=bad), builders.rjob("workers", 1, env=ok)
        expected = Expected("Failed", c.FAILED_JOBS_REASON, 0)
    return builders.jobset(name, *rjobs, namespace=ns, **policy), expected


def terminal(js: dict[str, Any]) -> tuple[str, str] | None:
    for cond in (js.get("status") or {}).get("conditions") or []:
        if cond.get("type") in ("Completed", "Failed") and cond.get("status") == "True":
            return str(cond["type"]), str(cond.get("reason") or "")
    return None


def outcome(js: dict[str, Any]) -> Expected | None:
    t = terminal(js)
    if t is None:
        return None
    return Expected(t[0], t[1], int((js.get("status") or {}).get("restarts") or 0))


async def make_namespace(client: Client, ns: str) -> None:
    try:
        await client.create(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
        )
    except ApiError as err:
        if not err.already_exists:
            raise


async def create_retrying(client: Client, obj: dict[str, Any], within: float = 120) -> None:
    """Create a JobSet through a faulty API server (POST is not retried by the client)."""
    deadline = time.monotonic() + within
    while True:
        try:
            await client.create(JOBSETS, obj)
            return
        except ApiError as err:
            if err.already_exists:
                return
            if (err.status < 500 and err.status != 429) or time.monotonic() > deadline:
                raise
        except OSError:
            if time.monotonic() > deadline:
                raise
        await asyncio.sleep(0.2)


async def outcomes(client: Client, ns: str) -> dict[str, Expected | None]:
    items = (await client.list(JOBSETS, ns))["items"]
    return {js["metadata"]["name"]: outcome(js) for js in items}


# ------------------------------------------------------------------------ the invariants


@dataclass
class Invariants:
    """Checks every change of Jobs and JobSets in the cluster's store, as it happens.

    - a Job is created at most once per (JobSet uid, name, restart attempt): no duplicate
      Job ever exists, and no restart attempt is run twice (a double action after a crash);
    - a JobSet never has more Jobs at once than its replicas add up to;
    - a JobSet's restart count never goes down nor jumps by more than one;
    - the restart attempts each JobSet ran, for comparing with its final restart count.
    """

    created: dict[tuple[str, str, str], int] = field(default_factory=dict)
    live: dict[str, set[str]] = field(default_factory=dict)
    capacity: dict[str, int] = field(default_factory=dict)
    restarts: dict[str, int] = field(default_factory=dict)
    attempts: dict[str, set[int]] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)
    job_events: int = 0

    def __call__(self, rkey: tuple[str, str], ev: WatchEvent) -> None:
        if rkey == ("batch", "jobs"):
            self._job(ev)
        elif rkey == ("jobset.x-k8s.io", "jobsets"):
            self._jobset(ev)

    def _job(self, ev: WatchEvent) -> None:
        self.job_events += 1
        meta = ev.obj["metadata"]
        owner = next(
            (r["uid"] for r in meta.get("ownerReferences") or [] if r.get("kind") == "JobSet"),
            None,
        )
        if owner is None:
            return
        name = meta["name"]
        if ev.type == "ADDED":
            attempt = (meta.get("labels") or {}).get(RESTART_ATTEMPT, "?")
            key = (owner, name, attempt)
            self.created[key] = self.created.get(key, 0) + 1
            if self.created[key] > 1:
                self.violations.append(f"Job {name} (attempt {attempt}) created again")
            self.attempts.setdefault(owner, set()).add(int(attempt) if attempt.isdigit() else -1)
            live = self.live.setdefault(owner, set())
            live.add(name)
            cap = self.capacity.get(owner)
            if cap is not None and len(live) > cap:
                self.violations.append(f"{len(live)} Jobs of JobSet {owner} at once (max {cap})")
        elif ev.type == "DELETED":
            self.live.get(owner, set()).discard(name)

    def _jobset(self, ev: WatchEvent) -> None:
        meta = ev.obj["metadata"]
        uid = meta["uid"]
        if uid not in self.capacity:
            self.capacity[uid] = sum(
                int(r.get("replicas", 1)) for r in ev.obj["spec"].get("replicatedJobs") or []
            )
        restarts = int((ev.obj.get("status") or {}).get("restarts") or 0)
        before = self.restarts.get(uid, 0)
        if restarts < before or restarts > before + 1:
            self.violations.append(f"JobSet {meta['name']} restarts {before} -> {restarts}")
        self.restarts[uid] = max(before, restarts)


# ------------------------------------------------------------------------ the controller


@dataclass
class ControllerProcess:
    proc: subprocess.Popen[bytes]
    log: Path
    health_port: int | None

    def readyz(self, verbose: bool = True) -> tuple[int, str]:
        assert self.health_port is not None
        url = f"http://127.0.0.1:{self.health_port}/readyz" + ("?verbose" if verbose else "")
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()
        except (urllib.error.URLError, OSError) as err:
            return 0, repr(err)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def text(self) -> str:
        return self.log.read_text(errors="replace")


def start_controller(
    kubeconfig: str | Path,
    log: Path,
    *flags: str,
    health: bool = False,
    log_level: str = "WARNING",
) -> ControllerProcess:
    health_port = free_port() if health else None
    cmd = controller_command(
        kubeconfig,
        "--metrics-port",
        "-1",
        "--health-port",
        str(health_port if health_port is not None else -1),
        "--webhook-port",
        str(free_port()),
        "--log-level",
        log_level,
        "--qps",
        "200",
        "--burst",
        "400",
        *flags,
    )
    out = log.open("ab")
    proc = subprocess.Popen(
        cmd,
        stdout=out,
        stderr=subprocess.STDOUT,
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    out.close()
    return ControllerProcess(proc, log, health_port)


class Controllers:
    """Every controller process a test started, killed at the end whatever happens."""

    def __init__(self) -> None:
        self.all: list[ControllerProcess] = []

    def start(self, *args: Any, **kwargs: Any) -> ControllerProcess:
        p = start_controller(*args, **kwargs)
        self.all.append(p)
        return p

    def close(self) -> None:
        for p in self.all:
            p.kill()


def controllers_fixture() -> Iterator[Controllers]:
    cs = Controllers()
    try:
        yield cs
    finally:
        cs.close()


def unexpected_exceptions(log_text: str) -> list[str]:
    """Log records carrying a traceback for anything but an API error (a crash, a bug).

    A reconcile that fails on an injected 5xx is logged with its traceback and retried;
    that is expected. Any other exception is not, nor a traceback printed past the logger.
    """
    import json

    bad: list[str] = []
    for line in traceback_lines(log_text):
        try:
            rec = json.loads(line)
        except ValueError:
            bad.append(line[:2000])
            continue
        error = str(rec.get("error", ""))
        if not error.startswith(("ApiError(", "ActionError(")):
            bad.append(line[:2000])
    return bad
