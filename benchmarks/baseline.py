"""The baseline: the least API work the benchmark scenarios need, run as its own process.

What every JobSet controller has to do, and nothing more: watch JobSets and Jobs (list +
watch, like any informer), and

- for a new JobSet: create its headless Service and its Jobs - the same bodies the
  controller sends (`jobset.controllers.jobs.construct_job`, a pure function), at most
  `--parallelism` at once per JobSet, `--concurrency` JobSets at once;
- when all of a JobSet's Jobs completed: one status write (Completed);
- when a Job of the current attempt failed: one status write (restarts + 1), delete every
  Job of the attempt (foreground, UID precondition), and create each replacement as soon as
  its predecessor is gone (Recreate) or all of them once every predecessor is gone
  (BlockingRecreate);
- after a restart of this process: nothing at all (every Job already exists).

No reconcile loop, no re-reading, no intermediate status. Same client class, QPS and burst
as the controller, so both pay the same per-request cost; a different user agent
(`jobset-bench-baseline`) so the simulated server counts its requests apart.

    python -m benchmarks.baseline --kubeconfig K [--qps 500 --burst 500 --concurrency 5]

Prints `baseline ready <monotonic time>` once its caches are synced; stops on SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import Awaitable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from benchmarks.workload import (
    BASELINE_USER_AGENT,
    JOBSETS,
    NAMESPACE,
    SERVICES,
    attempt_of,
    condition_true,
)
from jobset.api import constants as c
from jobset.api.defaulting import default_jobset
from jobset.api.types import job_name, replicas
from jobset.controllers.jobs import construct_job
from jobset.controllers.network import headless_service, wants_headless_service
from jobset.runtime.cache import BY_CONTROLLER_UID, index_by_controller_uid, strip_managed_fields
from jobset.runtime.client import JOBS, ApiError, Client, Object
from jobset.runtime.informer import FuncHandler, Informer
from jobset.runtime.ratelimit import api_flow
from jobset.runtime.transforms import slim_job


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _uid(obj: Object) -> str:
    return str(obj["metadata"].get("uid") or "")


def _owner_uid(job: Object) -> str:
    for ref in job["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return str(ref.get("uid") or "")
    return ""


class _State:
    """What the baseline remembers of one JobSet."""

    def __init__(self, js: Object) -> None:
        self.key = (str(js["metadata"].get("namespace")), str(js["metadata"]["name"]))
        self.total = sum(replicas(r) for r in js["spec"].get("replicatedJobs") or [])
        self.restarts = int((js.get("status") or {}).get("restarts") or 0)
        self.strategy = ((js["spec"].get("failurePolicy") or {}).get("restartStrategy")) or (
            c.RESTART_STRATEGY_RECREATE
        )
        self.completed: set[str] = set()
        self.finished = condition_true(js, c.CONDITION_COMPLETED) or condition_true(
            js, c.CONDITION_FAILED
        )
        self.old: set[str] = set()  # Jobs of a previous attempt still to disappear
        self.sem: asyncio.Semaphore | None = None


class Baseline:
    def __init__(self, client: Client, namespace: str, concurrency: int, parallelism: int):
        self.client = client
        self.parallelism = parallelism
        self.concurrency = concurrency
        self.jobsets = Informer(
            client, JOBSETS, namespace=namespace, transform=strip_managed_fields
        )
        self.jobs = Informer(
            client,
            JOBS,
            namespace=namespace,
            transform=slim_job,
            indexers={BY_CONTROLLER_UID: index_by_controller_uid},
        )
        self.states: dict[str, _State] = {}
        self.queue: asyncio.Queue[str] = asyncio.Queue()
        self.tasks: set[asyncio.Task[None]] = set()
        self.synced = False
        self.errors = 0

    # ------------------------------------------------------------------ run

    async def run(self, stop: asyncio.Event) -> None:
        self.jobsets.add_event_handler(FuncHandler(add=self._on_jobset))
        self.jobs.add_event_handler(
            FuncHandler(
                add=self._on_job, update=lambda _old, new: self._on_job(new), delete=self._gone
            )
        )
        self.jobs.start()
        self.jobsets.start()
        await self.jobs.wait_for_sync(600)
        await self.jobsets.wait_for_sync(600)
        self.synced = True
        for _, js in self.jobsets.store.items():
            self._on_jobset(js)
        workers = [asyncio.create_task(self._worker()) for _ in range(self.concurrency)]
        print(f"baseline ready {time.monotonic():.6f}", flush=True)
        await stop.wait()
        for w in workers:
            w.cancel()
        for t in list(self.tasks):
            t.cancel()
        await self.jobsets.stop()
        await self.jobs.stop()

    def _spawn(self, uid: str, coro: Awaitable[None]) -> None:
        """Run `coro` as a task whose API requests are JobSet `uid`'s flow (the task copies
        the context it is created in), as the controller's are its reconcile's."""
        with api_flow(uid):
            task: asyncio.Task[None] = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    # ------------------------------------------------------------------ JobSets

    def _on_jobset(self, js: Object) -> None:
        if not self.synced:
            return  # handled once both caches are complete
        uid = _uid(js)
        if uid in self.states:
            return
        state = self.states[uid] = _State(js)
        state.sem = asyncio.Semaphore(self.parallelism)
        if not state.finished:
            self.queue.put_nowait(uid)

    async def _worker(self) -> None:
        while True:
            uid = await self.queue.get()
            # One flow per JobSet in the client's fair bucket, as the controller's reconciles
            # are: a heavy flow is paced at the rate, and one flow for everything would be.
            with api_flow(uid):
                await self._create_children(uid)

    def _jobset(self, uid: str) -> Object | None:
        state = self.states.get(uid)
        if state is None:
            return None
        return self.jobsets.store.get_by_name(*state.key)

    async def _create_children(self, uid: str) -> None:
        js = self._jobset(uid)
        state = self.states[uid]
        if js is None:
            return
        defaulted = default_jobset(js)
        existing = {
            str(j["metadata"]["name"]) for j in self.jobs.store.by_index(BY_CONTROLLER_UID, uid)
        }
        # The Service goes with the first Jobs: a restarted baseline that finds Jobs finds it.
        if wants_headless_service(defaulted) and not existing:
            await self._call(
                self.client.create(SERVICES, headless_service(defaulted)), ok_exists=True
            )
        await self._create_jobs(state, defaulted, existing)

    async def _create_jobs(
        self, state: _State, defaulted: Mapping[str, Any], skip: Iterable[str] = ()
    ) -> None:
        skip = set(skip)
        js = {
            **defaulted,
            "status": {**(defaulted.get("status") or {}), "restarts": state.restarts},
        }
        bodies = [
            construct_job(js, rjob, idx)
            for rjob in js["spec"]["replicatedJobs"]
            for idx in range(replicas(rjob))
            if job_name(js, rjob, idx) not in skip
        ]
        await self._bounded(state, (self._create_job(b) for b in bodies))

    async def _create_job(self, body: Object) -> None:
        await self._call(self.client.create(JOBS, body), ok_exists=True)

    async def _bounded(self, state: _State, calls: Iterable[Awaitable[None]]) -> None:
        assert state.sem is not None
        sem = state.sem

        async def one(call: Awaitable[None]) -> None:
            async with sem:
                await call

        await asyncio.gather(*(one(call) for call in calls))

    async def _call(self, call: Awaitable[Any], *, ok_exists: bool = False) -> None:
        try:
            await call
        except ApiError as err:
            if (ok_exists and err.already_exists) or err.not_found or err.status == 409:
                return
            self.errors += 1
            print(f"baseline: {err}", file=sys.stderr, flush=True)

    async def _write_status(self, uid: str, status: dict[str, Any]) -> None:
        js = self._jobset(uid)
        if js is None:
            return
        await self._call(
            self.client.update_status(
                JOBSETS, {**js, "status": {**(js.get("status") or {}), **status}}
            )
        )

    # ------------------------------------------------------------------ Jobs

    def _on_job(self, job: Object) -> None:
        if not self.synced:
            return
        uid = _owner_uid(job)
        state = self.states.get(uid)
        if state is None or state.finished or attempt_of(job) != state.restarts:
            return
        name = str(job["metadata"]["name"])
        if condition_true(job, "Complete"):
            state.completed.add(name)
            if len(state.completed) == state.total:
                state.finished = True
                self._spawn(uid, self._complete(uid))
        elif condition_true(job, "Failed"):
            self._start_restart(uid, state)

    async def _complete(self, uid: str) -> None:
        t = _now()
        await self._write_status(
            uid,
            {
                "terminalState": c.TERMINAL_STATE_COMPLETED,
                "conditions": [
                    {
                        "type": c.CONDITION_COMPLETED,
                        "status": "True",
                        "reason": c.ALL_JOBS_COMPLETED_REASON,
                        "message": c.ALL_JOBS_COMPLETED_MESSAGE,
                        "lastTransitionTime": t,
                    }
                ],
            },
        )

    def _start_restart(self, uid: str, state: _State) -> None:
        """Decided synchronously (a second event of the same failure sees the new attempt)."""
        old = [
            j
            for j in self.jobs.store.by_index(BY_CONTROLLER_UID, uid)
            if attempt_of(j) <= state.restarts
        ]
        state.restarts += 1
        state.completed.clear()
        state.old = {str(j["metadata"]["name"]) for j in old}
        self._spawn(uid, self._restart(uid, state, old))

    async def _restart(self, uid: str, state: _State, old: list[Object]) -> None:
        await self._write_status(uid, {"restarts": state.restarts})
        await self._bounded(state, (self._delete(j) for j in old))

    async def _delete(self, job: Object) -> None:
        meta = job["metadata"]
        await self._call(
            self.client.delete(
                JOBS,
                meta["name"],
                meta.get("namespace"),
                propagation_policy="Foreground",
                uid=meta.get("uid"),
            )
        )

    def _gone(self, job: Object) -> None:
        uid = _owner_uid(job)
        state = self.states.get(uid)
        if state is None or attempt_of(job) >= state.restarts:
            return
        name = str(job["metadata"]["name"])
        if name not in state.old:
            return
        state.old.discard(name)
        js = self._jobset(uid)
        if js is None:
            return
        defaulted = default_jobset(js)
        if state.strategy == c.RESTART_STRATEGY_BLOCKING_RECREATE:
            if not state.old:
                self._spawn(uid, self._create_jobs(state, defaulted))
            return
        # Recreate: this one Job, by its ReplicatedJob and index.
        labels = job["metadata"].get("labels") or {}
        rjob = next(
            r
            for r in defaulted["spec"]["replicatedJobs"]
            if r["name"] == labels.get(c.REPLICATED_JOB_NAME_KEY)
        )
        js = {
            **defaulted,
            "status": {**(defaulted.get("status") or {}), "restarts": state.restarts},
        }
        body = construct_job(js, rjob, int(labels[c.JOB_INDEX_KEY]))
        self._spawn(uid, self._bounded(state, [self._create_job(body)]))


async def _main(args: argparse.Namespace) -> int:
    client = await Client.connect(
        args.kubeconfig,
        qps=args.qps,
        burst=args.burst,
        user_agent=BASELINE_USER_AGENT,
        pool_size=max(64, args.parallelism * args.concurrency),
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    baseline = Baseline(client, args.namespace, args.concurrency, args.parallelism)
    try:
        await baseline.run(stop)
    finally:
        await client.close()
    return 1 if baseline.errors else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--kubeconfig", required=True)
    p.add_argument("--namespace", default=NAMESPACE)
    p.add_argument("--qps", type=float, default=500.0)
    p.add_argument("--burst", type=int, default=500)
    p.add_argument("--concurrency", type=int, default=5, help="JobSets handled at once")
    p.add_argument(
        "--parallelism", type=int, default=c.MAX_PARALLELISM, help="API calls at once per JobSet"
    )
    args = p.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        return asyncio.run(_main(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
