"""JobSet and ReplicatedJob manifests for tests: one pair of keyword builders.

`rjob(name, replicas, ...)` builds a ReplicatedJob and `jobset(name, *rjobs, ...)` a JobSet
around them, as plain dicts (what a test sends to the API server or hands a planner). The
defaults are the runnable shape most tests want: an Indexed Job of `parallelism` pods, as
many completions, backoffLimit 0, restartPolicy Never, one container `main` running
`busybox`. Every default can be switched off with `None` (the field is then left out), so
the variants the suites need are keywords, not copies:

- `completions` follows `parallelism` unless given;
- `indexed`: True -> completionMode Indexed, False -> NonIndexed, None -> not set;
- `replicas`, `backoff_limit`, `restart_policy`, `group` (groupName), `command`, `env` (a
  name -> value mapping) and `depends_on`: left out when None;
- `job` (extra Job spec fields), `pod_template` (replaces the whole pod template),
  `container_fields` (extra fields of the one container) and `**fields` (extra
  ReplicatedJob fields, e.g. `dependsOn=[...]`).

`jobset` puts `replicatedJobs=list(rjobs)` before `**spec`, so a `replicatedJobs=` keyword
wins; metadata comes from `namespace`, `generate_name`, `uid`, `resource_version`,
`labels` and `annotations` (each left out when None) and `status` is added when given.
Nothing is defaulted or validated: tests of defaulting and validation need the raw object,
and the invalid ones too, which is why these are not the SDK's builders
(`jobset.sdk.builders` runs the webhook's defaulting and validation in `build()`).

Suites keep a one-line wrapper where they post-process or default differently
(tests/unit/controllers/helpers.py runs `default_jobset`; tests/unit/api/test_validation.py
adds a default successPolicy; tests/integration/controllers/helpers.py names failure-policy
rules as the webhook would).

Builders left where they are, because they build something genuinely different:

- tests/unit/api/test_presets.py `rjob`: a pod with an init container and two containers
  (one with MASTER_PORT already set) and pod-template annotations, the shape the preset
  tests inject into; nothing else wants it.
- tests/unit/kubesim/machinery/test_schema.py: its one ReplicatedJob has no pod template at
  all (`{"name": "workers", "template": {"spec": {"parallelism": 2}}}`), for the trimmed
  test schema there; only the JobSet around it comes from here.
- tests/unit/api/test_validation.py `elastic_rjobs`: Job specs without a pod template, for
  the update rules that only compare parallelism/completions.
- tests/integration/incluster/ (YAML text for a real cluster, `jobset_manifest`) and
  benchmarks/ (`workload.jobset`, `placement.jobset`): outside this test tree's builders,
  left to their own suites.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

API_VERSION: Final = "jobset.x-k8s.io/v1alpha2"
KIND: Final = "JobSet"


class _Same:
    """`completions` default: as many as `parallelism`."""


SAME: Final = _Same()


def container(
    name: str = "main",
    image: str = "busybox",
    *,
    command: Sequence[str] | None = None,
    env: Mapping[str, str] | list[dict[str, Any]] | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """A container; `env` is name -> value or a list of EnvVars, `**fields` other fields."""
    out: dict[str, Any] = {"name": name, "image": image}
    if command is not None:
        out["command"] = list(command)
    if isinstance(env, Mapping):
        out["env"] = [{"name": k, "value": v} for k, v in env.items()]
    elif env is not None:
        out["env"] = list(env)
    out.update(fields)
    return out


_container = container  # rjob's `container` keyword is the container's name


def rjob(
    name: str,
    replicas: int | None = 1,
    *,
    parallelism: int | None = 1,
    completions: int | _Same | None = SAME,
    indexed: bool | None = True,
    backoff_limit: int | None = 0,
    restart_policy: str | None = "Never",
    image: str = "busybox",
    container: str = "main",
    command: Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
    container_fields: Mapping[str, Any] | None = None,
    pod_template: dict[str, Any] | None = None,
    job: Mapping[str, Any] | None = None,
    group: str | None = None,
    depends_on: list[dict[str, str]] | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """A ReplicatedJob (see the module docstring for the defaults and what None means)."""
    spec: dict[str, Any] = dict(job or {})
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if isinstance(completions, _Same):
        completions = parallelism
    if completions is not None:
        spec["completions"] = completions
    if backoff_limit is not None:
        spec["backoffLimit"] = backoff_limit
    if indexed is not None:
        spec["completionMode"] = "Indexed" if indexed else "NonIndexed"
    if pod_template is None:
        pod: dict[str, Any] = {}
        if restart_policy is not None:
            pod["restartPolicy"] = restart_policy
        pod["containers"] = [
            _container(container, image, command=command, env=env, **(container_fields or {}))
        ]
        pod_template = {"spec": pod}
    spec["template"] = pod_template
    out: dict[str, Any] = {"name": name}
    if group is not None:
        out["groupName"] = group
    if replicas is not None:
        out["replicas"] = replicas
    out["template"] = {"spec": spec}
    if depends_on is not None:
        out["dependsOn"] = depends_on
    out.update(fields)
    return out


def jobset(
    name: str | None,
    *rjobs: dict[str, Any],
    namespace: str | None = None,
    generate_name: str | None = None,
    uid: str | None = None,
    resource_version: str | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    status: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A JobSet of `rjobs`; `**spec` are JobSet spec fields (camelCase, as on the wire)."""
    meta: dict[str, Any] = {}
    for key, value in (
        ("name", name),
        ("generateName", generate_name),
        ("namespace", namespace),
        ("uid", uid),
        ("resourceVersion", resource_version),
        ("labels", labels),
        ("annotations", annotations),
    ):
        if value is not None:
            meta[key] = value
    obj: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": meta,
        "spec": {"replicatedJobs": list(rjobs), **spec},
    }
    if status is not None:
        obj["status"] = status
    return obj
