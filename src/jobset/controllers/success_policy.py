"""The success policy: when a JobSet is Completed.

`operator: All` - every Job of the target ReplicatedJobs (all of them when the target list is
empty) succeeded; `operator: Any` - at least one Job of a target ReplicatedJob succeeded.
Counted over the current run's succeeded Jobs only (previous attempts never count).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from jobset.api import constants as c
from jobset.api.types import replicas
from jobset.controllers.classify import rjob_name_of

__all__ = ["jobs_expected_to_succeed", "success_policy_met"]


def _targets(js: Mapping[str, Any]) -> list[str]:
    policy = (js.get("spec") or {}).get("successPolicy") or {}
    return list(policy.get("targetReplicatedJobs") or [])


def _operator(js: Mapping[str, Any]) -> str:
    policy = (js.get("spec") or {}).get("successPolicy") or {}
    return str(policy.get("operator") or c.OPERATOR_ALL)


def jobs_expected_to_succeed(js: Mapping[str, Any]) -> int:
    """How many Jobs must succeed: 1 for Any; the targets' replicas for All."""
    operator = _operator(js)
    if operator == c.OPERATOR_ANY:
        return 1
    if operator != c.OPERATOR_ALL:
        return 0
    targets = _targets(js)
    return sum(
        replicas(r)
        for r in (js.get("spec") or {}).get("replicatedJobs") or []
        if not targets or r.get("name") in targets
    )


def success_policy_met(js: Mapping[str, Any], succeeded: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the succeeded Jobs satisfy the success policy."""
    targets = _targets(js)
    matching = sum(1 for j in succeeded if not targets or rjob_name_of(j) in targets)
    return matching >= jobs_expected_to_succeed(js)
