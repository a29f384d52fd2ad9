"""Typed views of JobSet objects, and the small derivations every component shares.

The controller, the webhooks and the CLI all handle JobSets as the plain JSON dicts the API
server sends: converting to and from classes would lose unknown fields, reorder keys and cost
time on every reconcile. So the types below are `TypedDict`s (total=False, as nearly every
field is optional on the wire): they give mypy the field names and value types while the
object stays the very dict that was read, and round-trips byte for byte.

Pod and Job templates are typed as `dict[str, Any]`: JobSet copies them through without
interpreting most of their fields.

The helpers (names, indexes, hashes, endpoints) reproduce the upstream controller's formats,
which are a wire contract: other tools find children by these names and labels.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from typing import Any, Literal, TypedDict, cast

from jobset.api import constants as c

# ------------------------------------------------------------------------------------------------
# Spec


class ObjectMeta(TypedDict, total=False):
    """The subset of metav1.ObjectMeta that JobSet logic reads."""

    name: str
    generateName: str
    namespace: str
    uid: str
    resourceVersion: str
    generation: int
    creationTimestamp: str
    deletionTimestamp: str
    labels: dict[str, str]
    annotations: dict[str, str]
    ownerReferences: list[dict[str, Any]]
    finalizers: list[str]


class DependsOn(TypedDict):
    """A ReplicatedJob this one waits for, and the state it must reach (Ready / Complete)."""

    name: str
    status: Literal["Ready", "Complete"]


class ReplicatedJob(TypedDict, total=False):
    """One entry of spec.replicatedJobs: `replicas` Jobs stamped from `template`."""

    name: str
    groupName: str
    template: dict[str, Any]  # batch/v1 JobTemplateSpec
    replicas: int
    dependsOn: list[DependsOn]


class Network(TypedDict, total=False):
    """Pod DNS: hostnames under a headless Service named `subdomain` (default: JobSet name)."""

    enableDNSHostnames: bool
    subdomain: str
    publishNotReadyAddresses: bool


class SuccessPolicy(TypedDict, total=False):
    """When the JobSet is Completed: All / Any Job of the target ReplicatedJobs succeeded."""

    operator: Literal["All", "Any"]
    targetReplicatedJobs: list[str]


class FailurePolicyRule(TypedDict, total=False):
    """An action taken for a failed Job whose reason / message / ReplicatedJob match."""

    name: str
    action: str
    onJobFailureReasons: list[str]
    onJobFailureMessagePatterns: list[str]
    targetReplicatedJobs: list[str]


class FailurePolicy(TypedDict, total=False):
    """Restart budget, restart strategy and ordered rules applied when a Job fails."""

    maxRestarts: int
    restartStrategy: str
    rules: list[FailurePolicyRule]


class StartupPolicy(TypedDict, total=False):
    """Deprecated ordering of ReplicatedJob creation (superseded by dependsOn)."""

    startupPolicyOrder: Literal["AnyOrder", "InOrder"]


class Coordinator(TypedDict, total=False):
    """The pod whose stable endpoint every pod receives as the coordinator label."""

    replicatedJob: str
    jobIndex: int
    podIndex: int


class VolumeRetentionPolicy(TypedDict, total=False):
    """What happens to the shared PVCs when the JobSet is deleted."""

    whenDeleted: Literal["Delete", "Retain"]


class VolumeClaimPolicy(TypedDict, total=False):
    """Shared PVC templates (one PVC per template per JobSet) and their retention."""

    templates: list[dict[str, Any]]  # core/v1 PersistentVolumeClaim
    retentionPolicy: VolumeRetentionPolicy


class JobSetSpec(TypedDict, total=False):
    """spec of a JobSet."""

    replicatedJobs: list[ReplicatedJob]
    network: Network
    successPolicy: SuccessPolicy
    failurePolicy: FailurePolicy
    startupPolicy: StartupPolicy
    suspend: bool
    coordinator: Coordinator
    managedBy: str
    ttlSecondsAfterFinished: int
    volumeClaimPolicies: list[VolumeClaimPolicy]


# ------------------------------------------------------------------------------------------------
# Status


class Condition(TypedDict, total=False):
    """metav1.Condition."""

    type: str
    status: Literal["True", "False", "Unknown"]
    observedGeneration: int
    lastTransitionTime: str
    reason: str
    message: str


class ReplicatedJobStatus(TypedDict, total=False):
    """Counts of child Jobs of one ReplicatedJob, by state."""

    name: str
    ready: int
    succeeded: int
    failed: int
    active: int
    suspended: int
    jobRestarts: list[int]
    jobRestartsCountTowardsMax: list[int]


class JobSetStatus(TypedDict, total=False):
    """status of a JobSet (written through the status subresource)."""

    conditions: list[Condition]
    restarts: int
    restartsCountTowardsMax: int
    executionAttempts: int
    terminalState: str
    replicatedJobsStatus: list[ReplicatedJobStatus]
    previousInPlaceRestartAttempt: int
    currentInPlaceRestartAttempt: int


class JobSet(TypedDict, total=False):
    """A whole JobSet object as the API server serves it."""

    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: JobSetSpec
    status: JobSetStatus


def as_jobset(obj: Mapping[str, Any]) -> JobSet:
    """View a JSON dict as a JobSet for the type checker; the object itself is unchanged."""
    return cast(JobSet, obj)


# ------------------------------------------------------------------------------------------------
# Field accessors that apply the API's defaults.
#
# Objects read from the API server always carry the schema defaults (replicas, groupName, ...),
# but objects built in tests or by hand may not. These accessors give the value the server
# would have stored, so callers never branch on presence.


def replicas(rjob: Mapping[str, Any]) -> int:
    """replicas of a ReplicatedJob; the schema default 1 when absent."""
    value = rjob.get("replicas")
    return c.DEFAULT_REPLICAS if value is None else int(value)


def group_name(rjob: Mapping[str, Any]) -> str:
    """groupName of a ReplicatedJob; the schema default `default` when absent."""
    value = rjob.get("groupName")
    return c.DEFAULT_GROUP_NAME if value is None else str(value)


def replicated_jobs(js: Mapping[str, Any]) -> list[ReplicatedJob]:
    """spec.replicatedJobs, or an empty list."""
    spec = js.get("spec") or {}
    return list(spec.get("replicatedJobs") or [])


def replicated_job_by_name(js: Mapping[str, Any], name: str) -> ReplicatedJob | None:
    """The ReplicatedJob called `name`, or None."""
    for rjob in replicated_jobs(js):
        if rjob.get("name") == name:
            return rjob
    return None


def job_spec(rjob: Mapping[str, Any]) -> dict[str, Any]:
    """template.spec of a ReplicatedJob (the batch/v1 JobSpec), or an empty dict."""
    return dict((rjob.get("template") or {}).get("spec") or {})


def pod_spec(rjob: Mapping[str, Any]) -> dict[str, Any]:
    """template.spec.template.spec of a ReplicatedJob (the PodSpec), or an empty dict."""
    return dict((job_spec(rjob).get("template") or {}).get("spec") or {})


def name_of(js: Mapping[str, Any]) -> str:
    """metadata.name."""
    return str((js.get("metadata") or {}).get("name") or "")


def namespace_of(js: Mapping[str, Any]) -> str:
    """metadata.namespace."""
    return str((js.get("metadata") or {}).get("namespace") or "")


def owner_reference(js: Mapping[str, Any]) -> dict[str, Any]:
    """The controller ownerReference every child of the JobSet carries (Jobs, the headless
    Service, PVCs)."""
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.KIND,
        "name": name_of(js),
        "uid": str((js.get("metadata") or {}).get("uid") or ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def is_suspended(js: Mapping[str, Any]) -> bool:
    """spec.suspend is true."""
    return bool((js.get("spec") or {}).get("suspend") or False)


def managed_by(js: Mapping[str, Any]) -> str | None:
    """spec.managedBy, or None when unset."""
    value = (js.get("spec") or {}).get("managedBy")
    return None if value is None else str(value)


def is_managed_by_this_controller(js: Mapping[str, Any]) -> bool:
    """Whether the built-in controller reconciles this JobSet (managedBy unset or reserved)."""
    value = managed_by(js)
    return value is None or value == c.JOBSET_CONTROLLER_NAME


def dns_hostnames_enabled(js: Mapping[str, Any]) -> bool:
    """network.enableDNSHostnames is true (the webhook defaults it to true)."""
    network = (js.get("spec") or {}).get("network") or {}
    return bool(network.get("enableDNSHostnames") or False)


# ------------------------------------------------------------------------------------------------
# Names


def _name(x: Mapping[str, Any] | str) -> str:
    if isinstance(x, str):
        return x
    return str((x.get("metadata") or {}).get("name") or x.get("name") or "")


def job_name(js: Mapping[str, Any] | str, rjob: Mapping[str, Any] | str, job_index: int) -> str:
    """Name of a child Job: `<jobset>-<replicatedJob>-<jobIndex>`.

    Accepts the JobSet and ReplicatedJob as objects or as names.
    """
    return f"{_name(js)}-{_name(rjob)}-{job_index}"


def pod_hostname(
    js: Mapping[str, Any] | str,
    rjob: Mapping[str, Any] | str,
    job_index: int | str,
    pod_index: int | str,
) -> str:
    """Hostname (and name prefix) of an indexed pod: `<jobset>-<rjob>-<jobIndex>-<podIndex>`."""
    return f"{_name(js)}-{_name(rjob)}-{job_index}-{pod_index}"


def subdomain(js: Mapping[str, Any]) -> str:
    """The pods' DNS subdomain: network.subdomain, else the JobSet name.

    Resolved at reconcile time rather than defaulted, because a JobSet created with
    generateName has no name yet when the defaulting webhook runs.
    """
    network = (js.get("spec") or {}).get("network") or {}
    return str(network.get("subdomain") or "") or name_of(js)


def headless_service_name(js: Mapping[str, Any]) -> str:
    """Name of the headless Service giving pods DNS names (the subdomain)."""
    return subdomain(js)


def coordinator_endpoint(js: Mapping[str, Any]) -> str:
    """`<jobset>-<rjob>-<jobIndex>-<podIndex>.<subdomain>` of spec.coordinator.

    Raises KeyError when the JobSet has no coordinator.
    """
    coord = (js.get("spec") or {}).get("coordinator")
    if coord is None:
        raise KeyError("spec.coordinator is not set")
    host = pod_hostname(
        name_of(js),
        str(coord.get("replicatedJob") or ""),
        int(coord.get("jobIndex") or 0),
        int(coord.get("podIndex") or 0),
    )
    return f"{host}.{subdomain(js)}"


def pvc_name(jobset_name: str, claim_name: str) -> str:
    """Name of a shared PVC of volumeClaimPolicies: `<claim>-<jobset>`."""
    return f"{claim_name}-{jobset_name}"


def job_key(namespace: str, job_name: str) -> str:
    """Value of the job-key label: hex SHA-1 of `<namespace>/<jobName>` (40 characters).

    SHA-1 is used as an identifier that fits a label value, not for security.
    """
    return hashlib.sha1(f"{namespace}/{job_name}".encode(), usedforsecurity=False).hexdigest()


def namespaced_job_name(namespace: str, job_name: str) -> str:
    """Value of the namespaced-job nodeSelector: `<ns>_<job>` ('/' is not allowed in values)."""
    return f"{namespace}_{job_name}"


# ------------------------------------------------------------------------------------------------
# Indexes and counts (label values are their decimal strings)


def global_replicas(js: Mapping[str, Any]) -> int:
    """Total number of child Jobs: the sum of every ReplicatedJob's replicas."""
    return sum(replicas(r) for r in replicated_jobs(js))


