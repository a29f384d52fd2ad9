"""KEP-1282 execution attempts end to end, named after the KEP's integration test plan.

A `jobset sim` at the default level (Jobs get pods, simulated programs run them) and the
controller in this test's event loop with `ExecutionAttemptsTracking` on, so the annotation
is checked where logging pipelines read it: on the pods. The upgrade case runs the controller
with the gate off, then a new one with it on over the same running JobSet.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from jobset.api import constants as c
from jobset.resources import JOBSETS
from jobset.runtime.client import PODS, Client
from kubesim.process import SimProcess, start_sim
from tests.eventually import eventually
from tests.sims import install_jobset_crd

from .conftest import running_controller
from .helpers import Env, has_condition, jobset, rjob

KEY = c.EXECUTION_ATTEMPT_KEY
ON = {c.FEATURE_EXECUTION_ATTEMPTS_TRACKING: True}
RUN = ["sh", "-c", "sleep 600"]
_ns = itertools.count()


@pytest.fixture(scope="module")
def sim_pods(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    s = start_sim(tmp_path_factory.mktemp("sim"), "--nodes", "2")
    try:
        install_jobset_crd(s)
        yield s
    finally:
        s.stop()


@pytest.fixture
async def client(sim_pods: SimProcess) -> AsyncIterator[tuple[Client, str]]:
    cl = await Client.connect(str(sim_pods.kubeconfig), qps=500, burst=1000)
    ns = f"attempts{next(_ns)}"
    await cl.create(
        Env.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
    )
    try:
        yield cl, ns
    finally:
        await cl.close()


def _env(sim: SimProcess, cl: Client, ns: str, controller: Any) -> Env:
    return Env(cl, ns, sim, controller)


async def _pods(env: Env, name: str) -> list[dict[str, Any]]:
    out = await env.client.list(PODS, env.ns, label_selector=f"{c.JOBSET_NAME_KEY}={name}")
    return [p for p in out["items"] if not p["metadata"].get("deletionTimestamp")]


async def _wait_attempt(env: Env, name: str, want: int, pods: int) -> None:
    """status.executionAttempts, every Job, its pod template and its live pods at `want`."""
    await env.wait_jobset(
        name, lambda o: (o.get("status") or {}).get("executionAttempts") == want, f"attempt {want}"
    )

    def stamped(jobs: list[dict[str, Any]]) -> bool:
        return all(
            j["metadata"]["annotations"].get(KEY) == str(want)
            and j["spec"]["template"]["metadata"]["annotations"].get(KEY) == str(want)
            and not j["spec"].get("suspend")
            for j in jobs
        )

    await env.wait_jobs(name, len(await env.jobs(name)), stamped)
    running = await eventually(
        lambda: _pods(env, name),
        lambda ps: (
            len(ps) == pods and all(p["metadata"]["annotations"].get(KEY) == str(want) for p in ps)
        ),
        what=f"{pods} pods of {name} at execution attempt {want}",
    )
    assert running


async def _set_suspend(env: Env, name: str, suspend: bool) -> None:
    await env.client.patch(JOBSETS, name, {"spec": {"suspend": suspend}}, env.ns)
    reason = "SuspendedJobs" if suspend else "ResumeJobs"
    status = "True" if suspend else "False"
    await env.wait_jobset(name, lambda o: has_condition(o, "Suspended", status, reason))


async def test_suspend_resume_cycles_increment_execution_attempts_and_propagate_to_jobs_and_pods(
    sim_pods: SimProcess, client: tuple[Client, str]
) -> None:
    cl, ns = client
    async with running_controller(sim_pods, ON) as (_m, controller):
        env = _env(sim_pods, cl, ns, controller)
        await env.create(jobset("cycles", rjob("w", 2, command=RUN)))
        await _wait_attempt(env, "cycles", 0, pods=2)
        for cycle in (1, 2):
            await _set_suspend(env, "cycles", True)
            await eventually(lambda: _pods(env, "cycles"), lambda ps: not ps, what="pods gone")
            js = await env.get("cycles")
            assert js["status"]["executionAttempts"] == cycle - 1  # suspending counts nothing
            await _set_suspend(env, "cycles", False)
            await _wait_attempt(env, "cycles", cycle, pods=2)
        js = await env.get("cycles")
        assert (js["status"]["restarts"], js["status"]["executionAttempts"]) == (0, 2)


async def test_failure_triggered_restart_increments_execution_attempts(
    sim_pods: SimProcess, client: tuple[Client, str]
) -> None:
    cl, ns = client
    # Fails on restart attempt 0, succeeds on the next: one JobSet-wide restart.
    script = 'if [ "$RESTART" = 0 ]; then echo failing; exit 1; fi; echo ok'
    env_var = {
        "name": "RESTART",
        "valueFrom": {
            "fieldRef": {"fieldPath": f"metadata.annotations['{c.RESTART_ATTEMPT_KEY}']"}
        },
    }
    rj = rjob("w", 1, command=["sh", "-c", script])
    rj["template"]["spec"]["template"]["spec"]["containers"][0]["env"] = [env_var]
    async with running_controller(sim_pods, ON) as (_m, controller):
        env = _env(sim_pods, cl, ns, controller)
        await env.create(jobset("restart", rj, failurePolicy={"maxRestarts": 2}))
        js = await env.wait_jobset("restart", lambda o: has_condition(o, "Completed"), "completed")
        assert (js["status"]["restarts"], js["status"]["executionAttempts"]) == (1, 1)
        jobs = await env.jobs("restart")
        assert [j["metadata"]["annotations"][KEY] for j in jobs] == ["1"]
        assert [j["spec"]["template"]["metadata"]["annotations"][KEY] for j in jobs] == ["1"]


async def test_running_jobset_with_unset_execution_attempts_initializes_to_restarts(
    sim_pods: SimProcess, client: tuple[Client, str]
) -> None:
    cl, ns = client
    rj = rjob("w", 1, command=RUN)
    async with running_controller(sim_pods, {}) as (_m, old):
        env = _env(sim_pods, cl, ns, old)
        await env.create(jobset("upgrade", rj, failurePolicy={"maxRestarts": 3}))
        await env.wait_jobs("upgrade", 1)
        await eventually(lambda: _pods(env, "upgrade"), lambda ps: len(ps) == 1, what="a pod")
        # A pod deleted from under the Job fails it (backoffLimit 0): one restart.
        (pod,) = await _pods(env, "upgrade")
        await cl.delete(PODS, pod["metadata"]["name"], ns)
        js = await env.wait_jobset(
            "upgrade", lambda o: (o.get("status") or {}).get("restarts") == 1, "one restart"
        )
        await eventually(lambda: _pods(env, "upgrade"), lambda ps: len(ps) == 1, what="new pod")
        js = await env.get("upgrade")
        assert "executionAttempts" not in js["status"]  # gate off: never written
        assert KEY not in (await env.jobs("upgrade"))[0]["metadata"]["annotations"]
    async with running_controller(sim_pods, ON) as (_m, new):
        env = _env(sim_pods, cl, ns, new)
        js = await env.wait_jobset(
            "upgrade", lambda o: "executionAttempts" in (o.get("status") or {}), "migration"
        )
        assert js["status"]["executionAttempts"] == js["status"]["restarts"] == 1


async def test_initially_suspended_jobset_starts_unset_and_initializes_to_zero_on_first_resume(
    sim_pods: SimProcess, client: tuple[Client, str]
) -> None:
    cl, ns = client
    async with running_controller(sim_pods, ON) as (_m, controller):
        env = _env(sim_pods, cl, ns, controller)
        await env.create(jobset("queued", rjob("w", 2, command=RUN), suspend=True))
        await env.wait_jobs("queued", 2, lambda jobs: all(j["spec"]["suspend"] for j in jobs))
        js = await env.wait_jobset(
            "queued", lambda o: has_condition(o, "Suspended", reason="SuspendedJobs")
        )
        assert "executionAttempts" not in js["status"]
        assert await _pods(env, "queued") == []
        await _set_suspend(env, "queued", False)
        await _wait_attempt(env, "queued", 0, pods=2)


async def test_gate_off_leaves_status_and_annotations_unset(
    sim_pods: SimProcess, client: tuple[Client, str]
) -> None:
    cl, ns = client
    async with running_controller(sim_pods, {}) as (_m, controller):
        env = _env(sim_pods, cl, ns, controller)
        await env.create(jobset("off", rjob("w", 1, command=RUN), suspend=True))
        await env.wait_jobs("off", 1)
        await env.wait_jobset("off", lambda o: has_condition(o, "Suspended"))
        await _set_suspend(env, "off", False)
        pods = await eventually(lambda: _pods(env, "off"), lambda ps: len(ps) == 1, what="pod")
        assert KEY not in pods[0]["metadata"]["annotations"]
        js = await env.get("off")
        assert "executionAttempts" not in js["status"]
        (job,) = await env.jobs("off")
        assert KEY not in job["metadata"]["annotations"]
        assert KEY not in job["spec"]["template"]["metadata"]["annotations"]
