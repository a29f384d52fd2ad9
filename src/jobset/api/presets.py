"""Environment presets: the distributed-training environment variables, derived from the JobSet.

Every PyTorch or JAX JobSet repeats the same hand-written env block (`MASTER_ADDR:
myjob-workers-0-0.myjob`, `WORLD_SIZE: "8"`, a rank computed in a shell prologue...), and
it silently goes stale when someone renames the JobSet or changes `replicas`. The
controller knows every one of those values when it builds a child Job, so a JobSet can opt
in and get them computed:

```yaml
metadata:
  annotations:
    presets.jobset-py.dev/framework: pytorch     # or: jax
    presets.jobset-py.dev/port: "29500"          # optional (pytorch 29500, jax 8476)
    presets.jobset-py.dev/nproc-per-node: "8"    # optional (pytorch: processes per pod)
```

The annotations may sit on the JobSet (every ReplicatedJob takes part) or on a
ReplicatedJob's Job template (`replicatedJobs[].template.metadata.annotations`; only the
ReplicatedJobs that carry or inherit `framework` take part; the template's values win over
the JobSet's). The keys live in this project's own domain, `presets.jobset-py.dev`, because
the upstream `jobset.sigs.k8s.io` keys are upstream's to define.

Each pod of the participating ReplicatedJobs is one "node" of the training job, ranked in
spec order: ReplicatedJob by ReplicatedJob, Job by Job, then by completion index. Variables
(added to every container and init container; a name the user already set is never touched;
ours are put first so the user's own env can reference them with `$(VAR)`):

- pytorch: `MASTER_ADDR` (the coordinator endpoint when `spec.coordinator` is set, else the
  first pod of the first participating ReplicatedJob, `<jobset>-<rjob>-0-0.<subdomain>`),
  `MASTER_PORT`, `NNODES`, `NODE_RANK`, `WORLD_SIZE` (nodes x nproc-per-node), `RANK` (only
  when each pod runs one process: with several, the launcher assigns ranks), `NPROC_PER_NODE`
  (when set), and the same as torchrun's `PET_*` defaults, so a bare `torchrun train.py` works.
- jax: `JAX_COORDINATOR_ADDRESS` (`host:port`, read by `jax.distributed.initialize()`),
  `JAX_NUM_PROCESSES`, `JAX_PROCESS_ID`.
- both: `JOBSET_RANK_OFFSET` (pods ranked before this Job) and `JOB_COMPLETION_INDEX`.

Values fixed for a whole Job are written as literals. The rank is per pod: it comes from the
downward API. When it equals the completion index (the Job is the first of the world) the env
var reads the Job controller's `batch.kubernetes.io/job-completion-index` annotation; when the
Job has a single pod it is a literal; otherwise it is `offset + completion index`, which an env
var cannot compute, so it reads the pod label `presets.jobset-py.dev/rank`, which the pod
mutating webhook stamps with `pod_rank_labels(pod)` (see that function).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from jobset.api import constants as c
from jobset.api.types import coordinator_endpoint, name_of, replicas, subdomain
from jobset.api.validation.errors import ErrorType, FieldError

__all__ = [
    "DEFAULT_PORTS",
    "FRAMEWORKS",
    "FRAMEWORK_KEY",
    "JAX",
    "NPROC_PER_NODE_KEY",
    "PORT_KEY",
    "PYTORCH",
    "RANK_LABEL",
    "RANK_OFFSET_KEY",
    "WorldLayout",
    "apply_presets",
    "apply_presets_in_place",
    "pod_rank_labels",
    "preset_settings",
    "validate_presets",
    "world_layout",
]

PRESET_DOMAIN: Final = "presets.jobset-py.dev"
FRAMEWORK_KEY: Final = f"{PRESET_DOMAIN}/framework"
PORT_KEY: Final = f"{PRESET_DOMAIN}/port"
NPROC_PER_NODE_KEY: Final = f"{PRESET_DOMAIN}/nproc-per-node"
# Pod-template annotation written by apply_presets: pods ranked before this Job's first pod.
RANK_OFFSET_KEY: Final = f"{PRESET_DOMAIN}/rank-offset"
# Pod label the pod webhook stamps (offset + completion index); env vars read it.
RANK_LABEL: Final = f"{PRESET_DOMAIN}/rank"

PYTORCH: Final = "pytorch"
JAX: Final = "jax"
FRAMEWORKS: Final[tuple[str, ...]] = (PYTORCH, JAX)
DEFAULT_PORTS: Final[dict[str, int]] = {PYTORCH: 29500, JAX: 8476}

_COMPLETION_INDEX_REF: Final = f"metadata.annotations['{c.JOB_COMPLETION_INDEX_ANNOTATION}']"
_RANK_LABEL_REF: Final = f"metadata.labels['{RANK_LABEL}']"


def _annotations(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return ((obj or {}).get("metadata") or {}).get("annotations") or {}


def preset_settings(jobset: Mapping[str, Any], rjob: Mapping[str, Any]) -> dict[str, str]:
    """The preset annotations in force for `rjob`: the JobSet's, overridden by the template's."""
    merged: dict[str, str] = {}
    for source in (_annotations(jobset), _annotations(rjob.get("template"))):
        for key in (FRAMEWORK_KEY, PORT_KEY, NPROC_PER_NODE_KEY):
            if key in source:
                merged[key] = str(source[key])
    return merged


def _positive_int(text: str | None) -> int | None:
    """An annotation value as a positive int; None when absent or malformed."""
    if text is None:
        return None
    try:
        value = int(text.strip())
    except ValueError:
        return None
    return value if value > 0 else None


def _pods_per_job(rjob: Mapping[str, Any]) -> int:
    """Pods (completion indexes) of each Job of `rjob`: completions, else parallelism, else 1."""
    spec = (rjob.get("template") or {}).get("spec") or {}
    for key in ("completions", "parallelism"):
        value = spec.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return max(value, 0)
    return 1


@dataclass(frozen=True)
class WorldLayout:
    """Where one Job's pods sit in the training world of its framework."""

    framework: str
    port: int
    nproc_per_node: int | None
    nodes: int  # pods of every participating Job
    rank_offset: int  # pods ranked before this Job's pod 0
    pods_per_job: int
    master_host: str


