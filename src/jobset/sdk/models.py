"""Typed models of `jobset.x-k8s.io/v1alpha2` JobSets, spec and status.

`JobSet.from_dict(d).to_dict() == d` for any JobSet the API server would store, and for
anything else that is a mapping: unknown fields, explicit nulls and ill-typed values are
kept (see `jobset.sdk._model`). The Job and Pod templates are typed for the fields the
builders and presets touch (containers, env, parallelism...); the rest of a PodSpec
(affinity, volumes, tolerations...) stays plain JSON in the declared `dict` / `list` fields
or in `extra`, as nothing in this package interprets it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from jobset.api import constants as c
from jobset.sdk._model import Model, wire

__all__ = [
    "Condition",
    "Container",
    "Coordinator",
    "DependsOn",
    "EnvVar",
    "FailurePolicy",
    "FailurePolicyRule",
    "JobSet",
    "JobSetSpec",
    "JobSetStatus",
    "JobSpec",
    "JobTemplateSpec",
    "Network",
    "ObjectMeta",
    "PodSpec",
    "PodTemplateSpec",
    "ReplicatedJob",
    "ReplicatedJobStatus",
    "StartupPolicy",
    "SuccessPolicy",
    "VolumeClaimPolicy",
    "VolumeRetentionPolicy",
    "dump_all",
    "load_all",
]

# ------------------------------------------------------------------------------ metadata


class ObjectMeta(Model):
    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: list[dict[str, Any]] | None = None
    finalizers: list[str] | None = None


# ------------------------------------------------------------------------------ Job / Pod


class EnvVar(Model):
    name: str | None = None
    value: str | None = None
    value_from: dict[str, Any] | None = None


class Container(Model):
    name: str | None = None
    image: str | None = None
    command: list[str] | None = None
    args: list[str] | None = None
    working_dir: str | None = None
    env: list[EnvVar] | None = None
    env_from: list[dict[str, Any]] | None = None
    ports: list[dict[str, Any]] | None = None
    resources: dict[str, Any] | None = None
    volume_mounts: list[dict[str, Any]] | None = None
    image_pull_policy: str | None = None
    restart_policy: str | None = None  # "Always" on an init container makes it a sidecar

    def env_value(self, name: str) -> str | None:
        """The literal value of env var `name`, or None (absent or from a reference)."""
        for var in self.env or []:
            if var.name == name:
                return var.value
        return None


class PodSpec(Model):
    init_containers: list[Container] | None = None
    containers: list[Container] | None = None
    restart_policy: str | None = None
    node_selector: dict[str, str] | None = None
    tolerations: list[dict[str, Any]] | None = None
    affinity: dict[str, Any] | None = None
    scheduling_gates: list[dict[str, Any]] | None = None
    subdomain: str | None = None
    hostname: str | None = None
    host_network: bool | None = None
    dns_policy: str | None = None
    service_account_name: str | None = None
    priority_class_name: str | None = None
    termination_grace_period_seconds: int | None = None
    volumes: list[dict[str, Any]] | None = None


class PodTemplateSpec(Model):
    metadata: ObjectMeta | None = None
    spec: PodSpec | None = None


class JobSpec(Model):
    parallelism: int | None = None
    completions: int | None = None
    completion_mode: str | None = None
    backoff_limit: int | None = None
    backoff_limit_per_index: int | None = None
    max_failed_indexes: int | None = None
    active_deadline_seconds: int | None = None
    ttl_seconds_after_finished: int | None = None
    pod_failure_policy: dict[str, Any] | None = None
    pod_replacement_policy: str | None = None
    success_policy: dict[str, Any] | None = None
    suspend: bool | None = None
    template: PodTemplateSpec | None = None


class JobTemplateSpec(Model):
    metadata: ObjectMeta | None = None
    spec: JobSpec | None = None


# ------------------------------------------------------------------------------ JobSet spec


class DependsOn(Model):
    name: str | None = None
    status: str | None = None  # Ready | Complete


class ReplicatedJob(Model):
    name: str | None = None
    replicas: int | None = None
    group_name: str | None = None
    depends_on: list[DependsOn] | None = None
    template: JobTemplateSpec | None = None


class Network(Model):
    enable_dns_hostnames: bool | None = wire("enableDNSHostnames")
    subdomain: str | None = None
    publish_not_ready_addresses: bool | None = None


class SuccessPolicy(Model):
    operator: str | None = None  # All | Any
    target_replicated_jobs: list[str] | None = None


class FailurePolicyRule(Model):
    name: str | None = None
    action: str | None = None
    on_job_failure_reasons: list[str] | None = None
    on_job_failure_message_patterns: list[str] | None = None
    target_replicated_jobs: list[str] | None = None


class FailurePolicy(Model):
    max_restarts: int | None = None
    restart_strategy: str | None = None
    rules: list[FailurePolicyRule] | None = None


class StartupPolicy(Model):
    startup_policy_order: str | None = None  # AnyOrder | InOrder


class Coordinator(Model):
    replicated_job: str | None = None
    job_index: int | None = None
    pod_index: int | None = None


class VolumeRetentionPolicy(Model):
    when_deleted: str | None = None  # Delete | Retain


class VolumeClaimPolicy(Model):
    templates: list[dict[str, Any]] | None = None
    retention_policy: VolumeRetentionPolicy | None = None


class JobSetSpec(Model):
    replicated_jobs: list[ReplicatedJob] | None = None
    network: Network | None = None
    success_policy: SuccessPolicy | None = None
    failure_policy: FailurePolicy | None = None
    startup_policy: StartupPolicy | None = None
    suspend: bool | None = None
    coordinator: Coordinator | None = None
    managed_by: str | None = None
    ttl_seconds_after_finished: int | None = None
    volume_claim_policies: list[VolumeClaimPolicy] | None = None


# ------------------------------------------------------------------------------ status


class Condition(Model):
    type: str | None = None
    status: str | None = None
    observed_generation: int | None = None
    last_transition_time: str | None = None
    reason: str | None = None
    message: str | None = None


class ReplicatedJobStatus(Model):
    name: str | None = None
    ready: int | None = None
    succeeded: int | None = None
    failed: int | None = None
    active: int | None = None
    suspended: int | None = None
    job_restarts: list[int] | None = None
    job_restarts_count_towards_max: list[int] | None = None


class JobSetStatus(Model):
    conditions: list[Condition] | None = None
    restarts: int | None = None
    restarts_count_towards_max: int | None = None
    execution_attempts: int | None = None
    terminal_state: str | None = None
    replicated_jobs_status: list[ReplicatedJobStatus] | None = None
    previous_in_place_restart_attempt: int | None = None
    current_in_place_restart_attempt: int | None = None


# ------------------------------------------------------------------------------ JobSet


class JobSet(Model):
    """A JobSet object. `JobSet.from_yaml(text)`, `.to_yaml()`, `.to_dict()` for the wire."""

    api_version: str | None = None
    kind: str | None = None
    metadata: ObjectMeta | None = None
    spec: JobSetSpec | None = None
    status: JobSetStatus | None = None

    @classmethod
    def new(cls, name: str, namespace: str | None = None) -> JobSet:
        """An empty JobSet with apiVersion, kind and name set."""
        return cls(
            api_version=c.API_VERSION,
            kind=c.KIND,
            metadata=ObjectMeta(name=name, namespace=namespace),
            spec=JobSetSpec(replicated_jobs=[]),
        )

    @classmethod
    def from_yaml(cls, text: str) -> JobSet:
        """One YAML document (use `load_all` for several)."""
        import yaml

        data = yaml.safe_load(text)
        if not isinstance(data, dict):
            raise ValueError("a JobSet document must be a YAML mapping")
        return cls.from_dict(data)

    def to_yaml(self) -> str:
        import yaml

        return yaml.safe_dump(self.to_dict(), sort_keys=False)

    # ------------------------------------------------------------------ shortcuts

    @property
    def name(self) -> str:
        return (self.metadata.name if self.metadata else None) or ""

    @property
    def namespace(self) -> str | None:
        return self.metadata.namespace if self.metadata else None

    @property
    def conditions(self) -> list[Condition]:
        return list((self.status.conditions if self.status else None) or [])

    def condition(self, ctype: str) -> Condition | None:
        """The status condition of type `ctype`, or None."""
        return next((cond for cond in self.conditions if cond.type == ctype), None)

    def condition_true(self, ctype: str) -> bool:
        cond = self.condition(ctype)
        return cond is not None and cond.status == "True"

    @property
    def terminal_state(self) -> str | None:
        """`Completed` / `Failed` once finished (from the conditions when terminalState lags)."""
        state = self.status.terminal_state if self.status else None
        if state:
            return state
        if self.condition_true(c.CONDITION_COMPLETED):
            return c.TERMINAL_STATE_COMPLETED
        if self.condition_true(c.CONDITION_FAILED):
            return c.TERMINAL_STATE_FAILED
        return None

    @property
    def is_finished(self) -> bool:
        return self.terminal_state is not None

    def replicated_job(self, name: str) -> ReplicatedJob | None:
        for rjob in (self.spec.replicated_jobs if self.spec else None) or []:
            if rjob.name == name:
                return rjob
        return None


def load_all(text: str) -> list[JobSet]:
    """Every non-empty document of a (multi-document) YAML text, as JobSets.

    Raises ValueError naming the document when one is not a mapping or not a JobSet.
    """
    import yaml

    out: list[JobSet] = []
    for index, doc in enumerate(yaml.safe_load_all(text)):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise ValueError(f"document {index + 1}: not a YAML mapping")
        if doc.get("kind") != c.KIND or doc.get("apiVersion") != c.API_VERSION:
            raise ValueError(
                f"document {index + 1}: expected apiVersion {c.API_VERSION} kind {c.KIND}, "
                f"got {doc.get('apiVersion')} {doc.get('kind')}"
            )
        out.append(JobSet.from_dict(doc))
    return out


def dump_all(jobsets: Iterable[JobSet]) -> str:
    """Multi-document YAML of `jobsets`, keys in model order."""
    import yaml

    return yaml.safe_dump_all([js.to_dict() for js in jobsets], sort_keys=False)
