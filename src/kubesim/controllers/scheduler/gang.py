"""Workload-aware scheduling in the simulated scheduler: what kube-scheduler's GangScheduling,
TopologyAwareWorkloadScheduling and WorkloadAwarePreemption do for pods whose
`spec.schedulingGroup.podGroupName` names a `scheduling.k8s.io/v1alpha2` PodGroup.

The loop (`loop.py`) hands every pending pod of a group here; the group is decided as a whole:

- PreEnqueue: no PodGroup yet -> the pods wait, "waiting for pods's pod group "NAME" to appear
  in scheduling queue"; fewer than `minCount` members exist -> "waiting for minCount pods from
  a gang to appear in scheduling queue" (kube-scheduler's words, on PodScheduled=False and in
  FailedScheduling events). A `basic` group's pods are scheduled one by one as usual.
- Pod-group cycle: the pending members are tried one after another against the snapshot, each
  placement assumed so the next sees it. When the bound and newly placed members reach
  `minCount` the placements are kept (members that fit nowhere keep waiting); otherwise every
  assumption is undone and no pod is bound. The PodGroup gets `PodGroupScheduled` True, or
  False with reason Unschedulable and the first member's "0/N nodes are available" message.
- `schedulingConstraints.topology[0].key`: the cycle runs once per domain (value of that node
  label), members limited to the domain's nodes, in sorted domain order; the first domain that
  holds the gang wins. Once members are bound, their domain is the only one tried.
- Preemption (WorkloadAwarePreemption): a gang that does not fit looks for victims of lower
  priority (the PodGroup's resolved `priority`; a pod without a group its own). A group whose
  `disruptionMode` is PodGroup is one victim unit, all its bound pods at once; other pods are
  single units. Units are taken lowest priority first until the gang fits, then those not
  needed are given back; if even every lower unit would not make room, nobody is evicted.
  Victims get `DisruptionTarget` (reason PreemptionByScheduler) and a `Preempted` event, then
  are deleted; the gang is retried when they are gone.

Waiting groups are retried when the cluster changes, like any unschedulable pod (plus when a
PodGroup appears or changes). Every pod tried in a cycle is costed as a kube-scheduler
scheduling cycle (`cost.py`); the group cycles, domain trials and preemption trials are
counted on their own (`report()`, served in /debug/scheduler under "gang").

Simplifications: no nominated nodes (the freed room is not reserved, higher-priority groups
are merely tried first), no scoring among topology domains, and the gang's pods are not
required to be placeable at the same time on a node already assumed by another group's
unfinished cycle (cycles run one at a time).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from kubesim.apiserver.registry.features import FeatureGates
from kubesim.clock import now_rfc3339
from kubesim.controllers.scheduler.cost import ZERO, SchedulingCost, kube_scheduler_evaluations
from kubesim.controllers.scheduler.scheduling import FilterScan, needs_scheduling, schedule
from kubesim.controllers.scheduler.snapshot import ClusterSnapshot

__all__ = [
    "PODGROUPS_KEY",
    "GangPlanner",
    "GangVerdict",
    "GroupKey",
    "pod_group_name",
    "pod_key",
    "write_verdict",
]

PODGROUPS_KEY: Final = ("scheduling.k8s.io", "podgroups")
_PODS: Final = ("", "pods")
_TERMINAL: Final = frozenset({"Succeeded", "Failed"})
MSG_NO_QUORUM: Final = "waiting for minCount pods from a gang to appear in scheduling queue"

GroupKey = tuple[str, str]  # namespace, PodGroup name
PodKey = tuple[str, str]


def pod_group_name(pod: Mapping[str, Any]) -> str | None:
    group = (pod.get("spec") or {}).get("schedulingGroup") or {}
    name = group.get("podGroupName")
    return name if isinstance(name, str) and name else None


def pod_key(pod: Mapping[str, Any]) -> PodKey:
    meta = pod.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(meta.get("name")))


def _live(pod: Mapping[str, Any]) -> bool:
    return not (pod.get("metadata") or {}).get("deletionTimestamp") and (
        (pod.get("status") or {}).get("phase") not in _TERMINAL
    )


@dataclass
class GangVerdict:
    """What one pod-group cycle decided; the loop writes it."""

    group: GroupKey
    bindings: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    rejected: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    individual: list[PodKey] = field(default_factory=list)  # schedule one by one
    victims: list[dict[str, Any]] = field(default_factory=list)
    victim_groups: list[GroupKey] = field(default_factory=list)
    condition: tuple[str, str, str] | None = None  # PodGroupScheduled status, reason, message
    cost: SchedulingCost = ZERO
    tried: int = 0  # pods a pod-group cycle ran for (PreEnqueue rejections run none)


@dataclass
class _Trial:
    placed: list[tuple[dict[str, Any], str]]
    failed: list[tuple[dict[str, Any], str]]
    cost: SchedulingCost


class GangPlanner:
    """Pod-group cycles over the scheduler's snapshot; pure decisions, no writes."""

    def __init__(self, store: Any, gates: FeatureGates) -> None:
        self.store = store
        self.enabled = gates.generic and gates.gang
        self.topology = gates.topology
        self.preemption = gates.preemption
        self._members: dict[GroupKey, dict[PodKey, None]] = {}
        self.group_cycles = 0
        self.domain_trials = 0
        self.preemption_trials = 0
        self.evicted = 0

    def report(self) -> dict[str, int]:
        return {
            "groupCycles": self.group_cycles,
            "domainTrials": self.domain_trials,
            "preemptionTrials": self.preemption_trials,
            "evictedPods": self.evicted,
        }

    # ------------------------------------------------------------------ membership

    def group_of(self, pod: Mapping[str, Any]) -> GroupKey | None:
        if not self.enabled:
            return None
        name = pod_group_name(pod)
        return None if name is None else (pod_key(pod)[0], name)

    def observe(self, pod: Mapping[str, Any], deleted: bool) -> None:
        """Keep the group -> member pods index current (pod events)."""
        group = self.group_of(pod)
        if group is None:
            return
        members = self._members.setdefault(group, {})
        if deleted:
            members.pop(pod_key(pod), None)
            if not members:
                del self._members[group]
        else:
            members[pod_key(pod)] = None

    def members(self, group: GroupKey) -> list[dict[str, Any]]:
        pods = (self.store.get(_PODS, k) for k in self._members.get(group, {}))
        return [p for p in pods if p is not None and _live(p)]

    def podgroup(self, group: GroupKey) -> dict[str, Any] | None:
        pg: dict[str, Any] | None = self.store.get(PODGROUPS_KEY, group)
        return pg

    # ------------------------------------------------------------------ priorities

    @staticmethod
    def pod_priority(pod: Mapping[str, Any]) -> int:
        """`spec.priority`, as kube-scheduler reads it: the Priority admission plugin set it
        from the pod's class when the pod was created, and refused any other value."""
        return int((pod.get("spec") or {}).get("priority") or 0)

    def group_priority(self, group: GroupKey, members: list[dict[str, Any]]) -> int:
        pg = self.podgroup(group)
        spec = (pg or {}).get("spec") or {}
        if self.preemption and spec.get("priority") is not None:
            return int(spec["priority"])
        return max((self.pod_priority(p) for p in members), default=0)

    # ------------------------------------------------------------------ the cycle

    def decide(self, group: GroupKey, snap: ClusterSnapshot, rng: random.Random) -> GangVerdict:
        verdict = GangVerdict(group)
        members = self.members(group)
        pending = [p for p in members if needs_scheduling(p) and not _gated(p)]
        if not pending:
            return verdict
        pg = self.podgroup(group)
        if pg is None:
            msg = f'waiting for pods\'s pod group "{group[1]}" to appear in scheduling queue'
            verdict.rejected = [(p, msg) for p in pending]
            return verdict
        spec = pg.get("spec") or {}
        gang = (spec.get("schedulingPolicy") or {}).get("gang")
        bound = [p for p in members if (p.get("spec") or {}).get("nodeName")]
        need = int(gang.get("minCount") or 1) - len(bound) if gang else 0
        if gang is None or need <= 0:
            verdict.individual = [pod_key(p) for p in pending]
            return verdict
        if len([p for p in members if not _gated(p)]) < int(gang["minCount"]):
            verdict.rejected = [(p, MSG_NO_QUORUM) for p in pending]
            verdict.condition = ("False", "Unschedulable", MSG_NO_QUORUM)
            return verdict
        self.group_cycles += 1
        verdict.tried = len(pending)
        key = self._topology_key(spec)
        trial, cost = self._place(pending, bound, need, key, snap, rng)
        verdict.cost = cost
        if trial is not None:
            verdict.bindings = trial.placed
            verdict.rejected = trial.failed
            verdict.condition = ("True", "Scheduled", "")
            return verdict
        message = self._failure_message(pending, snap, rng, key, bound)
        verdict.rejected = [(p, message) for p in pending]
        verdict.condition = ("False", "Unschedulable", message)
        if self.preemption and spec.get("disruptionMode") is not None:
            self._preempt(verdict, pending, bound, need, key, snap, rng)
        return verdict

    def _topology_key(self, spec: Mapping[str, Any]) -> str | None:
        if not self.topology:
            return None
        topology = (spec.get("schedulingConstraints") or {}).get("topology") or []
        key = (topology[0] or {}).get("key") if topology else None
        return key if isinstance(key, str) and key else None

    def _domains(
        self, key: str | None, snap: ClusterSnapshot, bound: list[dict[str, Any]]
    ) -> Sequence[str | None]:
        if key is None:
            return [None]
        used = {
            snap.nodes[n].labels.get(key)
            for p in bound
            if (n := (p.get("spec") or {}).get("nodeName")) in snap.nodes
        }
        if used:
            return sorted(d for d in used if d is not None)[:1]
        values = {info.labels.get(key) for info in snap.nodes.values()}
        return sorted(v for v in values if v is not None)

    def _place(
        self,
        pending: list[dict[str, Any]],
        bound: list[dict[str, Any]],
        need: int,
        key: str | None,
        snap: ClusterSnapshot,
        rng: random.Random,
    ) -> tuple[_Trial | None, SchedulingCost]:
        """Try each domain; keep the first trial that places `need` pods (assumed in `snap`)."""
        total = ZERO
        for domain in self._domains(key, snap, bound):
            self.domain_trials += 1
            trial = _trial(pending, snap, rng, key, domain)
            total += trial.cost
            if len(trial.placed) >= need:
                return trial, total
            _undo(snap, trial.placed)
        return None, total

    def _failure_message(
        self,
        pending: list[dict[str, Any]],
        snap: ClusterSnapshot,
        rng: random.Random,
        key: str | None,
        bound: list[dict[str, Any]],
    ) -> str:
        """The first member's diagnosis (kube-scheduler reports a member's FitError); with a
        topology key, from the first domain, or that no node carries the key."""
        domains = self._domains(key, snap, bound)
        if not domains:
            return f"0/{len(snap.nodes)} nodes are available: no node has the label {key}."
        trial = _trial(pending, snap, rng, key, domains[0])
        _undo(snap, trial.placed)
        if trial.failed:
            return trial.failed[0][1]
        return f"0/{len(snap.nodes)} nodes are available: the pod group does not fit as a whole."

    # ------------------------------------------------------------------ preemption

    def _units(
        self, ceiling: int, snap: ClusterSnapshot, own: GroupKey
    ) -> list[tuple[int, GroupKey | None, list[dict[str, Any]]]]:
        """Victim units below `ceiling`, lowest priority first: whole groups in PodGroup
        disruption mode, single pods otherwise."""
        groups: dict[GroupKey, list[dict[str, Any]]] = {}
        units: list[tuple[int, GroupKey | None, list[dict[str, Any]]]] = []
        for pod in [p for info in snap.nodes.values() for p in info.pods]:
            group = self.group_of(pod)
            if group == own or not _live(pod):
                continue
            pg = self.podgroup(group) if group is not None else None
            if group is not None and ((pg or {}).get("spec") or {}).get("disruptionMode") == (
                "PodGroup"
            ):
                groups.setdefault(group, []).append(pod)
                continue
            prio = self.pod_priority(pod)
            if group is not None:
                prio = self.group_priority(group, [pod])
            if prio < ceiling:
                units.append((prio, None, [pod]))
        for group, pods in groups.items():
            prio = self.group_priority(group, pods)
            if prio < ceiling:
                units.append((prio, group, pods))
        units.sort(key=lambda u: (u[0], -len(u[2])))
        return units

    def _preempt(
        self,
        verdict: GangVerdict,
        pending: list[dict[str, Any]],
        bound: list[dict[str, Any]],
        need: int,
        key: str | None,
        snap: ClusterSnapshot,
        rng: random.Random,
    ) -> None:
        """Find the fewest lower-priority units whose removal lets the gang fit; nothing
        is evicted when even all of them would not make room."""
        ceiling = self.group_priority(verdict.group, pending + bound)
        units = self._units(ceiling, snap, verdict.group)
        removed: list[tuple[int, GroupKey | None, list[dict[str, Any]]]] = []
        fits = False
        for unit in units:
            _remove(snap, unit[2])
            removed.append(unit)
            if self._fits(pending, bound, need, key, snap, rng, verdict):
                fits = True
                break
        if fits:
            for unit in reversed(removed[:-1]):  # give back what is not needed
                _restore(snap, unit[2])
                if not self._fits(pending, bound, need, key, snap, rng, verdict):
                    _remove(snap, unit[2])
                else:
                    removed.remove(unit)
        for unit in removed:
            _restore(snap, unit[2])
        if not fits:
            return
        for _prio, group, pods in removed:
            verdict.victims += pods
            if group is not None:
                verdict.victim_groups.append(group)
        self.evicted += len(verdict.victims)

    def _fits(
        self,
        pending: list[dict[str, Any]],
        bound: list[dict[str, Any]],
        need: int,
        key: str | None,
        snap: ClusterSnapshot,
        rng: random.Random,
        verdict: GangVerdict,
    ) -> bool:
        self.preemption_trials += 1
        trial, cost = self._place(pending, bound, need, key, snap, rng)
        verdict.cost += cost
        if trial is None:
            return False
        _undo(snap, trial.placed)
        return True


