"""Elastic JobSets end to end: the simulated API server calls the harness's webhooks (gates
`ElasticJobSet` and this project's `ElasticReplicas` on), whose controller runs the JobSets.
Driven by kubectl; Job status is set through `/status` (`--sim-level none`).

- `replicas` of a running JobSet scales up (new indexes at the current restart attempt) and
  down (the highest indexes deleted); the success policy then counts the Jobs that remain;
- an elastic change that would leave the coordinator out of range is refused by admission,
  and the running JobSet is not failed by the controller afterwards.

With the gates off `replicas` stays immutable (test_jobset_admission.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from jobset.api import constants as c
from kubesim.process import SimProcess
from tests import builders
from tests.eventually import eventually_sync
from tests.integration.placement.process import HarnessProcess, start_harness
from tests.sims import kubectl_apply, live_jobs

pytestmark = [pytest.mark.timeout(240), pytest.mark.kubectl]

GATES = "ElasticJobSet=true,ElasticReplicas=true"


@pytest.fixture(scope="module")
def elastic_harness(sim_none: SimProcess) -> Iterator[HarnessProcess]:
    h = start_harness(sim_none, "--feature-gates", GATES)
    yield h
    h.stop()


def _patch(sim: SimProcess, name: str, patch: list[dict[str, Any]]) -> tuple[int, str]:
    r = sim.kubectl("patch", "jobset", name, "--type=json", "-p", json.dumps(patch), check=False)
    return r.returncode, r.stdout + r.stderr


def _get(sim: SimProcess, name: str) -> dict[str, Any]:
    return dict(json.loads(sim.kubectl("get", "jobset", name, "-o", "json").stdout))


def _wait_jobs(sim: SimProcess, name: str, names: set[str]) -> dict[str, dict[str, Any]]:
    return eventually_sync(
        lambda: live_jobs(sim, name), lambda jobs: set(jobs) == names, within=60, what=str(names)
    )


def _condition(js: dict[str, Any], ctype: str) -> str | None:
    for cond in (js.get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return str(cond.get("status"))
    return None


def _complete(sim: SimProcess, job: str) -> None:
    t = "2026-01-01T00:00:00Z"
    status = {
        "startTime": t,
        "completionTime": t,
        "succeeded": 1,
        "conditions": [
            {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": t},
            {"type": "Complete", "status": "True", "lastTransitionTime": t},
        ],
    }
    sim.kubectl(
        "patch", "job", job, "--subresource=status", "--type=merge", "-p",
        json.dumps({"status": status}),
    )  # fmt: skip


def test_replicas_scale_up_and_down_on_a_running_jobset(
    sim_none: SimProcess, elastic_harness: HarnessProcess
) -> None:
    name = "elastic"
    leader = builders.rjob("leader", 1)
    workers = builders.rjob("workers", 2)
    kubectl_apply(
        sim_none,
        builders.jobset(
            name,
            leader,
            workers,
            coordinator={"replicatedJob": "leader"},
            successPolicy={"operator": "All", "targetReplicatedJobs": ["workers"]},
        ),
    )
    _wait_jobs(sim_none, name, {f"{name}-leader-0", f"{name}-workers-0", f"{name}-workers-1"})

    path = "/spec/replicatedJobs/1/replicas"
    code, out = _patch(sim_none, name, [{"op": "replace", "path": path, "value": 4}])
    assert code == 0, out
    jobs = _wait_jobs(
        sim_none, name, {f"{name}-leader-0", *(f"{name}-workers-{i}" for i in range(4))}
    )
    new = jobs[f"{name}-workers-3"]["metadata"]["labels"]
    assert new[c.RESTART_ATTEMPT_KEY] == "0" and new[c.JOB_INDEX_KEY] == "3"
    assert new[c.REPLICATED_JOB_REPLICAS_KEY] == "4"

    code, out = _patch(sim_none, name, [{"op": "replace", "path": path, "value": 1}])
    assert code == 0, out
    _wait_jobs(sim_none, name, {f"{name}-leader-0", f"{name}-workers-0"})
    js = eventually_sync(
        lambda: _get(sim_none, name),
        lambda js: (
            [s["name"] for s in js.get("status", {}).get("replicatedJobsStatus", [])]
            == ["leader", "workers"]
        ),
        within=60,
        what="replicatedJobsStatus",
    )
    assert _condition(js, c.CONDITION_FAILED) is None, js["status"]

    # The one remaining worker is all the success policy waits for.
    _complete(sim_none, f"{name}-workers-0")
    js = eventually_sync(
        lambda: _get(sim_none, name),
        lambda js: _condition(js, c.CONDITION_COMPLETED) == "True",
        within=60,
        what="Completed",
    )
    # A finished JobSet's replicas are frozen again.
    code, out = _patch(sim_none, name, [{"op": "replace", "path": path, "value": 2}])
    assert code != 0 and "Cannot mutate replicas when JobSet is in a terminal state" in out


def test_elastic_changes_that_strand_the_coordinator_are_refused(
    sim_none: SimProcess, elastic_harness: HarnessProcess
) -> None:
    name = "coord"
    workers = builders.rjob("workers", 3, parallelism=2)
    kubectl_apply(
        sim_none,
        builders.jobset(
            name, workers, coordinator={"replicatedJob": "workers", "jobIndex": 2, "podIndex": 1}
        ),
    )
    _wait_jobs(sim_none, name, {f"{name}-workers-{i}" for i in range(3)})
    code, out = _patch(
        sim_none, name, [{"op": "replace", "path": "/spec/replicatedJobs/0/replicas", "value": 2}]
    )
    assert code != 0 and "coordinator job index 2 is invalid for replicatedJob workers" in out
    spec = "/spec/replicatedJobs/0/template/spec"
    code, out = _patch(
        sim_none,
        name,
        [
            {"op": "replace", "path": f"{spec}/parallelism", "value": 1},
            {"op": "replace", "path": f"{spec}/completions", "value": 1},
        ],
    )
    assert code != 0 and "coordinator pod index 1 is invalid for replicatedJob workers" in out
    # What admission accepts leaves the JobSet running: scaling up keeps the coordinator.
    code, out = _patch(
        sim_none, name, [{"op": "replace", "path": "/spec/replicatedJobs/0/replicas", "value": 4}]
    )
    assert code == 0, out
    _wait_jobs(sim_none, name, {f"{name}-workers-{i}" for i in range(4)})
    js = _get(sim_none, name)
    assert _condition(js, c.CONDITION_FAILED) is None, js.get("status")