def world_layout(
    jobset: Mapping[str, Any], rjob: Mapping[str, Any], job_index: int
) -> WorldLayout | None:
    """The layout for Job `job_index` of `rjob`, or None when `rjob` has no (valid) preset."""
    settings = preset_settings(jobset, rjob)
    framework = settings.get(FRAMEWORK_KEY, "").strip().lower()
    if framework not in FRAMEWORKS:
        return None
    rjob_name = rjob.get("name")
    nodes = 0
    offset: int | None = None
    first: Mapping[str, Any] | None = None
    for other in (jobset.get("spec") or {}).get("replicatedJobs") or []:
        other_settings = preset_settings(jobset, other)
        if other_settings.get(FRAMEWORK_KEY, "").strip().lower() != framework:
            continue
        first = first or other
        per_job = _pods_per_job(other)
        if other.get("name") == rjob_name:
            offset = nodes + job_index * per_job
        nodes += replicas(other) * per_job
    if offset is None or first is None:
        return None  # `rjob` is not part of this JobSet's spec
    if (jobset.get("spec") or {}).get("coordinator") is not None:
        master = coordinator_endpoint(jobset)
    else:
        master = f"{name_of(jobset)}-{first.get('name')}-0-0.{subdomain(jobset)}"
    return WorldLayout(
        framework=framework,
        port=_positive_int(settings.get(PORT_KEY)) or DEFAULT_PORTS[framework],
        nproc_per_node=_positive_int(settings.get(NPROC_PER_NODE_KEY)),
        nodes=nodes,
        rank_offset=offset,
        pods_per_job=_pods_per_job(rjob),
        master_host=master,
    )


def _literal(name: str, value: object) -> dict[str, Any]:
    return {"name": name, "value": str(value)}