def _gated(pod: Mapping[str, Any]) -> bool:
    return bool((pod.get("spec") or {}).get("schedulingGates"))


def _in_domain(pod: dict[str, Any], key: str | None, domain: str | None) -> dict[str, Any]:
    """The pod as the filters should see it within one topology domain."""
    if key is None or domain is None:
        return pod
    spec = dict(pod.get("spec") or {})
    spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), key: domain}
    return {**pod, "spec": spec}


def _trial(
    pending: list[dict[str, Any]],
    snap: ClusterSnapshot,
    rng: random.Random,
    key: str | None,
    domain: str | None,
) -> _Trial:
    """Place members one by one, each assumed so the next sees it; nothing is undone here."""
    out = _Trial([], [], ZERO)
    for pod in pending:
        seen = _in_domain(pod, key, domain)
        scan = FilterScan()
        node, message = schedule(seen, snap, rng, scan=scan)
        out.cost += kube_scheduler_evaluations(seen, snap, scan)
        if node is None:
            out.failed.append((pod, message))
            continue
        snap.assume(pod, node)
        out.placed.append((pod, node))
    return out


def _undo(snap: ClusterSnapshot, placed: list[tuple[dict[str, Any], str]]) -> None:
    for pod, _node in placed:
        snap.add_pod(pod)  # the unbound pod: forgets the assumption


