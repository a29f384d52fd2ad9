"""A JobSet with its children, gathered once for `describe` and `tree`.

Both commands show the same facts (Jobs in spec order, their pods with node and topology
domain), and `-o json` of either prints this structure, so it is built in one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from jobset.api import constants as c
from jobset.commands.blockers import Blocker, blockers
from jobset.commands.summary import exclusive_topology_key, job_state, pod_domain
from jobset.sdk.models import JobSet

if TYPE_CHECKING:
    from jobset.sdk.client import JobSetClient

__all__ = ["EventView", "JobView", "PodView", "Snapshot", "collect"]


@dataclass
class PodView:
    name: str
    index: str
    phase: str
    node: str
    domain: str
    restarts: int


@dataclass
class JobView:
    name: str
    replicated_job: str
    index: str
    state: str
    attempt: str
    active: int
    ready: int
    succeeded: int
    failed: int
    pods: list[PodView] = field(default_factory=list)


@dataclass
class EventView:
    time: str
    type: str
    reason: str
    object: str
    message: str
    count: int


@dataclass
class Snapshot:
    jobset: JobSet
    jobs: list[JobView]
    events: list[EventView]
    # Why it is not progressing (`jobset.commands.blockers`); empty when finished.
    blockers: list[Blocker] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "jobset": self.jobset.to_dict(),
            "jobs": [asdict(j) for j in self.jobs],
            "events": [asdict(e) for e in self.events],
            "blockers": [asdict(b) for b in self.blockers],
        }


def _labels(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return (obj.get("metadata") or {}).get("labels") or {}


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _pod_view(
    pod: Mapping[str, Any], nodes: Mapping[str, Mapping[str, Any]], key: str | None
) -> PodView:
    status = pod.get("status") or {}
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    phase = str(status.get("phase") or "Pending")
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        phase = "Terminating"
    return PodView(
        name=_name(pod),
        index=str(annotations.get(c.JOB_COMPLETION_INDEX_ANNOTATION, "")),
        phase=phase,
        node=str((pod.get("spec") or {}).get("nodeName") or ""),
        domain=pod_domain(pod, nodes, key),
        restarts=sum(
            int(s.get("restartCount") or 0) for s in status.get("containerStatuses") or []
        ),
    )


def _event_view(event: Mapping[str, Any]) -> EventView:
    obj = event.get("involvedObject") or {}
    return EventView(
        time=str(
            event.get("lastTimestamp")
            or event.get("eventTime")
            or event.get("firstTimestamp")
            or (event.get("metadata") or {}).get("creationTimestamp")
            or ""
        ),
        type=str(event.get("type") or ""),
        reason=str(event.get("reason") or ""),
        object=f"{str(obj.get('kind') or '').lower()}/{obj.get('name') or ''}",
        message=str(event.get("message") or "").strip(),
        count=int(event.get("count") or 1),
    )


async def collect(
    sdk: JobSetClient, js: JobSet, *, with_events: bool = True, max_events: int = 20
) -> Snapshot:
    """The JobSet's Jobs and pods (and recent events), read with a handful of LISTs, and
    what holds it up (`blockers`, from the events too when `with_events`)."""
    restarts = (js.status.restarts if js.status else None) or 0
    jobs = await sdk.jobs(js)
    pods = await sdk.pods(js)
    nodes = await sdk.nodes() if pods else {}
    by_job: dict[str, list[Mapping[str, Any]]] = {}
    for pod in pods:
        owner = _labels(pod).get("job-name") or _labels(pod).get("batch.kubernetes.io/job-name")
        by_job.setdefault(str(owner or ""), []).append(pod)
    views: list[JobView] = []
    for job in jobs:
        labels = _labels(job)
        status = job.get("status") or {}
        rjob = str(labels.get(c.REPLICATED_JOB_NAME_KEY) or "")
        key = exclusive_topology_key(js, rjob)
        views.append(
            JobView(
                name=_name(job),
                replicated_job=rjob,
                index=str(labels.get(c.JOB_INDEX_KEY) or ""),
                state=job_state(job, restarts),
                attempt=str(labels.get(c.RESTART_ATTEMPT_KEY) or "0"),
                active=int(status.get("active") or 0),
                ready=int(status.get("ready") or 0),
                succeeded=int(status.get("succeeded") or 0),
                failed=int(status.get("failed") or 0),
                pods=[_pod_view(p, nodes, key) for p in by_job.get(_name(job), [])],
            )
        )
    events: list[EventView] = []
    raw_events: list[Mapping[str, Any]] = []
    if with_events:
        raw_events = list(await sdk.events(js))
        events = [_event_view(e) for e in raw_events[-max_events:]] if max_events > 0 else []
    return Snapshot(js, views, events, blockers(js, jobs, pods, raw_events))
