"""The controller's check of stored JobSets: generation 1 by the create rules, the next
generation by the update rules against the one judged before, and a running JobSet never
failed on a guess (tests/integration/webhooks/test_elastic_admission.py: end to end)."""

from __future__ import annotations

import copy
from typing import Any

from jobset.api import constants as c
from jobset.api.validation import Limits
from jobset.controllers.stored_validation import StoredValidation
from tests import builders

KEY = "ns/js"


def _js(generation: int, replicas: int = 2, **spec: Any) -> dict[str, Any]:
    js = builders.jobset("js", builders.rjob("w", replicas), namespace="ns", uid="u1", **spec)
    js["metadata"]["generation"] = generation
    return js


def _next(js: dict[str, Any], **rjob_fields: Any) -> dict[str, Any]:
    out = copy.deepcopy(js)
    out["metadata"]["generation"] += 1
    out["spec"]["replicatedJobs"][0].update(rjob_fields)
    return out


def test_generation_one_is_judged_by_the_create_rules() -> None:
    check = StoredValidation({}, Limits(1, 100))
    message = check.message(KEY, _js(1))
    assert message is not None and "must be no more than 1" in message


def test_an_update_is_judged_against_the_generation_before() -> None:
    check = StoredValidation({c.FEATURE_ELASTIC_REPLICAS: True})
    first = _js(1)
    assert check.message(KEY, first) is None
    scaled = _next(first, replicas=3)
    assert check.message(KEY, scaled) is None
    # An update that bypassed admission, breaking the update rules, is refused...
    renamed = _next(scaled, groupName="other")
    message = check.message(KEY, renamed)
    assert message is not None and "field is immutable" in message
    # ... also one the create rules alone would let through (replicas with the gate off).
    plain = StoredValidation({})
    assert plain.message(KEY, first) is None
    message = plain.message(KEY, _next(first, replicas=3))
    assert message is not None and "field is immutable" in message


def test_a_running_jobset_seen_first_at_a_later_generation_is_not_failed() -> None:
    """The controller restarted (or a watch coalesced updates): the generation admission
    compared this one with is unknown, so the create rules, which an accepted update need
    not satisfy (here: the Jobs cap was lowered since), do not judge it."""
    check = StoredValidation({}, Limits(1, 100))
    running = _js(3, status={"restarts": 0, "replicatedJobsStatus": [{"name": "w"}]})
    assert check.message(KEY, running) is None
    # Never run (no status): nothing can break, the create rules judge it.
    queued = _js(3)
    assert check.message("ns/other", queued) is not None


def test_skipped_generations_are_not_compared() -> None:
    """Suspend-and-relabel then resume, seen as one change: not what admission judged."""
    check = StoredValidation({})
    first = _js(1, status={"replicatedJobsStatus": [{"name": "w"}]})
    assert check.message(KEY, first) is None
    third = copy.deepcopy(first)
    third["metadata"]["generation"] = 3
    pod = third["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    pod.setdefault("metadata", {})["labels"] = {"kueue": "admitted"}
    assert check.message(KEY, third) is None


def test_verdicts_are_cached_per_generation_and_forgotten() -> None:
    check = StoredValidation({}, Limits(1, 100))
    js = _js(1)
    first = check.message(KEY, js)
    check.limits = Limits(None, None)
    assert check.message(KEY, js) == first  # same generation: the cached verdict
    check.forget(KEY)
    assert check.message(KEY, js) is None
