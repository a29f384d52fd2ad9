"""What one pass costs follows what exists, not what a tenant asks for (docs/reliability.md, "Threat model").

- Missing Jobs are derived from the Jobs that exist: a pass over a JobSet of 1,000,000
  replicas whose Jobs all exist names none of them (it generated and looked up 1,000,000
  names: 2.2 s and 39 MiB per pass).
- Job bodies share nothing mutable with the JobSet and are built without deep-copying the
  template for each Job (48 ms per Job for a 0.9 MiB template).

Work is counted (calls), never timed.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from jobset.api import constants as c
from jobset.api import types as types_module
from jobset.api.presets import FRAMEWORK_KEY
from jobset.controllers import jobs as jobs_module
from jobset.controllers import jobset_controller
from jobset.controllers.classify import Children
from jobset.controllers.jobs import PendingJobs, construct_job, existing_indices, missing_indices
from jobset.controllers.plan import PlanInput, plan

from .helpers import NOW, count_calls, jobset, rjob


def test_a_pass_over_a_million_replicas_whose_jobs_exist_names_no_replica(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    million = 1_000_000
    js = jobset(rjob("w", million))
    # Created by an earlier pass, not cached yet: they exist (cheaper to hold than Jobs).
    created = frozenset(f"js-w-{i}" for i in range(million))
    named = [
        count_calls(monkeypatch, jobs_module, "job_name"),
        count_calls(monkeypatch, types_module, "job_name"),
    ]
    p = plan(PlanInput(jobset=js, jobs=[], now=NOW, service_exists=True, awaited_jobs=created))
    assert len(p.create_jobs) == 0
    assert [n[0] for n in named] == [0, 0]
    # One Job missing among the million: found from what exists, still without naming each.
    p = plan(
        PlanInput(
            jobset=js,
            jobs=[],
            now=NOW,
            service_exists=True,
            awaited_jobs=created - {"js-w-123456"},
        )
    )
    assert p.create_jobs.names() == ["js-w-123456"]
    assert named[0][0] + named[1][0] == 1  # the one name of the Job to create


def test_missing_indices_are_the_gaps_among_existing_names() -> None:
    js = jobset(rjob("w", 6), rjob("w-1", 3), name="my-js")
    w, w1 = js["spec"]["replicatedJobs"]
    names = {
        "my-js-w-0",
        "my-js-w-2",
        "my-js-w-5",
        "my-js-w-9",  # beyond replicas (scaled down): ignored
        "my-js-w-03",  # not how job_name writes 3: not index 3
        "my-js-w-1-1",  # w-1's Job 1, not w's
        "my-js-w-x",
        "other-w-1",
    }
    found = existing_indices("my-js", names)
    assert {k: sorted(v) for k, v in found.items()} == {"w": [0, 2, 5, 9], "w-1": [1]}
    assert missing_indices(js, w, Children(), existing=names) == [1, 3, 4]
    assert missing_indices(js, w1, Children(), existing=names) == [0, 2]
    assert missing_indices(js, w, Children(), existing=set()) == list(range(6))
    assert missing_indices(js, w, Children(), indices=[5, 4, 3, 2, 1, 0]) == []
    assert missing_indices(js, w, Children(), indices={0, 1, 2, 3, 4, 9}) == [5]
    assert missing_indices(js, w, Children(), indices={-1, 0, 1, 2, 3, 4}) == [5]
    assert missing_indices(js, w, Children(), indices=[0, 1, 2, 3, 4, 5, 9]) == []


def test_all_created_counts_existing_jobs_without_naming_replicas(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    js = jobset(rjob("a", 1000), rjob("b", 2))
    jobs = [{"metadata": {"name": f"js-a-{i}"}} for i in range(1000)]
    jobs += [{"metadata": {"name": f"js-b-{i}"}} for i in range(2)]
    named = count_calls(monkeypatch, types_module, "job_name")
    assert jobset_controller.all_created(js, Children(active=jobs[:500], succeeded=jobs[500:]))
    assert not jobset_controller.all_created(js, Children(active=jobs[1:]))
    assert not jobset_controller.all_created(js, Children(active=jobs[:-1], previous=jobs[-1:]))
    assert named[0] == 0


def test_all_created_is_constant_time_while_jobs_are_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every pass of a long creation asks; with fewer Jobs than the spec wants the answer is
    no without reading a name. With enough Jobs the names decide (a foreign Job does not
    stand in for a missing one)."""
    js = jobset(rjob("a", 1000))
    jobs = [{"metadata": {"name": f"js-a-{i}"}} for i in range(1000)]
    parsed = count_calls(monkeypatch, jobset_controller, "indices_of")
    assert not jobset_controller.all_created(js, Children(active=jobs[:999]))
    assert parsed[0] == 0
    foreign = {"metadata": {"name": "other-a-0"}}
    assert not jobset_controller.all_created(js, Children(active=[*jobs[:999], foreign]))
    assert jobset_controller.all_created(js, Children(active=jobs))
    assert parsed[0] == 2


