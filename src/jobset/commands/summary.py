"""What the user commands show, computed from objects: phase, progress, ages, domains.

Pure functions (no I/O, no terminal), so the wording of every column is unit-tested and
`get`, `watch`, `describe` and `tree` agree with one another.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from jobset.api import constants as c
from jobset.sdk.models import JobSet
from kubeutil.rfc3339 import parse_rfc3339

__all__ = [
    "DOMAIN_KEYS",
    "Progress",
    "age",
    "exclusive_topology_key",
    "human_duration",
    "job_state",
    "phase",
    "pod_domain",
    "progress",
    "progress_text",
]

# Node labels tried, in order, for a pod's topology domain when no exclusive key is set.
DOMAIN_KEYS: Final[tuple[str, ...]] = (
    "cloud.google.com/gke-nodepool",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
)


def phase(js: JobSet) -> str:
    """One word for the state: Completed, Failed, Terminating, Suspended, Restarting,
    Running (some Job has ready or active pods) or Pending."""
    if js.terminal_state:
        return js.terminal_state
    if js.metadata is not None and js.metadata.deletion_timestamp:
        return "Terminating"
    if (js.spec is not None and js.spec.suspend) or js.condition_true(c.CONDITION_SUSPENDED):
        return "Suspended"
    if js.condition_true(c.CONDITION_RESTARTING):
        return "Restarting"
    for rjs in (js.status.replicated_jobs_status if js.status else None) or []:
        if (rjs.ready or 0) or (rjs.active or 0) or (rjs.succeeded or 0):
            return "Running"
    return "Pending"


@dataclass(frozen=True)
class Progress:
    """Child-Job counts of one ReplicatedJob against its replicas."""

    name: str
    replicas: int
    ready: int = 0
    succeeded: int = 0
    failed: int = 0
    active: int = 0
    suspended: int = 0


def progress(js: JobSet) -> list[Progress]:
    """One entry per ReplicatedJob of the spec (in spec order), from status counts."""
    counts = {
        rjs.name: rjs for rjs in (js.status.replicated_jobs_status if js.status else None) or []
    }
    out: list[Progress] = []
    for rjob in (js.spec.replicated_jobs if js.spec else None) or []:
        name = rjob.name or ""
        st = counts.get(name)
        out.append(
            Progress(
                name=name,
                replicas=c.DEFAULT_REPLICAS if rjob.replicas is None else rjob.replicas,
                ready=(st.ready or 0) if st else 0,
                succeeded=(st.succeeded or 0) if st else 0,
                failed=(st.failed or 0) if st else 0,
                active=(st.active or 0) if st else 0,
                suspended=(st.suspended or 0) if st else 0,
            )
        )
    return out


def progress_text(items: Sequence[Progress]) -> str:
    """`leader 1/0/0 of 1, workers 2/1/0 of 4`: ready/succeeded/failed of replicas."""
    return ", ".join(f"{p.name} {p.ready}/{p.succeeded}/{p.failed} of {p.replicas}" for p in items)


def human_duration(seconds: float) -> str:
    """Durations as kubectl prints ages: 42s, 5m12s, 95m, 3h20m, 30h, 4d6h, 120d, 3y."""
    s = max(0, int(seconds))
    if s < 120:
        return f"{s}s"
    minutes, hours, days = s // 60, s // 3600, s // 86400
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if hours < 3:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if days < 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if days < 365 * 2:
        return f"{days}d"
    return f"{days // 365}y"


def age(timestamp: str | None, now: datetime | None = None) -> str:
    """Time since `timestamp` (`<unknown>` when missing, as kubectl)."""
    when = parse_rfc3339(timestamp)
    if when is None:
        return "<unknown>"
    return human_duration(((now or datetime.now(UTC)) - when).total_seconds())


def exclusive_topology_key(js: JobSet, rjob_name: str | None = None) -> str | None:
    """The exclusive-placement topology key of the JobSet, or of one ReplicatedJob."""
    if rjob_name is not None:
        rjob = js.replicated_job(rjob_name)
        tmeta = rjob.template.metadata if rjob and rjob.template else None
        key = ((tmeta.annotations if tmeta else None) or {}).get(c.EXCLUSIVE_KEY)
        if key:
            return key
    meta = js.metadata
    return ((meta.annotations if meta else None) or {}).get(c.EXCLUSIVE_KEY)


def pod_domain(
    pod: Mapping[str, Any], nodes: Mapping[str, Mapping[str, Any]], key: str | None
) -> str:
    """The topology domain of the node a pod runs on: the node's `key` label (or the first
    of DOMAIN_KEYS it has); empty when unscheduled or unlabelled."""
    node_name = (pod.get("spec") or {}).get("nodeName")
    node = nodes.get(str(node_name)) if node_name else None
    if node is None:
        return ""
    labels = (node.get("metadata") or {}).get("labels") or {}
    for candidate in ((key,) if key else ()) + DOMAIN_KEYS:
        if candidate in labels:
            return str(labels[candidate])
    return ""


def _condition_true(obj: Mapping[str, Any], ctype: str) -> bool:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype and cond.get("status") == "True":
            return True
    return False


def job_state(job: Mapping[str, Any], restarts: int) -> str:
    """A child Job's state: Succeeded, Failed, Previous (an older restart attempt, being
    replaced), Suspended or Active."""
    labels = (job.get("metadata") or {}).get("labels") or {}
    if _condition_true(job, "Complete"):
        return "Succeeded"
    if _condition_true(job, "Failed"):
        return "Failed"
    try:
        attempt = int(labels.get(c.RESTART_ATTEMPT_KEY, restarts))
    except ValueError:
        attempt = restarts
    if attempt < restarts:
        return "Previous"
    if (job.get("spec") or {}).get("suspend"):
        return "Suspended"
    return "Active"