def _field_ref(name: str, path: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def _rank_var(name: str, layout: WorldLayout) -> dict[str, Any]:
    """The per-pod rank as an env var, from the cheapest source that is exact."""
    if layout.pods_per_job == 1:
        return _literal(name, layout.rank_offset)
    if layout.rank_offset == 0:
        return _field_ref(name, _COMPLETION_INDEX_REF)
    return _field_ref(name, _RANK_LABEL_REF)


def preset_env(layout: WorldLayout) -> list[dict[str, Any]]:
    """The env vars of `layout`, in the order they are added to containers."""
    env = [
        _literal("JOBSET_RANK_OFFSET", layout.rank_offset),
        _field_ref("JOB_COMPLETION_INDEX", _COMPLETION_INDEX_REF),
    ]
    if layout.framework == PYTORCH:
        world = layout.nodes * (layout.nproc_per_node or 1)
        env += [
            _literal("MASTER_ADDR", layout.master_host),
            _literal("MASTER_PORT", layout.port),
            _literal("NNODES", layout.nodes),
            _rank_var("NODE_RANK", layout),
            _literal("WORLD_SIZE", world),
        ]
        if (layout.nproc_per_node or 1) == 1:
            env.append(_rank_var("RANK", layout))
        if layout.nproc_per_node is not None:
            env.append(_literal("NPROC_PER_NODE", layout.nproc_per_node))
        env += [
            _literal("PET_MASTER_ADDR", layout.master_host),
            _literal("PET_MASTER_PORT", layout.port),
            _literal("PET_NNODES", layout.nodes),
            _rank_var("PET_NODE_RANK", layout),
        ]
        if layout.nproc_per_node is not None:
            env.append(_literal("PET_NPROC_PER_NODE", layout.nproc_per_node))
    else:
        env += [
            _literal("JAX_COORDINATOR_ADDRESS", f"{layout.master_host}:{layout.port}"),
            _literal("JAX_NUM_PROCESSES", layout.nodes),
            _rank_var("JAX_PROCESS_ID", layout),
        ]
    return env


def _add_env(container: dict[str, Any], preset: Sequence[Mapping[str, Any]]) -> None:
    """Add the preset's variables the container does not set itself (each container gets
    its own entries: `preset` is made anew for each)."""
    user = container.get("env") or []
    taken = {e.get("name") for e in user if isinstance(e, Mapping)}
    added = [dict(e) for e in preset if e["name"] not in taken]
    if added:
        container["env"] = added + list(user)


def apply_presets(
    jobset: Mapping[str, Any], rjob: Mapping[str, Any], job_index: int, job_template: dict[str, Any]
) -> dict[str, Any]:
    """A copy of `job_template` (a JobTemplateSpec) with the preset env vars added.

    Returned unchanged (as a copy) when `rjob` has no preset. Idempotent: applying it to its
    own output changes nothing. The pod template also gets the `rank-offset` annotation the
    pod webhook needs for `pod_rank_labels`.
    """
    out = copy.deepcopy(job_template)
    apply_presets_in_place(jobset, rjob, job_index, out)
    return out


def apply_presets_in_place(
    jobset: Mapping[str, Any], rjob: Mapping[str, Any], job_index: int, job_template: dict[str, Any]
) -> None:
    """`apply_presets` on a template the caller owns (no copy: the Job builder parses each
    Job's template afresh, so copying it again would only cost)."""
    layout = world_layout(jobset, rjob, job_index)
    if layout is None:
        return
    pod_template = job_template.setdefault("spec", {}).setdefault("template", {})
    pod_meta = pod_template.setdefault("metadata", {})
    annotations = pod_meta.get("annotations") or {}
    pod_meta["annotations"] = {**annotations, RANK_OFFSET_KEY: str(layout.rank_offset)}
    pod_spec = pod_template.setdefault("spec", {})
    for key in ("initContainers", "containers"):
        for container in pod_spec.get(key) or []:
            if isinstance(container, dict):
                _add_env(container, preset_env(layout))


def pod_rank_labels(pod: Mapping[str, Any]) -> dict[str, str]:
    """Labels the pod mutating webhook adds to a pod at creation: `{RANK_LABEL: rank}`.

    The rank is the `rank-offset` annotation `apply_presets` put on the pod template plus the
    pod's completion index (set by the Job controller before the pod is created). Empty when
    either is missing or malformed, so calling it on any pod is safe.
    """
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    try:
        offset = int(str(annotations[RANK_OFFSET_KEY]))
        index = int(str(annotations[c.JOB_COMPLETION_INDEX_ANNOTATION]))
    except (KeyError, ValueError):
        return {}
    return {RANK_LABEL: str(offset + index)}


def validate_presets(jobset: Mapping[str, Any]) -> list[FieldError]:
    """Errors in the preset annotations, checked client-side (`jobset submit`, SDK builders).

    The controller ignores a malformed preset (it never fails a reconcile over one), so users
    learn about mistakes before they submit.
    """
    errs: list[FieldError] = []
    sources: list[tuple[str, Mapping[str, Any]]] = [("metadata.annotations", _annotations(jobset))]
    for idx, rjob in enumerate((jobset.get("spec") or {}).get("replicatedJobs") or []):
        path = f"spec.replicatedJobs[{idx}].template.metadata.annotations"
        sources.append((path, _annotations(rjob.get("template"))))
    for path, found in sources:
        if FRAMEWORK_KEY in found:
            value = str(found[FRAMEWORK_KEY])
            if value.strip().lower() not in FRAMEWORKS:
                errs.append(
                    FieldError(
                        f"{path}[{FRAMEWORK_KEY}]",
                        ErrorType.NOT_SUPPORTED,
                        "supported values: " + ", ".join(f'"{f}"' for f in FRAMEWORKS),
                        value,
                    )
                )
        for key, upper in ((PORT_KEY, 65535), (NPROC_PER_NODE_KEY, None)):
            if key not in found:
                continue
            value = str(found[key])
            number = _positive_int(value)
            if number is None or (upper is not None and number > upper):
                limit = f"between 1 and {upper}" if upper else "a positive integer"
                errs.append(
                    FieldError(f"{path}[{key}]", ErrorType.INVALID, f"must be {limit}", value)
                )
    return errs
