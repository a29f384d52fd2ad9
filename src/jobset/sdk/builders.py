"""Builders for the JobSet shapes people actually write.

Hand-writing a JobSet means four levels of nested templates before the first container,
and the mistakes (a dependsOn on the first ReplicatedJob, a name that makes pod hostnames
longer than 63 characters, a failure-policy target that does not exist) surface only when
the API server rejects the object. `JobSetBuilder.build()` runs the webhook's defaulting and
validation first and raises `ValidationError` with the server's wording.

Shapes:

- `leader_workers`: one leader pod plus N worker pods; the leader is the coordinator and
  workers start once it is ready;
- `multislice`: N identical Jobs ("slices"), each placed exclusively in its own topology
  domain (node pool, rack, TPU slice); any failure restarts the whole set;
- `pytorch`, `jax`: the same, with the environment presets (`jobset.api.presets`) switched on.

The objects built are not defaulted: the API server and webhook default them, and what the
user sees in `to_yaml()` stays what they asked for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Self

from jobset.api import constants as c
from jobset.api.presets import FRAMEWORK_KEY, FRAMEWORKS, NPROC_PER_NODE_KEY, PORT_KEY
from jobset.sdk.models import (
    Container,
    Coordinator,
    DependsOn,
    EnvVar,
    FailurePolicy,
    FailurePolicyRule,
    JobSet,
    JobSetSpec,
    JobSpec,
    JobTemplateSpec,
    Network,
    ObjectMeta,
    PodSpec,
    PodTemplateSpec,
    ReplicatedJob,
    StartupPolicy,
    SuccessPolicy,
)
from jobset.sdk.validation import check

__all__ = [
    "GKE_NODEPOOL",
    "JobSetBuilder",
    "container",
    "jax",
    "leader_workers",
    "multislice",
    "pytorch",
    "replicated_job",
]

GKE_NODEPOOL = "cloud.google.com/gke-nodepool"


def container(
    name: str,
    image: str,
    *,
    command: Sequence[str] | None = None,
    args: Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
    requests: Mapping[str, str | int] | None = None,
    limits: Mapping[str, str | int] | None = None,
    ports: Sequence[int] = (),
) -> Container:
    """A container; `env` values are literals, resources are stringified quantities."""
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = {k: str(v) for k, v in requests.items()}
    if limits:
        resources["limits"] = {k: str(v) for k, v in limits.items()}
    return Container(
        name=name,
        image=image,
        command=list(command) if command is not None else None,
        args=list(args) if args is not None else None,
        env=[EnvVar(name=k, value=str(v)) for k, v in env.items()] if env else None,
        resources=resources or None,
        ports=[{"containerPort": p} for p in ports] or None,
    )


def replicated_job(
    name: str,
    containers: Sequence[Container],
    *,
    replicas: int = 1,
    parallelism: int = 1,
    completions: int | None = None,
    backoff_limit: int | None = 0,
    group_name: str | None = None,
    depends_on: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    tolerations: Sequence[Mapping[str, Any]] = (),
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    pod_labels: Mapping[str, str] | None = None,
) -> ReplicatedJob:
    """`replicas` Jobs of `parallelism` pods each (completions default to parallelism).

    `depends_on` maps earlier ReplicatedJob names to `Ready` or `Complete`. `labels` and
    `annotations` go on the Job template (where the exclusive-topology and preset
    annotations are read); `pod_labels` on the pod template.
    """
    meta = None
    if labels or annotations:
        meta = ObjectMeta(
            labels=dict(labels) if labels else None,
            annotations=dict(annotations) if annotations else None,
        )
    return ReplicatedJob(
        name=name,
        replicas=replicas,
        group_name=group_name,
        depends_on=[DependsOn(name=k, status=v) for k, v in depends_on.items()]
        if depends_on
        else None,
        template=JobTemplateSpec(
            metadata=meta,
            spec=JobSpec(
                parallelism=parallelism,
                completions=parallelism if completions is None else completions,
                backoff_limit=backoff_limit,
                template=PodTemplateSpec(
                    metadata=ObjectMeta(labels=dict(pod_labels)) if pod_labels else None,
                    spec=PodSpec(
                        containers=[ct.copy() for ct in containers],
                        node_selector=dict(node_selector) if node_selector else None,
                        tolerations=[dict(t) for t in tolerations] or None,
                    ),
                ),
            ),
        ),
    )


class JobSetBuilder:
    """Fluent construction of a JobSet; `build()` validates as the webhook would."""

    def __init__(self, name: str, namespace: str | None = None) -> None:
        self._js = JobSet.new(name, namespace)

    @property
    def _spec(self) -> JobSetSpec:
        assert self._js.spec is not None
        return self._js.spec

    @property
    def _meta(self) -> ObjectMeta:
        assert self._js.metadata is not None
        return self._js.metadata

    def labels(self, **labels: str) -> Self:
        self._meta.labels = {**(self._meta.labels or {}), **labels}
        return self

    def annotate(self, key: str, value: str) -> Self:
        self._meta.annotations = {**(self._meta.annotations or {}), key: value}
        return self

    def add(self, rjob: ReplicatedJob) -> Self:
        """Append a ReplicatedJob (see `replicated_job`)."""
        self._spec.replicated_jobs = [*(self._spec.replicated_jobs or []), rjob]
        return self

    def replicated_job(self, name: str, containers: Sequence[Container], **kw: Any) -> Self:
        """Append `replicated_job(name, containers, **kw)`."""
        return self.add(replicated_job(name, containers, **kw))

    def exclusive_placement(self, topology_key: str, *, node_selector: bool = False) -> Self:
        """One child Job per topology domain (value of node label `topology_key`).

        `node_selector=True` picks upstream's node-selector strategy (the user labels and
        taints the nodes) instead of pod affinities.
        """
        self.annotate(c.EXCLUSIVE_KEY, topology_key)
        if node_selector:
            self.annotate(c.NODE_SELECTOR_STRATEGY_KEY, "true")
        return self

    def success_policy(self, operator: str = c.OPERATOR_ALL, targets: Sequence[str] = ()) -> Self:
        self._spec.success_policy = SuccessPolicy(
            operator=operator, target_replicated_jobs=list(targets) or None
        )
        return self

    def failure_policy(self, max_restarts: int = 0, restart_strategy: str | None = None) -> Self:
        policy = self._spec.failure_policy or FailurePolicy()
        policy.max_restarts = max_restarts
        policy.restart_strategy = restart_strategy
        self._spec.failure_policy = policy
        return self

    def failure_rule(
        self,
        action: str,
        *,
        name: str | None = None,
        reasons: Sequence[str] = (),
        message_patterns: Sequence[str] = (),
        targets: Sequence[str] = (),
    ) -> Self:
        """Append a failure-policy rule (rules are tried in order)."""
        policy = self._spec.failure_policy or FailurePolicy()
        rule = FailurePolicyRule(
            name=name,
            action=action,
            on_job_failure_reasons=list(reasons) or None,
            on_job_failure_message_patterns=list(message_patterns) or None,
            target_replicated_jobs=list(targets) or None,
        )
        policy.rules = [*(policy.rules or []), rule]
        self._spec.failure_policy = policy
        return self

    def coordinator(self, rjob: str, job_index: int = 0, pod_index: int = 0) -> Self:
        self._spec.coordinator = Coordinator(
            replicated_job=rjob, job_index=job_index, pod_index=pod_index
        )
        return self

    def startup_in_order(self) -> Self:
        self._spec.startup_policy = StartupPolicy(startup_policy_order=c.STARTUP_IN_ORDER)
        return self

    def network(
        self,
        *,
        subdomain: str | None = None,
        enable_dns_hostnames: bool | None = None,
        publish_not_ready_addresses: bool | None = None,
    ) -> Self:
        self._spec.network = Network(
            subdomain=subdomain,
            enable_dns_hostnames=enable_dns_hostnames,
            publish_not_ready_addresses=publish_not_ready_addresses,
        )
        return self

    def suspend(self, suspended: bool = True) -> Self:
        self._spec.suspend = suspended
        return self

    def ttl_after_finished(self, seconds: int) -> Self:
        self._spec.ttl_seconds_after_finished = seconds
        return self

    def managed_by(self, controller: str) -> Self:
        self._spec.managed_by = controller
        return self

    def preset(
        self, framework: str, *, port: int | None = None, nproc_per_node: int | None = None
    ) -> Self:
        """Switch on the environment presets (`jobset.api.presets`) for every ReplicatedJob."""
        if framework not in FRAMEWORKS:
            raise ValueError(f"framework must be one of {', '.join(FRAMEWORKS)}")
        self.annotate(FRAMEWORK_KEY, framework)
        if port is not None:
            self.annotate(PORT_KEY, str(port))
        if nproc_per_node is not None:
            self.annotate(NPROC_PER_NODE_KEY, str(nproc_per_node))
        return self

    def build(self, *, validate: bool = True, features: Mapping[str, bool] | None = None) -> JobSet:
        """A copy of the JobSet; raises `ValidationError` when the webhook would reject it."""
        js = self._js.copy()
        if validate:
            check(js, features=features)
        return js


# ------------------------------------------------------------------------------ shapes


def leader_workers(
    name: str,
    *,
    image: str,
    workers: int,
    leader_command: Sequence[str] | None = None,
    worker_command: Sequence[str] | None = None,
    namespace: str | None = None,
    leader_name: str = "leader",
    workers_name: str = "workers",
    wait_for_leader: bool = True,
    max_restarts: int = 0,
) -> JobSet:
    """A leader pod and `workers` worker pods (one Job each side).

    The leader is the JobSet's coordinator (every pod gets its endpoint as the
    `jobset.sigs.k8s.io/coordinator` label), and with `wait_for_leader` workers are created
    once the leader is ready. Success means every Job succeeded.
    """
    b = (
        JobSetBuilder(name, namespace)
        .replicated_job(leader_name, [container("leader", image, command=leader_command)])
        .replicated_job(
            workers_name,
            [container("worker", image, command=worker_command)],
            parallelism=workers,
            depends_on={leader_name: c.DEPENDENCY_READY} if wait_for_leader else None,
        )
        .coordinator(leader_name)
    )
    if max_restarts:
        b.failure_policy(max_restarts)
    return b.build()


def multislice(
    name: str,
    *,
    image: str,
    slices: int,
    pods_per_slice: int,
    command: Sequence[str] | None = None,
    topology_key: str = GKE_NODEPOOL,
    limits: Mapping[str, str | int] | None = None,
    max_restarts: int = 3,
    namespace: str | None = None,
    slice_name: str = "slice",
) -> JobSet:
    """`slices` Jobs of `pods_per_slice` pods, each Job alone in one `topology_key` domain.

    Synchronous training cannot survive losing a pod, so any failure restarts the whole
    JobSet, up to `max_restarts` times.
    """
    return (
        JobSetBuilder(name, namespace)
        .exclusive_placement(topology_key)
        .replicated_job(
            slice_name,
            [container("main", image, command=command, limits=limits)],
            replicas=slices,
            parallelism=pods_per_slice,
        )
        .failure_policy(max_restarts)
        .build()
    )


def pytorch(
    name: str,
    *,
    image: str,
    nodes: int,
    command: Sequence[str] | None = None,
    nproc_per_node: int | None = None,
    gpus_per_node: int | None = None,
    port: int | None = None,
    max_restarts: int = 0,
    namespace: str | None = None,
) -> JobSet:
    """`nodes` pods of one Job running `command` (e.g. `torchrun train.py`) with the
    PyTorch preset: MASTER_ADDR, WORLD_SIZE, NODE_RANK... and torchrun's PET_* defaults."""
    limits = {"nvidia.com/gpu": gpus_per_node} if gpus_per_node else None
    b = (
        JobSetBuilder(name, namespace)
        .preset("pytorch", port=port, nproc_per_node=nproc_per_node)
        .replicated_job(
            "workers",
            [container("pytorch", image, command=command, limits=limits)],
            parallelism=nodes,
        )
    )
    if max_restarts:
        b.failure_policy(max_restarts)
    return b.build()


def jax(
    name: str,
    *,
    image: str,
    hosts_per_slice: int,
    slices: int = 1,
    command: Sequence[str] | None = None,
    tpus_per_host: int | None = None,
    topology_key: str | None = GKE_NODEPOOL,
    port: int | None = None,
    max_restarts: int = 3,
    namespace: str | None = None,
) -> JobSet:
    """`slices` Jobs of `hosts_per_slice` pods with the JAX preset (JAX_COORDINATOR_ADDRESS,
    JAX_NUM_PROCESSES, JAX_PROCESS_ID); several slices are placed exclusively on
    `topology_key` domains (None: no exclusive placement)."""
    limits = {"google.com/tpu": tpus_per_host} if tpus_per_host else None
    b = JobSetBuilder(name, namespace).preset("jax", port=port)
    if slices > 1 and topology_key:
        b.exclusive_placement(topology_key)
    return (
        b.replicated_job(
            "slice",
            [container("jax", image, command=command, limits=limits)],
            replicas=slices,
            parallelism=hosts_per_slice,
        )
        .failure_policy(max_restarts)
        .build()
    )