def group_replicas(js: Mapping[str, Any], group: str) -> int:
    """Number of child Jobs in the ReplicatedJobs whose groupName is `group`."""
    return sum(replicas(r) for r in replicated_jobs(js) if group_name(r) == group)


def global_job_index(js: Mapping[str, Any], rjob_name: str, job_index: int) -> int | None:
    """Index of a Job across the whole JobSet, counting ReplicatedJobs in spec order.

    None when the ReplicatedJob does not exist (upstream then writes an empty label).
    """
    before = 0
    for rjob in replicated_jobs(js):
        if rjob.get("name") == rjob_name:
            return before + job_index
        before += replicas(rjob)
    return None


def group_job_index(
    js: Mapping[str, Any], group: str, rjob_name: str, job_index: int
) -> int | None:
    """Index of a Job within its group, counting the group's ReplicatedJobs in spec order."""
    before = 0
    for rjob in replicated_jobs(js):
        if group_name(rjob) != group:
            continue
        if rjob.get("name") == rjob_name:
            return before + job_index
        before += replicas(rjob)
    return None


def iter_job_names(js: Mapping[str, Any]) -> Iterator[tuple[ReplicatedJob, int, str]]:
    """Every child Job the spec asks for, in spec order: (replicatedJob, jobIndex, jobName)."""
    jsname = name_of(js)
    for rjob in replicated_jobs(js):
        for idx in range(replicas(rjob)):
            yield rjob, idx, job_name(jsname, str(rjob.get("name") or ""), idx)


# ------------------------------------------------------------------------------------------------
# Conditions


def find_condition(js: Mapping[str, Any], ctype: str) -> Condition | None:
    """The status condition of type `ctype`, or None."""
    for cond in (js.get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return cast(Condition, cond)
    return None


def condition_true(js: Mapping[str, Any], ctype: str) -> bool:
    """Whether the condition `ctype` exists with status "True"."""
    cond = find_condition(js, ctype)
    return cond is not None and cond.get("status") == "True"


def is_finished(js: Mapping[str, Any]) -> bool:
    """Completed or Failed is True: the JobSet reached a terminal state."""
    return condition_true(js, c.CONDITION_COMPLETED) or condition_true(js, c.CONDITION_FAILED)
