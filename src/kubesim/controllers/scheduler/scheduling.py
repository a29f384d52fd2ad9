"""The simulated kube-scheduler's decision: which node, if any, a pod may be bound to.

`schedule(pod, snapshot)` runs the filters of kube-scheduler's default profile in its order
(NodeUnschedulable, TaintToleration, NodeAffinity, NodeResourcesFit, VolumeBinding (its
PreFilter before any node, `volumebinding.py`), InterPodAffinity) over the
nodes of a `ClusterSnapshot`, and words the "0/N nodes are available: ..." message as
kube-scheduler does, because users and tests read it from `PodScheduled=False` exactly as on a
real cluster.

The message ends as kube-scheduler's with its DefaultPreemption plugin: `preemption: 0/N nodes
are available: ...`, each node counted as "Preemption is not helpful for scheduling" when it
failed a filter preemption cannot fix (node affinity, taints, cordon, required pod affinity)
and "No preemption victims found for incoming pod" otherwise, or `preemption: not eligible
due to preemptionPolicy=Never.`.

Deliberate simplifications (documented so nobody mistakes them for kube-scheduler behaviour):
no pod preemption (a pod is never evicted for a higher-priority pod, so every node that
preemption could help is worded as having no victims; only gangs preempt, see `gang.py`),
no preferred affinity / topology spread / image locality scoring, no host ports, and
`namespaceSelector` only sees the `kubernetes.io/metadata.name` label every namespace carries.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubesim.base.resources import (
    NONZERO_CPU_MILLI,
    NONZERO_MEMORY,
    pod_requests,
)
from kubesim.controllers.scheduler.affinity import (
    DomainCount,
    node_term_matches,
    required_terms,
    str_map,
)
from kubesim.controllers.scheduler.snapshot import UNSCHEDULABLE_TAINT, ClusterSnapshot, NodeInfo
from kubesim.controllers.scheduler.volumebinding import (
    MSG_BIND_CONFLICT,
    MSG_NODE_CONFLICT,
    PodVolumes,
)

__all__ = [
    "MAX_NODES_TO_SCORE",
    "NO_NODES_MESSAGE",
    "SCHEDULING_GATED_MESSAGE",
    "FilterScan",
    "needs_scheduling",
    "num_feasible_nodes_to_find",
    "schedule",
]


# kube-scheduler's own wording, so that `kubectl describe pod` reads as on a real cluster.
SCHEDULING_GATED_MESSAGE: Final = "Scheduling is blocked due to non-empty scheduling gates"


NO_NODES_MESSAGE: Final = "no nodes available to schedule pods"


_MSG_UNSCHEDULABLE: Final = "node(s) were unschedulable"


_MSG_NODE_AFFINITY: Final = "node(s) didn't match Pod's node affinity/selector"


_MSG_POD_AFFINITY: Final = "node(s) didn't match pod affinity rules"


_MSG_POD_ANTI_AFFINITY: Final = "node(s) didn't match pod anti-affinity rules"


_MSG_EXISTING_ANTI_AFFINITY: Final = "node(s) didn't satisfy existing pods anti-affinity rules"


_MSG_TOO_MANY_PODS: Final = "Too many pods"


_MSG_TAINT: Final = "node(s) had untolerated taint"


# The filters whose failure preemption cannot fix (kube-scheduler's
# UnschedulableAndUnresolvable status), by their message.
_UNRESOLVABLE: Final = frozenset(
    {
        _MSG_UNSCHEDULABLE,
        _MSG_NODE_AFFINITY,
        _MSG_POD_AFFINITY,
        MSG_NODE_CONFLICT,
        MSG_BIND_CONFLICT,
    }
)
_MSG_NOT_HELPFUL: Final = "Preemption is not helpful for scheduling"
_MSG_NO_VICTIMS: Final = "No preemption victims found for incoming pod"
_MSG_NOT_ELIGIBLE: Final = "not eligible due to preemptionPolicy=Never."


def needs_scheduling(pod: Mapping[str, Any]) -> bool:
    """Whether the default scheduler should try to place this pod at all.

    kube-scheduler only queues pods that are unbound, not terminating or finished, and addressed
    to it by `schedulerName`; gated pods are queued but not attempted (`schedule()` reports them).
    """
    spec = pod.get("spec") or {}
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    if spec.get("nodeName") or meta.get("deletionTimestamp"):
        return False
    if status.get("phase") in ("Succeeded", "Failed"):
        return False
    return spec.get("schedulerName") in (None, "", "default-scheduler")


# ---------------------------------------------------------------------------------------------
# Scheduling one pod


#: Upper bound on feasible nodes examined per pod (kube-scheduler's floor is 100 nodes, its
#: adaptive default 10% at 5,000 nodes). Comparing 100 random candidates already spreads load,
#: and keeps 10k pods on 5k nodes to seconds instead of minutes in Python.
MAX_NODES_TO_SCORE: Final = 100


def num_feasible_nodes_to_find(num_all_nodes: int) -> int:
    """kube-scheduler's adaptive `percentageOfNodesToScore`: in a large cluster it stops
    filtering once this many feasible nodes are found (50% minus 1% per 125 nodes, at least
    5% and at least 100 nodes). Keeps each decision cheap at thousands of nodes."""
    if num_all_nodes < 100:
        return num_all_nodes
    percentage = max(50 - num_all_nodes // 125, 5)
    return max(num_all_nodes * percentage // 100, 100)


@dataclass
class FilterScan:
    """How one `schedule()` call searched, for the kube-scheduler cost model (cost.py): the
    nodes it could choose among (all, or the subset a nodeSelector or pod affinity narrowed
    it to, which holds every feasible node), how many of them it filtered and how many passed,
    and whether an existing pod's required anti-affinity term selected the pod (upstream's
    InterPodAffinity filter runs only then or when the pod has terms of its own), and whether
    the fused fast pass decided (`fast_path`)."""

    candidates: int = 0
    examined: int = 0
    feasible: int = 0
    existing_anti_matched: bool = False
    fast_path: bool = False


# Resource check order of NodeResourcesFit, so messages list reasons as kube-scheduler does.
_RESOURCE_ORDER: Final = ("pods", "cpu", "memory", "ephemeral-storage")


class _PodContext:
    """Everything about the incoming pod that the per-node filter needs, computed once."""

    def __init__(
        self, pod: Mapping[str, Any], snap: ClusterSnapshot, volumes: PodVolumes | None = None
    ) -> None:
        self.volumes = volumes
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        self.namespace = str(meta.get("namespace") or "default")
        self.labels = str_map(meta.get("labels"))
        req = pod_requests(pod)
        req["pods"] = 1
        ordered: list[str] = [n for n in _RESOURCE_ORDER if n in req]
        ordered += sorted(n for n in req if n not in _RESOURCE_ORDER)
        self.requests = [(n, req[n]) for n in ordered]
        self.nonzero_cpu = req.get("cpu") or NONZERO_CPU_MILLI
        self.nonzero_memory = req.get("memory") or NONZERO_MEMORY
        self.scored_extended = [
            (n, amount) for n, amount in self.requests if n not in ("pods", "cpu", "memory")
        ]
        self.preemption_policy = str(spec.get("preemptionPolicy") or "PreemptLowerPriority")

        self.node_selector = list(str_map(spec.get("nodeSelector")).items())
        affinity = spec.get("affinity") or {}
        node_aff = affinity.get("nodeAffinity") or {} if isinstance(affinity, Mapping) else {}
        required = node_aff.get("requiredDuringSchedulingIgnoredDuringExecution")
        self.node_terms: list[Any] | None = None
        if isinstance(required, Mapping):
            self.node_terms = list(required.get("nodeSelectorTerms") or ())

        self.tolerations: list[tuple[str, str, str, str]] = []
        for t in spec.get("tolerations") or ():
            if isinstance(t, Mapping):
                self.tolerations.append(
                    (
                        str(t.get("key") or ""),
                        str(t.get("operator") or "Equal"),
                        str(t.get("value") or ""),
                        str(t.get("effect") or ""),
                    )
                )
        self.tolerates_unschedulable = self._tolerates(UNSCHEDULABLE_TAINT, "", "NoSchedule")

        # Required pod affinity: per term, the domains that already hold a pod matching *all*
        # terms (kube-scheduler's affinityCounts), plus its first-pod-of-a-group exception.
        self.affinity = required_terms(pod, "podAffinity") if affinity else []
        self.allowed: list[DomainCount] = []
        if len(self.affinity) == 1:
            self.allowed = [snap.term_counts(self.affinity[0])]
        elif self.affinity:
            found: list[set[str]] = [set() for _ in self.affinity]
            for rec in snap.records_matching(self.affinity):
                node_labels = snap.nodes[rec.node_name].labels
                for i, term in enumerate(self.affinity):
                    domain = node_labels.get(term.topology_key)
                    if domain is not None:
                        found[i].add(domain)
            self.allowed = [DomainCount(fixed=f) for f in found]
        self.first_of_group = not any(a.any() for a in self.allowed) and all(
            t.matches(self.namespace, self.labels) for t in self.affinity
        )
        anti_terms = required_terms(pod, "podAntiAffinity") if affinity else []
        self.anti = [(t.topology_key, snap.term_counts(t)) for t in anti_terms]
        self.anti_checks = [(k, c) for k, c in self.anti if c.fixed or c.pos]
        self.existing_anti = snap.existing_anti_affinity(self.namespace, self.labels)
        # The common pod: nothing but cpu, memory and a pod slot to check on a node without
        # taints or cordon, and nothing but cpu and memory to score (`_scan_fast`).
        self.fast = (
            not self.node_selector
            and self.node_terms is None
            and volumes is None
            and not self.affinity
            and not self.anti_checks
            and not self.existing_anti
            and all(n in ("pods", "cpu", "memory") for n in req)
        )
        self.cpu = req.get("cpu", 0)
        self.memory = req.get("memory", 0)

    def _tolerates(self, key: str, value: str, effect: str) -> bool:
        for t_key, op, t_value, t_effect in self.tolerations:
            if t_effect and t_effect != effect:
                continue
            if t_key and t_key != key:
                continue
            if op == "Exists" or (op == "Equal" and t_value == value):
                return True
        return False

    def reasons(self, info: NodeInfo) -> list[str] | None:
        """Why the pod cannot go to this node (first failing plugin, as kube-scheduler stops
        there), or None if it can."""
        if info.unschedulable and not self.tolerates_unschedulable:
            return [_MSG_UNSCHEDULABLE]
        for key, value, effect in info.hard_taints:
            if not self._tolerates(key, value, effect):
                return [f"{_MSG_TAINT} {{{key}: {value}}}"]
        labels = info.labels
        for k, v in self.node_selector:
            if labels.get(k) != v:
                return [_MSG_NODE_AFFINITY]
        if self.node_terms is not None and not any(
            node_term_matches(t, labels, info.name) for t in self.node_terms
        ):
            return [_MSG_NODE_AFFINITY]
        alloc = info.allocatable
        used = info.requested
        short: list[str] | None = None
        for name, amount in self.requests:
            if amount > alloc.get(name, 0) - used.get(name, 0):
                if short is None:
                    short = []
                short.append(_MSG_TOO_MANY_PODS if name == "pods" else f"Insufficient {name}")
        if short is not None:
            return short
        if self.volumes is not None:
            conflict = self.volumes.reason(info.node)
            if conflict is not None:
                return [conflict]
        if self.affinity:
            pods_exist = True
            for i, term in enumerate(self.affinity):
                domain = labels.get(term.topology_key)
                if domain is None:
                    return [_MSG_POD_AFFINITY]
                if not self.allowed[i].has(domain):
                    pods_exist = False
            if not pods_exist and not self.first_of_group:
                return [_MSG_POD_AFFINITY]
        for key, counts in self.anti_checks:
            domain = labels.get(key)
            if domain is not None and counts.has(domain):
                return [_MSG_POD_ANTI_AFFINITY]
        for key, counts in self.existing_anti:
            domain = labels.get(key)
            if domain is not None and counts.has(domain):
                return [_MSG_EXISTING_ANTI_AFFINITY]
        return None

    def score(self, info: NodeInfo) -> int:
        """LeastAllocated: the mean free share (0-100) of cpu, memory and any extended
        resource the pod asks for, after placing it. Integer, so near-equal nodes tie and the
        seeded random tie-break spreads pods."""
        alloc = info.allocatable
        total = 0
        count = 0
        for name, used in (
            ("cpu", info.nonzero_cpu + self.nonzero_cpu),
            ("memory", info.nonzero_memory + self.nonzero_memory),
        ):
            cap = alloc.get(name, 0)
            total += (cap - used) * 100 // cap if cap > 0 and used <= cap else 0
            count += 1
        for name, amount in self.scored_extended:
            cap = alloc.get(name, 0)
            used = info.requested.get(name, 0) + amount
            total += (cap - used) * 100 // cap if cap > 0 and used <= cap else 0
            count += 1
        return total // count

    def _scan_fast(
        self, snap: ClusterSnapshot, start: int, wanted: int
    ) -> tuple[int, int, list[str]]:
        """The filter and score loop of `schedule()` for a `fast` pod, fused: from node
        `start` of the rotation, filter until `wanted` nodes pass, scoring each as it passes.
        Returns (nodes examined, nodes feasible, the names of the best-scoring ones in
        rotation order): what the general loop finds, without its per-node lists and dict
        lookups. A node without taints or cordon keeps its verdict for pods of this `shape`
        until its pods or capacity change (`NodeInfo.fit_for`); any other node still goes
        through `reasons()`."""
        shape = snap.intern_shape((self.cpu, self.memory, self.nonzero_cpu, self.nonzero_memory))
        reasons = self.reasons
        examined = feasible = 0
        best_score = -1
        best: list[str] = []
        # `examined` is read after the loop: the count where it stopped.
        for examined, info in enumerate(_rotation(snap.infos, start), 1):  # noqa: B007
            if info.fit_for is shape:
                s = info.fit_score
            elif info.plain:
                s = info.fit_score = _fit_score(info, shape)
                info.fit_for = shape
            elif reasons(info) is None:
                s = _least_allocated(info, shape[2], shape[3])
            else:
                continue
            if s < 0:
                continue
            feasible += 1
            if s > best_score:
                best_score, best = s, [info.name]
            elif s == best_score:
                best.append(info.name)
            if feasible >= wanted:
                break
        return examined, feasible, best

    def candidates(self, snap: ClusterSnapshot) -> list[str] | None:
        """A subset of node names that must contain every feasible node, when the pod's
        nodeSelector or pod affinity pins it down; None means "all nodes"."""
        best: list[str] | None = None
        for k, v in self.node_selector:
            names = snap.nodes_with_label(k, v)
            if best is None or len(names) < len(best):
                best = names
        if self.affinity and not self.first_of_group:
            term = self.affinity[0]
            names = [
                n
                for d in self.allowed[0].domains()
                for n in snap.nodes_with_label(term.topology_key, d)
            ]
            if best is None or len(names) < len(best):
                best = names
        return best


def _rotation(infos: list[NodeInfo], start: int) -> Iterator[NodeInfo]:
    """infos[start:], then infos[:start], neither copied nor stepped through to `start`."""
    head = iter(infos)
    head.__setstate__(start)  # type: ignore[attr-defined]  # a list iterator's resume point
    return itertools.chain(head, itertools.islice(infos, start))


def _fit_score(info: NodeInfo, shape: tuple[int, int, int, int]) -> int:
    """On a node without taints or cordon, for a pod asking for (cpu, memory) and scored as
    (nonzero cpu, nonzero memory) = `shape`: -1 if NodeResourcesFit rejects it (a pod slot,
    and only the resources it asks for), else its LeastAllocated score."""
    cpu, memory, nonzero_cpu, nonzero_memory = shape
    if (
        info.free_pods < 1
        or (cpu and info.free_cpu < cpu)
        or (memory and info.free_memory < memory)
    ):
        return -1
    return _least_allocated(info, nonzero_cpu, nonzero_memory)


def _least_allocated(info: NodeInfo, nonzero_cpu: int, nonzero_memory: int) -> int:
    """`_PodContext.score` for a pod that asks for no extended resource."""
    cap = info.alloc_cpu
    used = info.nonzero_cpu + nonzero_cpu
    s = (cap - used) * 100 // cap if cap > 0 and used <= cap else 0
    cap = info.alloc_memory
    used = info.nonzero_memory + nonzero_memory
    return (s + ((cap - used) * 100 // cap if cap > 0 and used <= cap else 0)) // 2


def schedule(
    pod: dict[str, Any],
    snap: ClusterSnapshot,
    rng: random.Random,
    *,
    nodes_to_score: int | None = None,
    scan: FilterScan | None = None,
    volumes: PodVolumes | None = None,
    fast: bool = True,
) -> tuple[str | None, str]:
    """Pick a node for `pod`: (node name, "") or (None, the PodScheduled=False message).

    Filters as kube-scheduler's default profile; among feasible nodes (sampled in a random
    rotation like `percentageOfNodesToScore`) the least allocated wins, ties broken by `rng`
    so runs are reproducible per seed. A pod that is already bound is returned as is; callers
    should pick pods with `needs_scheduling()`. `nodes_to_score` overrides how many feasible
    nodes are compared (default: kube-scheduler's adaptive count, capped at
    MAX_NODES_TO_SCORE). `scan`, if given, is filled in with how the nodes were searched.
    `volumes` is what the VolumeBinding PreFilter found of the pod's claims
    (`volumebinding.pod_volumes`). A pod with nothing but cpu and memory to fit takes a fused
    filter-and-score pass that decides exactly as the plugin-by-plugin one; `fast=False` runs
    every pod plugin by plugin (the reference the fast pass is tested against).
    """
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"]), ""
    if spec.get("schedulingGates"):
        return None, SCHEDULING_GATED_MESSAGE
    if not snap.nodes:
        return None, NO_NODES_MESSAGE
    if volumes is not None and volumes.rejected:
        return None, _prefilter_rejected(spec, len(snap.nodes), volumes.rejected)
    ctx = _PodContext(pod, snap, volumes)
    wanted = nodes_to_score or min(num_feasible_nodes_to_find(len(snap.order)), MAX_NODES_TO_SCORE)
    scan = FilterScan() if scan is None else scan
    if fast and ctx.fast:  # candidates() narrows nothing for such a pod
        n = len(snap.order)
        scan.examined, scan.feasible, best = ctx._scan_fast(snap, rng.randrange(n), wanted)
        scan.candidates, scan.existing_anti_matched, scan.fast_path = n, False, True
    else:
        best = _by_plugins(ctx, snap, rng, wanted, scan)
    if not best:
        return None, _diagnose(ctx, snap)
    return (best[0] if len(best) == 1 else rng.choice(best)), ""


def _by_plugins(
    ctx: _PodContext, snap: ClusterSnapshot, rng: random.Random, wanted: int, scan: FilterScan
) -> list[str]:
    """Filter plugin by plugin (`reasons()`) in a random rotation over the candidates until
    `wanted` nodes pass, then score them (`score()`); the names of the best, in rotation
    order."""
    narrowed = ctx.candidates(snap)
    names = snap.order if narrowed is None else narrowed
    feasible: list[NodeInfo] = []
    n = len(names)
    examined = 0
    if n:
        start = rng.randrange(n)
        nodes = snap.nodes
        for i in range(n):
            info = nodes[names[(start + i) % n]]
            examined += 1
            if ctx.reasons(info) is None:
                feasible.append(info)
                if len(feasible) >= wanted:
                    break
    scan.candidates, scan.examined, scan.feasible = n, examined, len(feasible)
    scan.existing_anti_matched = any(c.any() for _, c in ctx.existing_anti)
    best_score = -1
    best: list[str] = []
    for info in feasible:
        s = ctx.score(info)
        if s > best_score:
            best_score, best = s, [info.name]
        elif s == best_score:
            best.append(info.name)
    return best


def _diagnose(ctx: _PodContext, snap: ClusterSnapshot) -> str:
    """The FitError message: every node's reasons counted, sorted as strings (like
    `sort.Strings` in kube-scheduler), then what preemption found, e.g. "0/16 nodes are
    available: 12 Insufficient nvidia.com/gpu, 4 node(s) didn't match Pod's node
    affinity/selector. preemption: 0/16 nodes are available: 12 No preemption victims found
    for incoming pod, 4 Preemption is not helpful for scheduling."."""
    histogram: dict[str, int] = {}
    helpless = 0
    for info in snap.nodes.values():
        reasons = ctx.reasons(info) or ()
        for reason in reasons:
            histogram[reason] = histogram.get(reason, 0) + 1
        if reasons and (reasons[0] in _UNRESOLVABLE or reasons[0].startswith(_MSG_TAINT)):
            helpless += 1
    fit = _available(len(snap.nodes), histogram)
    if ctx.preemption_policy == "Never":
        return f"{fit} preemption: {_MSG_NOT_ELIGIBLE}"
    verdicts = {_MSG_NOT_HELPFUL: helpless, _MSG_NO_VICTIMS: len(snap.nodes) - helpless}
    return f"{fit} preemption: {_available(len(snap.nodes), verdicts)}"


def _prefilter_rejected(spec: Mapping[str, Any], nodes: int, message: str) -> str:
    """kube-scheduler's FitError when a PreFilter plugin rejected the pod: its message in
    place of the per-node reasons, and every node past preemption's help."""
    if spec.get("preemptionPolicy") == "Never":
        return f"0/{nodes} nodes are available: {message}. preemption: {_MSG_NOT_ELIGIBLE}"
    verdict = _available(nodes, {_MSG_NOT_HELPFUL: nodes})
    return f"0/{nodes} nodes are available: {message}. preemption: {verdict}"


def _available(nodes: int, histogram: Mapping[str, int]) -> str:
    parts = sorted(f"{count} {reason}" for reason, count in histogram.items() if count)
    message = f"0/{nodes} nodes are available"
    return f"{message}: {', '.join(parts)}." if parts else f"{message}."
