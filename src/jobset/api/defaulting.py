"""Request-time defaulting of a JobSet, as upstream's mutating admission webhook does it.

Two layers of defaults exist, as upstream: the CRD schema's `default`s (replicas 1,
groupName `default`, restartStrategy Recreate, whenDeleted Delete), which the API server
applies on every read and write, and the ones below, which need logic a schema cannot
express (a default that depends on another field, on an index, or on an object being absent).
The webhook runs these on create only; the controller may run them defensively on objects
it reads, since they are idempotent.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, cast

from jobset.api import constants as c
from jobset.api.types import JobSet

__all__ = ["default_jobset", "default_rule_name"]


def default_rule_name(index: int) -> str:
    """Name given to the unnamed failure-policy rule at `index`."""
    return f"{c.DEFAULT_RULE_NAME_PREFIX}{index}"


def _child(parent: dict[str, Any], key: str) -> dict[str, Any]:
    """parent[key] as a dict, created when absent or null."""
    value = parent.get(key)
    if not isinstance(value, dict):
        value = {}
        parent[key] = value
    return value


def default_jobset(js: Mapping[str, Any]) -> JobSet:
    """Return a defaulted deep copy of `js`; the argument is left untouched.

    - successPolicy: `{operator: All}` (every Job of every ReplicatedJob must succeed);
    - startupPolicy: `{startupPolicyOrder: AnyOrder}`;
    - each Job template: completionMode `Indexed` (stable pod hostnames need indexes), and
      the pod restartPolicy `OnFailure` when empty (a Job forbids `Always`, the Pod default);
    - network: enableDNSHostnames and publishNotReadyAddresses true when unset, so pods can
      reach each other by hostname before they are all ready;
    - failure-policy rules without a name: `failurePolicyRule<index>` (names appear in
      condition reasons and must be unique);
    - volumeClaimPolicies without a retentionPolicy: `{whenDeleted: Delete}`.
    """
    out: dict[str, Any] = copy.deepcopy(dict(js))
    spec = _child(out, "spec")

    if spec.get("successPolicy") is None:
        spec["successPolicy"] = {"operator": c.OPERATOR_ALL}
    if spec.get("startupPolicy") is None:
        spec["startupPolicy"] = {"startupPolicyOrder": c.STARTUP_ANY_ORDER}

    for rjob in spec.get("replicatedJobs") or []:
        if not isinstance(rjob, dict):
            continue
        job_spec = _child(_child(rjob, "template"), "spec")
        if job_spec.get("completionMode") is None:
            job_spec["completionMode"] = c.JOB_COMPLETION_MODE_INDEXED
        pod_spec = _child(_child(job_spec, "template"), "spec")
        if not pod_spec.get("restartPolicy"):
            pod_spec["restartPolicy"] = c.POD_RESTART_POLICY_ON_FAILURE

    network = _child(spec, "network")
    if network.get("enableDNSHostnames") is None:
        network["enableDNSHostnames"] = True
    if network.get("publishNotReadyAddresses") is None:
        network["publishNotReadyAddresses"] = True

    failure_policy = spec.get("failurePolicy")
    if isinstance(failure_policy, dict):
        for index, rule in enumerate(failure_policy.get("rules") or []):
            if isinstance(rule, dict) and not rule.get("name"):
                rule["name"] = default_rule_name(index)

    for policy in spec.get("volumeClaimPolicies") or []:
        if isinstance(policy, dict) and policy.get("retentionPolicy") is None:
            policy["retentionPolicy"] = {"whenDeleted": c.RETENTION_DELETE}

    return cast(JobSet, out)
