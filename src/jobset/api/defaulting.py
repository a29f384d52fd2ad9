"""Request-time defaulting of a JobSet, as upstream's mutating admission webhook does it.

Two layers of defaults exist, as upstream: the CRD schema's `default`s (replicas 1,
groupName `default`, restartStrategy Recreate, whenDeleted Delete), which the API server
applies on every read and write, and the ones below, which need logic a schema cannot
express (a default that depends on another field, on an index, or on an object being absent).
The webhook runs these on create and on update (upstream's on create only: a re-applied
manifest's lists come without them); the controller may run them defensively on objects it
reads, since they are idempotent.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, cast

from jobset.api import constants as c
from jobset.api.types import JobSet

__all__ = ["default_jobset", "default_rule_name", "defaulted_view", "defaulting_patch"]


def default_rule_name(index: int) -> str:
    """Name given to the unnamed failure-policy rule at `index`."""
    return f"{c.DEFAULT_RULE_NAME_PREFIX}{index}"


class _Defaults:
    """The defaults a JobSet lacks, as JSON Patch operations, found without copying it.

    A missing (or non-object) container is added whole, with its own defaults filled in; a
    missing leaf in an existing container is one operation. `add` for an absent member,
    `replace` for one that is present (null, empty, or of another type): the operations
    `jsonpatch.make_patch(js, default_jobset(js))` gives, without a deep copy and a diff of
    the whole object, which are slow for a large JobSet.
    """

    def __init__(self) -> None:
        self.ops: list[dict[str, Any]] = []

    def set(self, parent: dict[str, Any], path: str, fresh: bool, key: str, value: Any) -> None:
        """parent[key] = value: directly inside a container this walk made (`fresh`), as an
        operation otherwise (the input is never written)."""
        if fresh:
            parent[key] = value
        else:
            op = "replace" if key in parent else "add"
            self.ops.append({"op": op, "path": f"{path}/{key}", "value": value})

    def child(
        self, parent: dict[str, Any], path: str, fresh: bool, key: str
    ) -> tuple[dict[str, Any], str, bool]:
        """parent[key] as an object (created when absent or not an object): (the object, its
        path, whether this walk made it)."""
        value = parent.get(key)
        if isinstance(value, dict):
            return value, f"{path}/{key}", fresh
        made: dict[str, Any] = {}
        self.set(parent, path, fresh, key, made)
        return made, f"{path}/{key}", True


def defaulting_patch(js: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The JSON Patch (RFC 6902) that applies `default_jobset`'s defaults to `js`.

    `js` is read, never written or copied; each operation's value is a new object. The
    mutating webhook answers with it as is. Raises what reading an ill-typed object raises
    (TypeError, AttributeError), as `default_jobset` does.
    """
    d = _Defaults()
    root = js if isinstance(js, dict) else dict(js)
    spec, spath, sfresh = d.child(root, "", False, "spec")

    if spec.get("successPolicy") is None:
        d.set(spec, spath, sfresh, "successPolicy", {"operator": c.OPERATOR_ALL})
    if spec.get("startupPolicy") is None:
        d.set(spec, spath, sfresh, "startupPolicy", {"startupPolicyOrder": c.STARTUP_ANY_ORDER})

    for index, rjob in enumerate(spec.get("replicatedJobs") or []):
        if not isinstance(rjob, dict):
            continue
        rpath = f"{spath}/replicatedJobs/{index}"
        template, tpath, tfresh = d.child(rjob, rpath, sfresh, "template")
        job_spec, jpath, jfresh = d.child(template, tpath, tfresh, "spec")
        if job_spec.get("completionMode") is None:
            d.set(job_spec, jpath, jfresh, "completionMode", c.JOB_COMPLETION_MODE_INDEXED)
        pod_template, ppath, pfresh = d.child(job_spec, jpath, jfresh, "template")
        pod_spec, podpath, podfresh = d.child(pod_template, ppath, pfresh, "spec")
        if not pod_spec.get("restartPolicy"):
            d.set(pod_spec, podpath, podfresh, "restartPolicy", c.POD_RESTART_POLICY_ON_FAILURE)

    network, npath, nfresh = d.child(spec, spath, sfresh, "network")
    if network.get("enableDNSHostnames") is None:
        d.set(network, npath, nfresh, "enableDNSHostnames", True)
    if network.get("publishNotReadyAddresses") is None:
        d.set(network, npath, nfresh, "publishNotReadyAddresses", True)

    failure_policy = spec.get("failurePolicy")
    if isinstance(failure_policy, dict):
        for index, rule in enumerate(failure_policy.get("rules") or []):
            if isinstance(rule, dict) and not rule.get("name"):
                rule_path = f"{spath}/failurePolicy/rules/{index}"
                d.set(rule, rule_path, False, "name", default_rule_name(index))

    for index, policy in enumerate(spec.get("volumeClaimPolicies") or []):
        if isinstance(policy, dict) and policy.get("retentionPolicy") is None:
            policy_path = f"{spath}/volumeClaimPolicies/{index}"
            d.set(
                policy, policy_path, False, "retentionPolicy", {"whenDeleted": c.RETENTION_DELETE}
            )

    return d.ops


def _apply(doc: Any, op: Mapping[str, Any]) -> None:
    """One `add`/`replace` of `defaulting_patch` on `doc` (whose containers exist)."""
    *parents, last = str(op["path"]).split("/")[1:]
    node = doc
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    node[last] = op["value"]


def defaulted_view(js: Mapping[str, Any]) -> JobSet:
    """`default_jobset(js)` without the deep copy: the containers on the path of each default
    are copied (shallowly, once each), everything else is shared with `js`.

    For readers only - the controller's pass, which reads a cached JobSet and writes nothing
    into it: a deep copy of a large JobSet on every pass would be most of the pass. Neither `js`
    nor the result may be mutated below the top level while the other is in use.
    """
    ops = defaulting_patch(js)
    out: dict[str, Any] = dict(js)
    copied: dict[int, Any] = {id(out): out}
    for op in ops:
        *parents, last = str(op["path"]).split("/")[1:]
        node: Any = out
        for part in parents:
            key: Any = int(part) if isinstance(node, list) else part
            child = node[key]
            own = copied.get(id(child))
            if own is None:
                own = list(child) if isinstance(child, list) else dict(child)
                copied[id(own)] = own
                node[key] = own
            node = own
        node[last] = op["value"]
    return cast(JobSet, out)


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

    The defaults are `defaulting_patch(js)` applied to the copy (one definition for the
    controller and the webhook's patch).
    """
    out: dict[str, Any] = copy.deepcopy(dict(js))
    for op in defaulting_patch(out):
        _apply(out, op)
    return cast(JobSet, out)
