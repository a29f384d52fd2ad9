"""The update rules of this project's ElasticReplicas gate, and the shape rules every elastic
update (ElasticJobSet too) must pass on the new object."""

from __future__ import annotations

import copy
from typing import Any

from jobset.api import constants as c
from jobset.api.validation import Limits, validate_update
from tests import builders

REPLICAS = {c.FEATURE_ELASTIC_REPLICAS: True}
BOTH = {c.FEATURE_ELASTIC_REPLICAS: True, c.FEATURE_ELASTIC_JOBSET: True}


def _js(*rjobs: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return builders.jobset("js", *(rjobs or (builders.rjob("w", 2),)), namespace="ns", **spec)


def _with(js: dict[str, Any], **fields: Any) -> dict[str, Any]:
    out = copy.deepcopy(js)
    out["spec"]["replicatedJobs"][0].update(fields)
    return out


def _texts(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def test_replicas_change_only_behind_the_gate() -> None:
    old = _js()
    new = _with(old, replicas=5)
    assert validate_update(new, old, features=REPLICAS) == []
    assert validate_update(_with(old, replicas=1), old, features=REPLICAS) == []
    (err,) = validate_update(new, old)
    assert err.field == "spec.replicatedJobs" and "field is immutable" in str(err)
    # Only replicas: anything else of the ReplicatedJob stays immutable.
    other = _with(new, groupName="g2")
    assert "field is immutable" in " ".join(_texts(validate_update(other, old, features=REPLICAS)))


def test_replicas_at_least_one_and_frozen_once_finished() -> None:
    old = _js()
    assert _texts(validate_update(_with(old, replicas=0), old, features=REPLICAS)) == [
        "spec.replicatedJobs[0].replicas: Invalid value: 0: replicas must be >= 1"
    ]
    done = copy.deepcopy(old)
    done["status"] = {"conditions": [{"type": "Completed", "status": "True"}]}
    assert _texts(validate_update(_with(old, replicas=3), done, features=REPLICAS)) == [
        "spec.replicatedJobs[0].replicas: Forbidden: Cannot mutate replicas when JobSet is in "
        "a terminal state (Completed or Failed)"
    ]


def test_the_coordinator_must_stay_in_range() -> None:
    w = builders.rjob("w", 3, parallelism=2)
    old = _js(w, coordinator={"replicatedJob": "w", "jobIndex": 2, "podIndex": 1})
    assert _texts(validate_update(_with(old, replicas=2), old, features=REPLICAS)) == [
        "<nil>: Internal error: coordinator job index 2 is invalid for replicatedJob w"
    ]
    assert validate_update(_with(old, replicas=4), old, features=REPLICAS) == []
    narrower = copy.deepcopy(old)
    narrower["spec"]["replicatedJobs"][0]["template"]["spec"].update(
        {"parallelism": 1, "completions": 1}
    )
    assert _texts(validate_update(narrower, old, features=BOTH)) == [
        "<nil>: Internal error: coordinator pod index 1 is invalid for replicatedJob w job index 2"
    ]


def test_the_new_count_is_capped_and_named_like_a_create() -> None:
    old = _js()
    errs = _texts(validate_update(_with(old, replicas=11), old, features=REPLICAS,
                                  limits=Limits(10, 100)))  # fmt: skip
    assert errs and errs[0].startswith(
        "spec.replicatedJobs[0].replicas: Invalid value: 11: must be no more than 10"
    )
    # js-<58 characters>-8 is a 63-character Job name; 11 replicas make index 10 (64).
    old = _js(builders.rjob("a" * 58, 9, indexed=None))
    assert validate_update(_with(old, replicas=11), old) != []  # gate off: immutable
    # compared defaulted (Indexed, as the webhook stores it): the pod names are too long too
    job_err, pod_err = validate_update(_with(old, replicas=11), old, features=REPLICAS)
    assert job_err.message.endswith("job names generated for this JobSet will exceed 63 characters")
    assert pod_err.message.endswith("pod names generated for this JobSet will exceed 63 characters")


def test_restart_job_ceiling_applies_to_the_new_count() -> None:
    gates = {**REPLICAS, c.FEATURE_RESTART_JOB: True}
    rule = {"name": "r", "action": "RestartJob"}
    old = _js(builders.rjob("w", 2), failurePolicy={"rules": [rule]})
    errs = _texts(validate_update(_with(old, replicas=1025), old, features=gates))
    assert errs == [
        "<nil>: Internal error: JobSet cannot have a failure policy rule with RestartJob or "
        "RestartJobAndIgnoreMaxRestarts action and a replicated job with replicas > 1024"
    ]
