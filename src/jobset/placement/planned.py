"""The planned strategy: the controller picks each Job's topology domain when creating it.

Selected with `placement.jobset.x-k8s.io/strategy: planned` next to
`alpha.jobset.sigs.k8s.io/exclusive-topology: <node label key>` (on the JobSet or on a
ReplicatedJob's template). Instead of pod affinities and leader-first admission, the
reconciler asks a `DomainPlanner` for a domain as it builds each child Job; the planner
writes it as `nodeSelector[<key>] = <domain>` into the Job's pod template and records it on
the Job (label and annotation `placement.jobset.x-k8s.io/domain`, annotation
`placement.jobset.x-k8s.io/priority`). All pods then schedule like plain nodeSelector pods.

Choosing a domain. Domains are the values of the topology label over the cached Nodes. A
domain is a candidate for a Job when its eligible nodes (Ready, schedulable, taints
tolerated, the template's own nodeSelector and required node affinity met) can hold the
Job's parallel pods by allocatable resources, and no other live Job of the same priority
holds it. Among candidates the planner prefers the domain the same Job held before (a
restarted Job returns to its nodes, e.g. a warm local cache), then the tightest fit
(fewest spare pod slots, so large domains stay free for large Jobs), then the name.

Who holds what. A Job holds its domain from the moment `assign` answers until the Job is
finished (Complete/Failed) or gone. Holdings are derived from the Job and JobSet caches -
so a restarted controller re-derives them from the Jobs themselves - plus in-memory
reservations covering the gap between `assign` and the cache seeing the created Job. Only
Jobs this controller made for a JobSet count (`holdings.py`): a domain label that anyone
with rights on Jobs can write proves nothing by itself. A suspended Job keeps its domain
(its nodeSelector is fixed), so a JobSet queued suspended holds its domains while it waits.

Races. `assign` never awaits: in one asyncio process two reconciles cannot interleave
inside it, and the reservation it makes is visible to the next call at once, whatever the
cache lags. Across processes only the leader (leader election) runs the reconciler, so
there is one writer; for the seconds a deposed leader might still be creating Jobs,
`loses_domain()` finds two live Jobs of one JobSet in one domain and the
`PlannedPlacementController` deletes all but the first created, which the reconciler then
recreates with a fresh plan. Jobs of different JobSets sharing a domain are left alone:
which one to delete would rest on what their namespaces' writers chose.

No domain free: `assign` returns None, the reconciler does not create the Job, and the
planner calls `wake(namespace, jobset)` once a domain may have freed up (a Job finished or
went away, a Node changed), so the JobSet is reconciled again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final

import orjson

from jobset.api import constants as c
from jobset.placement.holdings import DomainHoldings, held_domain_key, holding_of
from jobset.placement.nodes import node_is_eligible, pod_requests, pods_that_fit
from jobset.placement.strategy import (
    DOMAIN_KEY,
    PLANNED,
    PRIORITY_ANNOTATION,
    STRATEGY_KEY,
    annotations_of,
    strategy_of,
    topology_key_of,
)
from jobset.resources import JOBSET_OWNER_INDEX, index_jobset_owner, jobset_owner_key
from jobset.runtime.cache import Object, object_key
from jobset.runtime.informer import FuncHandler, Informer

__all__ = [
    "Assignment",
    "DomainPlanner",
    "apply_assignment",
    "held_domain_key",
    "job_priority",
    "wants_planned_placement",
]

DEFAULT_RESERVATION_TTL: Final = 300.0
# Jobs whose last domain is remembered for stickiness (oldest forgotten first).
MAX_REMEMBERED: Final = 100_000

Wake = Callable[[str, str], None]


@dataclass(frozen=True)
class Assignment:
    """A domain of `topology_key` given to one Job, at `priority`."""

    topology_key: str
    domain: str
    priority: str


def job_priority(pod_spec: Mapping[str, Any], priority_classes: Informer | None = None) -> str:
    """The priority the Job's pods will get, as the label value the affinity strategy uses:
    `spec.priority`, else the value of its PriorityClass when cached, else the class name
    itself (Jobs of one class are then exclusive among themselves), else "0"."""
    value = pod_spec.get("priority")
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    name = pod_spec.get("priorityClassName")
    if isinstance(name, str) and name:
        pc = priority_classes.store.get(name) if priority_classes is not None else None
        if pc is not None and isinstance(pc.get("value"), int):
            return str(pc["value"])
        return name
    return "0"


def wants_planned_placement(js: Mapping[str, Any] | None, job: Mapping[str, Any]) -> bool:
    """The Job (built for the JobSet `js`) uses the planned strategy: it has exclusive
    placement without upstream's node-selector flag, and `planned` is asked for on its
    template or on the JobSet."""
    if strategy_of(job) is None or strategy_of(job) == "node-selector":
        return False
    return PLANNED in (annotations_of(job).get(STRATEGY_KEY), annotations_of(js).get(STRATEGY_KEY))


def apply_assignment(job: dict[str, Any], assignment: Assignment) -> None:
    """Write the assignment into a Job about to be created (in place)."""
    meta = job.setdefault("metadata", {})
    meta["labels"] = {**(meta.get("labels") or {}), DOMAIN_KEY: assignment.domain}
    meta["annotations"] = {
        **(meta.get("annotations") or {}),
        DOMAIN_KEY: assignment.domain,
        PRIORITY_ANNOTATION: assignment.priority,
        STRATEGY_KEY: PLANNED,
    }
    template = job.setdefault("spec", {}).setdefault("template", {})
    tmeta = template.setdefault("metadata", {})
    # The pod webhook reads the strategy from the pod: planned pods get no affinities.
    tmeta["annotations"] = {**(tmeta.get("annotations") or {}), STRATEGY_KEY: PLANNED}
    if assignment.priority.lstrip("-").isdigit():
        # The label the pod webhook would add (affinity-strategy leaders of this priority
        # keep out of domains with such pods); set here, the webhook has nothing to patch.
        tmeta["labels"] = {**(tmeta.get("labels") or {}), c.PRIORITY_KEY: assignment.priority}
    pod_spec = template.setdefault("spec", {})
    pod_spec["nodeSelector"] = {
        **(pod_spec.get("nodeSelector") or {}),
        assignment.topology_key: assignment.domain,
    }


@dataclass
class _Reservation:
    assignment: Assignment
    jobset: tuple[str, str]
    expires: float


@dataclass(frozen=True)
class _Demand:
    """What a Job needs from a domain, and the cache key of the answer."""

    topology_key: str
    pods: int
    signature: bytes
    pod_spec: Mapping[str, Any]
    requests: Mapping[str, Fraction]


class DomainPlanner:
    """Assigns exclusive topology domains to planned Jobs; see the module docstring.

    `nodes`, `jobs` and `jobsets` are the manager's shared informers (the Job informer may
    slim Jobs: only metadata and status are read; JobSets are read for their names and
    UIDs). `wake(namespace, jobset_name)` is called for JobSets that found no free domain
    once one may have freed up.
    """

    def __init__(
        self,
        nodes: Informer,
        jobs: Informer,
        jobsets: Informer,
        *,
        wake: Wake | None = None,
        priority_classes: Informer | None = None,
        reservation_ttl: float = DEFAULT_RESERVATION_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.nodes = nodes
        self.jobs = jobs
        self.jobsets = jobsets
        self.wake = wake
        self.priority_classes = priority_classes
        self.reservation_ttl = reservation_ttl
        self.clock = clock
        if not jobs.store.has_indexer(JOBSET_OWNER_INDEX):
            jobs.add_indexers({JOBSET_OWNER_INDEX: index_jobset_owner})
        self.holdings = DomainHoldings()
        # namespace/uid -> name of every JobSet the cache showed (oldest forgotten first):
        # a deleted JobSet's Jobs keep their domains until they are gone.
        self._known_owners: dict[str, str] = {}
        self._reservations: dict[str, _Reservation] = {}  # job key -> reservation
        self._reserved: dict[str, str] = {}  # held_domain_key -> job key
        self._last_domain: dict[str, str] = {}  # job key -> domain it last held
        self._waiting: set[tuple[str, str]] = set()
        self._node_version = 0
        self._fits: dict[tuple[str, bytes], tuple[int, dict[str, int]]] = {}
        nodes.add_event_handler(
            FuncHandler(
                add=lambda _: self._nodes_changed(),
                update=self._node_updated,
                delete=lambda _: self._nodes_changed(),
            )
        )
        jobsets.add_event_handler(FuncHandler(add=self._jobset_seen))
        jobs.add_event_handler(
            FuncHandler(
                add=self._job_seen,
                update=lambda _, new: self._job_seen(new),
                delete=lambda job: self._job_seen(job, gone=True),
            )
        )
        for js in jobsets.store.list():
            self._jobset_seen(js)
        for job in jobs.store.list():
            self._job_seen(job)
        self.assignments = 0  # for tests and benchmarks

    # ------------------------------------------------------------------ public API

    def place(self, js: Mapping[str, Any] | None, job: dict[str, Any]) -> bool:
        """For the reconciler, on a Job it is about to create: plan it if it uses the planned
        strategy and write the domain into it. False: no domain is free, do not create the
        Job now (the JobSet is woken later). True: create it (planned or not planned)."""
        if not wants_planned_placement(js, job):
            return True
        assignment = self.assign(job)
        if assignment is None:
            return False
        apply_assignment(job, assignment)
        return True

    def assign(self, job: Mapping[str, Any]) -> Assignment | None:
        """The domain for this Job (idempotent per Job name until released), or None."""
        meta = job.get("metadata") or {}
        key = f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"
        now = self.clock()
        self._expire(now)
        existing = self._reservations.get(key)
        if existing is not None:
            existing.expires = now + self.reservation_ttl
            return existing.assignment
        topology_key = topology_key_of(job)
        if topology_key is None:
            raise ValueError(f"job {key} has no {c.EXCLUSIVE_KEY} annotation")
        pod_spec = ((job.get("spec") or {}).get("template") or {}).get("spec") or {}
        priority = job_priority(pod_spec, self.priority_classes)
        demand = self._demand(topology_key, job, pod_spec)
        fits = self._domain_fits(demand)
        candidates = [
            (d, room)
            for d, room in fits.items()
            if room >= demand.pods and not self._held(topology_key, priority, d)
        ]
        jobset = self._jobset_of(job)
        if not candidates:
            self._waiting.add(jobset)
            return None
        previous = self._last_domain.get(key)
        domain, _ = min(candidates, key=lambda dr: (dr[0] != previous, dr[1], dr[0]))
        assignment = Assignment(topology_key, domain, priority)
        self._reservations[key] = _Reservation(assignment, jobset, now + self.reservation_ttl)
        self._reserved[held_domain_key(topology_key, priority, domain)] = key
        self._waiting.discard(jobset)
        self.assignments += 1
        return assignment

    def release(self, namespace: str, job_name: str) -> None:
        """Forget the reservation of a Job whose creation failed (not for AlreadyExists)."""
        self._drop(f"{namespace}/{job_name}")
        self._wake_waiters()

    def holder(self, topology_key: str, priority: str, domain: str) -> list[str]:
        """Keys of the Jobs holding (or reserved) this domain."""
        value = held_domain_key(topology_key, priority, domain)
        found = self.holdings.holders(value)
        reserved = self._reserved.get(value)
        if reserved is not None:
            found.add(reserved)
        return sorted(found)

    def loses_domain(self, key: str) -> bool:
        """The Job shares its domain with an earlier-created Job of the same JobSet (it is
        the one to delete). Costs the size of that JobSet's group in the domain, nothing
        per other Job in the cluster."""
        group = self.holdings.same_owner(key)
        if len(group) < 2:
            return False
        return self._earliest(group) != key

    def conflicts(self) -> list[str]:
        """Keys of every Job `loses_domain` would name (a scan of all holdings: for
        diagnostics and tests, not per event)."""
        losers: list[str] = []
        for group in self.holdings.doubled():
            first = self._earliest(group)
            losers.extend(sorted(k for k in group if k != first))
        return sorted(losers)

    def waiting(self) -> set[tuple[str, str]]:
        """JobSets (namespace, name) that found no free domain since the last wake-up."""
        return set(self._waiting)

    # ------------------------------------------------------------------ internals

    def _jobset_of(self, job: Mapping[str, Any]) -> tuple[str, str]:
        meta = job.get("metadata") or {}
        labels = meta.get("labels") or {}
        return (str(meta.get("namespace") or ""), str(labels.get(c.JOBSET_NAME_KEY) or ""))

    def _held(self, topology_key: str, priority: str, domain: str) -> bool:
        value = held_domain_key(topology_key, priority, domain)
        return value in self._reserved or self.holdings.held(value)

    def _earliest(self, keys: set[str]) -> str:
        def created(key: str) -> tuple[str, str]:
            job = self.jobs.store.get(key)
            meta = (job or {}).get("metadata") or {}
            return (str(meta.get("creationTimestamp") or ""), key)

        return min(keys, key=created)

    def _owner_known(self, namespace: str, name: str, uid: str) -> bool:
        return self._known_owners.get(jobset_owner_key(namespace, uid)) == name

    def _demand(
        self, topology_key: str, job: Mapping[str, Any], pod_spec: Mapping[str, Any]
    ) -> _Demand:
        spec = job.get("spec") or {}
        parallelism = spec.get("parallelism")
        completions = spec.get("completions")
        pods = 1 if not isinstance(parallelism, int) else parallelism
        if isinstance(completions, int):
            pods = min(pods, completions)
        filters = {
            k: pod_spec.get(k) for k in ("nodeSelector", "affinity", "tolerations") if k in pod_spec
        }
        requests = pod_requests(pod_spec)
        signature = orjson.dumps(
            [filters, sorted((k, str(v)) for k, v in requests.items())],
            option=orjson.OPT_SORT_KEYS,
            default=str,
        )
        return _Demand(topology_key, max(pods, 0), signature, pod_spec, requests)

    def _domain_fits(self, demand: _Demand) -> dict[str, int]:
        """Pod slots per domain for one template shape, cached until a Node changes."""
        cache_key = (demand.topology_key, demand.signature)
        cached = self._fits.get(cache_key)
        if cached is not None and cached[0] == self._node_version:
            return cached[1]
        fits: dict[str, int] = {}
        for node in self.nodes.store.list():
            domain = (node["metadata"].get("labels") or {}).get(demand.topology_key)
            if domain is None:
                continue
            room = (
                pods_that_fit(node, demand.requests)
                if node_is_eligible(node, demand.pod_spec)
                else 0
            )
            fits[str(domain)] = fits.get(str(domain), 0) + room
        self._fits[cache_key] = (self._node_version, fits)
        return fits

    def _expire(self, now: float) -> None:
        for key in [k for k, r in self._reservations.items() if r.expires <= now]:
            self._drop(key)

    def _drop(self, key: str) -> None:
        res = self._reservations.pop(key, None)
        if res is None:
            return
        a = res.assignment
        value = held_domain_key(a.topology_key, a.priority, a.domain)
        if self._reserved.get(value) == key:
            del self._reserved[value]

    def _wake_waiters(self) -> None:
        if not self._waiting:
            return
        waiting, self._waiting = self._waiting, set()
        if self.wake is not None:
            for ns, name in sorted(waiting):
                self.wake(ns, name)

    # ------------------------------------------------------------------ cache events

    def _nodes_changed(self) -> None:
        self._node_version += 1
        if len(self._fits) > 256:
            self._fits.clear()
        self._wake_waiters()

    def _node_updated(self, old: Object, new: Object) -> None:
        # Heartbeats change status timestamps only; what matters is labels, taints,
        # schedulability, readiness and allocatable.
        def shape(n: Object) -> Any:
            status = n.get("status") or {}
            ready = [
                x.get("status") for x in status.get("conditions") or [] if x.get("type") == "Ready"
            ]
            return (
                (n.get("metadata") or {}).get("labels"),
                n.get("spec"),
                status.get("allocatable"),
                ready,
            )

        if old is new or shape(old) != shape(new):
            self._nodes_changed()

    def _jobset_seen(self, js: Object) -> None:
        meta = js.get("metadata") or {}
        uid, name = str(meta.get("uid") or ""), str(meta.get("name") or "")
        if not uid or not name:
            return
        owner = jobset_owner_key(str(meta.get("namespace") or ""), uid)
        if self._known_owners.get(owner) == name:
            return
        self._known_owners[owner] = name
        if len(self._known_owners) > MAX_REMEMBERED:
            del self._known_owners[next(iter(self._known_owners))]
        # Its Jobs may have been cached first (the two watches are not ordered).
        for job in self.jobs.store.by_index(JOBSET_OWNER_INDEX, owner):
            self._job_seen(job)

    def _job_seen(self, job: Object, gone: bool = False) -> None:
        meta = job.get("metadata") or {}
        key = object_key(job)
        holding = None if gone else holding_of(job, self._owner_known)
        if self.holdings.record(key, holding):
            self._wake_waiters()
        if holding is None:
            return
        domain = str((meta.get("labels") or {}).get(DOMAIN_KEY))
        self._last_domain.pop(key, None)
        self._last_domain[key] = domain
        if len(self._last_domain) > MAX_REMEMBERED:
            del self._last_domain[next(iter(self._last_domain))]
        res = self._reservations.get(key)
        if (
            res is not None
            and res.assignment.domain == domain
            and not meta.get("deletionTimestamp")
        ):
            # The cache now shows the holding; the reservation has done its job.
            self._drop(key)