def _remove(snap: ClusterSnapshot, pods: list[dict[str, Any]]) -> None:
    for pod in pods:
        snap.remove_pod(pod)


def _restore(snap: ClusterSnapshot, pods: list[dict[str, Any]]) -> None:
    for pod in pods:
        snap.add_pod(pod)


def condition_update(
    old: Mapping[str, Any] | None, ctype: str, status: str, reason: str, message: str
) -> list[dict[str, Any]] | None:
    """The PodGroup's new conditions with one set, or None when it already reads so."""
    conds = list(((old or {}).get("status") or {}).get("conditions") or [])
    prev = next((c for c in conds if c.get("type") == ctype), None)
    if prev is not None and (prev.get("status"), prev.get("reason"), prev.get("message")) == (
        status,
        reason,
        message,
    ):
        return None
    cond = {
        "type": ctype,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": (
            prev["lastTransitionTime"]
            if prev is not None and prev.get("status") == status
            else now_rfc3339()
        ),
    }
    return [cond if c is prev else c for c in conds] if prev is not None else [*conds, cond]


# ---------------------------------------------------------------------- writes


async def write_verdict(core: Any, recorder: Any, verdict: GangVerdict, req: Any) -> None:
    """The PodGroup conditions and the evictions a cycle decided (pod bindings and pod
    conditions are the loop's)."""
    if verdict.condition is not None:
        status, reason, message = verdict.condition
        await _set_condition(core, verdict.group, "PodGroupScheduled", status, reason, message, req)
    preemptor = f"{verdict.group[0]}/{verdict.group[1]}"
    for group in verdict.victim_groups:
        await _set_condition(
            core,
            group,
            "DisruptionTarget",
            "True",
            "PreemptionByScheduler",
            f"Preempted by pod group {preemptor}",
            req,
        )
    for pod in verdict.victims:
        await _evict(core, recorder, pod, preemptor, req)