def _containers(obj: Any) -> Iterator[int]:
    """The ids of every dict and list in `obj` (what a mutation could reach)."""
    if isinstance(obj, dict):
        yield id(obj)
        for value in obj.values():
            yield from _containers(value)
    elif isinstance(obj, list):
        yield id(obj)
        for value in obj:
            yield from _containers(value)


def test_job_bodies_share_nothing_mutable_with_the_jobset_and_deep_copy_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    r = rjob("w", 2)
    r["template"]["metadata"] = {"labels": {"team": "ml"}, "annotations": {"note": "x"}}
    pod = r["template"]["spec"]["template"]
    pod["metadata"] = {"labels": {"app": "train"}}
    pod["spec"]["containers"][0].update(
        env=[{"name": "A", "value": "1"}],
        args=["--steps", "10"],
        volumeMounts=[{"name": "data", "mountPath": "/data"}],
        resources={"limits": {"cpu": "1"}},
    )
    pod["spec"]["tolerations"] = [{"key": "t", "operator": "Exists"}]
    pod["spec"]["nodeSelector"] = {"pool": "a"}
    js = jobset(
        r,
        annotations={
            FRAMEWORK_KEY: "pytorch",  # presets add env vars to each Job's containers
            c.EXCLUSIVE_KEY: "cloud.google.com/gke-nodepool",
            c.NODE_SELECTOR_STRATEGY_KEY: "true",  # nodeSelector and tolerations per Job
        },
        volumeClaimPolicies=[{"templates": [{"metadata": {"name": "data"}}]}],  # volumes
    )
    before = orjson.dumps(js)
    deep_copies = count_calls(monkeypatch, copy, "deepcopy")
    pending = PendingJobs(js)
    pending.add(js["spec"]["replicatedJobs"][0], [0, 1])
    first, second = list(pending)
    alone = construct_job(js, js["spec"]["replicatedJobs"][0], 1)
    assert deep_copies[0] == 0
    assert second == alone
    assert first["spec"]["template"]["spec"]["volumes"]  # the paths that add things ran
    assert first["spec"]["template"]["spec"]["nodeSelector"][c.NAMESPACED_JOB_KEY]
    assert any(
        e["name"] == "MASTER_ADDR"
        for e in first["spec"]["template"]["spec"]["containers"][0]["env"]
    )

    ours = set(_containers(js))
    assert not ours & set(_containers(first))
    assert not ours & set(_containers(second))
    assert not set(_containers(first)) & set(_containers(second))
    container = first["spec"]["template"]["spec"]["containers"][0]
    container["env"].append({"name": "B", "value": "2"})
    container["args"][1] = "20"
    container["resources"]["limits"]["cpu"] = "2"
    first["metadata"]["labels"]["team"] = "other"
    assert orjson.dumps(js) == before
    assert second == alone


def test_a_pass_does_not_deep_copy_the_jobset(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pass reads the cached JobSet through a defaulted view: deep copies only of what it
    writes (the status), never of the spec and its templates (0.9 MiB each pass before)."""
    containers = [
        {"name": f"c{i}", "image": "x", "env": [{"name": "V", "value": "v"}]} for i in range(50)
    ]
    r = rjob("w", 3)
    r["template"]["spec"]["template"]["spec"]["containers"] = containers
    raw = jobset(r)
    raw["spec"].pop("startupPolicy")  # a default to fill in: the view is not the object itself
    copied: set[int] = set()  # every container some deep copy walked
    original = copy.deepcopy

    def recording(obj: Any, memo: Any = None, *args: Any) -> Any:
        if memo is None:  # a top-level call, not deepcopy's own recursion
            copied.update(_containers(obj))
        return original(obj, memo, *args)

    monkeypatch.setattr(copy, "deepcopy", recording)
    p = plan(PlanInput(jobset=raw, jobs=[], now=NOW, service_exists=True))
    assert len(p.create_jobs) == 3 and p.create_jobs[0]["spec"]["template"]["spec"]["containers"]
    shared = {id(raw), id(raw["spec"]), id(raw["spec"]["replicatedJobs"])} | {
        id(x) for x in _containers(raw["spec"]["replicatedJobs"][0])
    }
    assert copied and not shared & copied
    assert "startupPolicy" not in raw["spec"]  # the input is untouched