async def _set_condition(
    core: Any, group: GroupKey, ctype: str, status: str, reason: str, message: str, req: Any
) -> None:
    from kubesim.machinery.errors import ApiError

    rt = core.registry.get("scheduling.k8s.io", "v1alpha2", "podgroups")
    for _attempt in range(5):
        pg = core.store.get(PODGROUPS_KEY, group)
        conds = condition_update(pg, ctype, status, reason, message)
        if pg is None or rt is None or conds is None:
            return
        body = {**pg, "status": {**(pg.get("status") or {}), "conditions": conds}}
        try:
            await core.update(rt, group[0], group[1], body, req, subresource="status")
            return
        except ApiError as err:
            if err.code != 409:
                return


async def _evict(core: Any, recorder: Any, pod: dict[str, Any], preemptor: str, req: Any) -> None:
    """As kube-scheduler's preemption: DisruptionTarget on the victim, an event, a delete."""
    from kubesim.machinery.errors import ApiError

    rt = core.registry.get("", "v1", "pods")
    ns, name = pod_key(pod)
    current = core.store.get(_PODS, (ns, name))
    if current is None or current["metadata"].get("uid") != pod["metadata"].get("uid"):
        return
    message = f"Preempted by pod group {preemptor}"
    status = current.get("status") or {}
    conds = [c for c in status.get("conditions") or [] if c.get("type") != "DisruptionTarget"]
    conds.append(
        {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "PreemptionByScheduler",
            "message": f"{message}: preempting to accommodate a higher priority pod group",
            "lastProbeTime": None,
            "lastTransitionTime": now_rfc3339(),
        }
    )
    try:
        await core.update(
            rt, ns, name, {**current, "status": {**status, "conditions": conds}}, req, "status"
        )
    except ApiError:
        pass
    recorder.event(current, "Normal", "Preempted", message, action="Preempting")
    try:
        await core.delete(rt, ns, name, None, req)
    except ApiError:
        pass
