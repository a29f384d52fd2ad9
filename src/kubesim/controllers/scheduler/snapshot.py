"""`ClusterSnapshot`: the scheduler's view of nodes and bound pods, kept current from watch events
and indexed for the filters (nodes by label; pods by namespace, label and topology domain).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kubesim.base.resources import (
    DEFAULT_ALLOCATABLE,
    NONZERO_CPU_MILLI,
    NONZERO_MEMORY,
    add_into,
    pod_requests,
    units_or_zero,
)
from kubesim.controllers.scheduler.affinity import (
    EMPTY,
    DomainCount,
    PodTerms,
    Term,
    anti_guard,
    pod_terms,
    required_terms,
    single_key_shape,
    str_map,
)

__all__ = ["UNSCHEDULABLE_TAINT", "BoundCounts", "ClusterSnapshot", "NodeInfo"]


UNSCHEDULABLE_TAINT: Final = "node.kubernetes.io/unschedulable"


_MAX_SHAPES: Final = 1024


_NOT_READY_TAINT: Final = "node.kubernetes.io/not-ready"


_UNREACHABLE_TAINT: Final = "node.kubernetes.io/unreachable"


# ---------------------------------------------------------------------------------------------
# Nodes


def _node_conditions_taint(node: Mapping[str, Any]) -> str | None:
    """The taint the node lifecycle controller puts on a node that is not Ready: not-ready for
    Ready=False, unreachable for Ready=Unknown. A node without a Ready condition is Ready."""
    status = node.get("status") or {}
    for cond in status.get("conditions") or ():
        if isinstance(cond, Mapping) and cond.get("type") == "Ready":
            s = cond.get("status")
            if s == "False":
                return _NOT_READY_TAINT
            if s != "True":
                return _UNREACHABLE_TAINT
    return None


def _node_allocatable(node: Mapping[str, Any]) -> dict[str, int]:
    """Allocatable capacity in scheduler units: `status.allocatable`, else `status.capacity`,
    else the simulation's defaults for cpu/memory/pods/ephemeral-storage."""
    status = node.get("status") or {}
    alloc = status.get("allocatable") or {}
    cap = status.get("capacity") or {}
    out: dict[str, int] = {}
    for source in (DEFAULT_ALLOCATABLE, cap, alloc):
        if isinstance(source, Mapping):
            for name, q in source.items():
                out[str(name)] = units_or_zero(str(name), q)
    return out


@dataclass(slots=True)
class NodeInfo:
    """One node as the scheduler sees it: the Node object, what its bound pods request
    (`resource_units`, plus a "pods" count) and those pods.

    The remaining fields are derived from `node` once per node update, so the per-pod filter
    loop does no parsing.
    """

    node: dict[str, Any]
    requested: dict[str, int] = field(default_factory=dict)
    pods: list[dict[str, Any]] = field(default_factory=list)
    name: str = field(init=False)
    labels: dict[str, str] = field(init=False)
    allocatable: dict[str, int] = field(init=False)
    # NoSchedule/NoExecute taints as (key, value, effect), including the implicit not-ready one.
    hard_taints: list[tuple[str, str, str]] = field(init=False)
    unschedulable: bool = field(init=False)
    # Requests as kube-scheduler scores them (pods asking for nothing count as 100m / 200Mi).
    nonzero_cpu: int = field(init=False, default=0)
    nonzero_memory: int = field(init=False, default=0)
    # For the filter's fast path (scheduling.py): no taint or cordon to check, and what is
    # left of cpu, memory and pods (allocatable minus requested; negative if overcommitted).
    plain: bool = field(init=False, default=True)
    alloc_cpu: int = field(init=False, default=0)
    alloc_memory: int = field(init=False, default=0)
    free_cpu: int = field(init=False, default=0)
    free_memory: int = field(init=False, default=0)
    free_pods: int = field(init=False, default=0)
    # The fast path's last verdict here (-1: does not fit, else the LeastAllocated score) and
    # the interned pod shape it was for; any change to the node's pods or capacity forgets it.
    fit_for: tuple[int, int, int, int] | None = field(init=False, default=None)
    fit_score: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.refresh()

    def update_free(self) -> None:
        """Re-derive the `free_*` fields after `requested` or `allocatable` changed."""
        alloc, used = self.allocatable, self.requested
        self.fit_for = None
        self.alloc_cpu = alloc.get("cpu", 0)
        self.alloc_memory = alloc.get("memory", 0)
        self.free_cpu = self.alloc_cpu - used.get("cpu", 0)
        self.free_memory = self.alloc_memory - used.get("memory", 0)
        self.free_pods = alloc.get("pods", 0) - used.get("pods", 0)

    def refresh(self) -> None:
        """Re-derive the cached fields after `node` changed."""
        node = self.node
        meta = node.get("metadata") or {}
        spec = node.get("spec") or {}
        self.name = str(meta.get("name") or "")
        self.labels = str_map(meta.get("labels"))
        self.allocatable = _node_allocatable(node)
        taints: list[tuple[str, str, str]] = []
        implicit = _node_conditions_taint(node)
        for t in spec.get("taints") or ():
            if not isinstance(t, Mapping):
                continue
            effect = str(t.get("effect") or "")
            if effect in ("NoSchedule", "NoExecute"):
                taints.append((str(t.get("key") or ""), str(t.get("value") or ""), effect))
        if implicit is not None and not any(k == implicit for k, _, _ in taints):
            taints.append((implicit, "", "NoSchedule"))
        self.hard_taints = taints
        self.unschedulable = bool(spec.get("unschedulable"))
        self.plain = not taints and not self.unschedulable
        self.update_free()


# ---------------------------------------------------------------------------------------------
# Snapshot


@dataclass
class _PodRecord:
    key: str
    pod: dict[str, Any]
    namespace: str
    labels: dict[str, str]
    node_name: str
    requests: dict[str, int]  # includes "pods": 1
    nonzero_cpu: int
    nonzero_memory: int
    anti_terms: list[Term]
    terms: PodTerms
    attached: bool = False
    # (term, domain) pairs this pod contributed to `_anti_entries`, to undo exactly.
    anti_domains: list[tuple[Term, str]] = field(default_factory=list)


@dataclass
class _AntiEntry:
    """All existing pods sharing one anti-affinity term: how many of them sit in each domain."""

    term: Term
    owners: int = 0
    domains: dict[str, int] = field(default_factory=dict)


@dataclass
class _AntiGroup:
    """Existing pods' anti-affinity terms of a `single_key_shape`, for one namespace scope,
    topology key and label key, summed per domain."""

    sample: Term  # carries the namespace scope
    label_key: str
    by_value: dict[str, dict[str, int]] = field(default_factory=dict)  # "in": v -> domain -> n
    agg: dict[str, int] = field(default_factory=dict)  # "notin": domain -> n
    excl: dict[str, dict[str, int]] = field(default_factory=dict)  # "notin": v -> domain -> n


@dataclass
class BoundCounts:
    """Totals over the pods bound to known nodes, kept by `_attach`/`_detach`: what the
    kube-scheduler cost model (cost.py) multiplies by, so costing a pod is O(1)."""

    pods: int = 0
    pods_with_affinity: int = 0  # kube-scheduler's NodeInfo.PodsWithAffinity, summed
    required_affinity_terms: int = 0
    required_anti_affinity_terms: int = 0  # over NodeInfo.PodsWithRequiredAntiAffinity
    preferred_terms: int = 0

    def add(self, terms: PodTerms, sign: int) -> None:
        self.pods += sign
        if terms.has_affinity:
            self.pods_with_affinity += sign
            self.required_affinity_terms += sign * terms.required_affinity
            self.required_anti_affinity_terms += sign * terms.required_anti_affinity
            self.preferred_terms += sign * terms.preferred


def _group_key(term: Term, label_key: str) -> tuple[Any, ...]:
    return (term.namespaces, term.ns_selector, term.all_namespaces, term.topology_key, label_key)


@dataclass
class _TopologyIndex:
    """Bound pods counted per domain of one topology key, by namespace and by label."""

    by_ns: dict[str, dict[str, int]] = field(default_factory=dict)
    by_key: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)
    by_label: dict[tuple[str, str, str], dict[str, int]] = field(default_factory=dict)


def _bump(index: dict[Any, dict[str, int]], key: Any, domain: str, delta: int) -> None:
    counts = index.get(key)
    if counts is None:
        counts = index[key] = {}
    n = counts.get(domain, 0) + delta
    if n > 0:
        counts[domain] = n
    else:
        counts.pop(domain, None)
        if not counts:
            del index[key]


def _pod_key(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"


class ClusterSnapshot:
    """The scheduler's incremental view of nodes and bound pods.

    Feed it every Node and Pod watch event (`add_node`/`add_pod` for ADDED and MODIFIED,
    `remove_*` for DELETED) and `assume()` each binding as soon as it is decided, as
    kube-scheduler's cache does: the next pod of the same group must see this one, or a pod
    affinity group would scatter. Pods that are unbound or finished (Succeeded/Failed) hold no
    resources and match no affinity terms, so updates that finish a pod release its node.
    Pods bound to a node the snapshot does not know yet are kept and counted once it arrives.
    """

    def __init__(self) -> None:
        self.nodes: dict[str, NodeInfo] = {}
        self.order: list[str] = []  # node names, for O(1) random access in rotation
        self.infos: list[NodeInfo] = []  # the nodes of `order`, position by position
        self._order_pos: dict[str, int] = {}
        self._nodes_by_label: dict[tuple[str, str], dict[str, None]] = {}
        self._pods: dict[str, _PodRecord] = {}
        self._waiting: dict[str, dict[str, None]] = {}  # node name -> pods bound to it, unknown
        self._pods_by_ns: dict[str, dict[str, None]] = {}
        # Pods by label key and by label, built on the first query that needs them (a cluster
        # without multi-key affinity terms never does) and then kept current.
        self._label_index = False
        self._pods_by_key: dict[tuple[str, str], dict[str, None]] = {}
        self._pods_by_label: dict[tuple[str, str, str], dict[str, None]] = {}
        self._topology: dict[str, _TopologyIndex] = {}
        self._anti_entries: dict[Term, _AntiEntry] = {}  # terms of no special shape
        self._anti_buckets: dict[tuple[str, ...], dict[Term, None]] = {}
        self._anti_groups: dict[tuple[Any, ...], _AntiGroup] = {}
        self.bound = BoundCounts()
        self._shapes: dict[tuple[int, int, int, int], tuple[int, int, int, int]] = {}

    def intern_shape(self, shape: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
        """One object per pod shape, so a node's cached verdict is checked by identity
        (`NodeInfo.fit_for`). Forgets them all past `_MAX_SHAPES`, re-scoring nodes then."""
        found = self._shapes.get(shape)
        if found is None:
            if len(self._shapes) >= _MAX_SHAPES:
                self._shapes.clear()
            found = self._shapes[shape] = shape
        return found

    # -- nodes ------------------------------------------------------------------------------

    def add_node(self, node: dict[str, Any]) -> None:
        """Add or update a node. A label change re-files the node's pods under their new
        topology domains."""
        info = NodeInfo(node)
        name = info.name
        old = self.nodes.get(name)
        if old is None:
            self.nodes[name] = info
            self._order_pos[name] = len(self.order)
            self.order.append(name)
            self.infos.append(info)
            self._index_node_labels(name, info.labels, +1)
            for key in list(self._waiting.pop(name, {})):
                self._attach(self._pods[key], info)
            return
        if old.labels == info.labels:
            old.node = node
            old.refresh()
            return
        records = [self._pods[_pod_key(p)] for p in old.pods]
        for rec in records:
            self._detach(rec, old)
        self._index_node_labels(name, old.labels, -1)
        old.node = node
        old.refresh()
        self._index_node_labels(name, old.labels, +1)
        for rec in records:
            self._attach(rec, old)

    def remove_node(self, name: str) -> None:
        """Forget a node. Its pods stay known (a real cluster garbage-collects them later) and
        are counted again if a node of that name returns."""
        info = self.nodes.get(name)
        if info is None:
            return
        for pod in list(info.pods):
            rec = self._pods[_pod_key(pod)]
            self._detach(rec, info)
            self._waiting.setdefault(name, {})[rec.key] = None
        self._index_node_labels(name, info.labels, -1)
        del self.nodes[name]
        pos = self._order_pos.pop(name)
        last = self.order.pop()
        last_info = self.infos.pop()
        if last != name:
            self.order[pos] = last
            self.infos[pos] = last_info
            self._order_pos[last] = pos

    def _index_node_labels(self, name: str, labels: Mapping[str, str], delta: int) -> None:
        for kv in labels.items():
            if delta > 0:
                self._nodes_by_label.setdefault(kv, {})[name] = None
            else:
                names = self._nodes_by_label.get(kv)
                if names is not None:
                    names.pop(name, None)
                    if not names:
                        del self._nodes_by_label[kv]

    # -- pods -------------------------------------------------------------------------------

    def add_pod(self, pod: dict[str, Any]) -> None:
        """Add or update a pod. Only bound, unfinished pods are kept."""
        key = _pod_key(pod)
        spec = pod.get("spec") or {}
        node_name = spec.get("nodeName")
        phase = (pod.get("status") or {}).get("phase")
        meta = pod.get("metadata") or {}
        rec = self._pods.get(key)
        if rec is not None:
            if rec.attached and node_name == rec.node_name and _same_facts(rec.pod, meta, spec):
                if phase not in ("Succeeded", "Failed"):
                    self._replace(rec, pod)
                    return
            self._remove_key(key)
        if not node_name or phase in ("Succeeded", "Failed"):
            return
        requests = pod_requests(pod)
        requests["pods"] = 1
        rec = _PodRecord(
            key=key,
            pod=pod,
            namespace=str(meta.get("namespace") or "default"),
            labels=str_map(meta.get("labels")),
            node_name=str(node_name),
            requests=requests,
            nonzero_cpu=requests.get("cpu") or NONZERO_CPU_MILLI,
            nonzero_memory=requests.get("memory") or NONZERO_MEMORY,
            anti_terms=required_terms(pod, "podAntiAffinity"),
            terms=pod_terms(pod),
        )
        self._pods[key] = rec
        ns = rec.namespace
        self._pods_by_ns.setdefault(ns, {})[key] = None
        if self._label_index:
            self._index_pod_labels(rec)
        for term in rec.anti_terms:
            if single_key_shape(term.selector) is not None:
                continue
            entry = self._anti_entries.get(term)
            if entry is None:
                entry = self._anti_entries[term] = _AntiEntry(term)
                self._anti_buckets.setdefault(anti_guard(term.selector), {})[term] = None
            entry.owners += 1
        info = self.nodes.get(rec.node_name)
        if info is not None:
            self._attach(rec, info)
        else:
            self._waiting.setdefault(rec.node_name, {})[key] = None

    def _index_pod_labels(self, rec: _PodRecord) -> None:
        ns, key = rec.namespace, rec.key
        for k, v in rec.labels.items():
            self._pods_by_key.setdefault((ns, k), {})[key] = None
            self._pods_by_label.setdefault((ns, k, v), {})[key] = None

    def _replace(self, rec: _PodRecord, pod: dict[str, Any]) -> None:
        """Swap in a newer object of an attached pod whose scheduling facts are unchanged
        (the confirmed binding of an assumed pod, a status update): nothing is recounted. The
        pod goes last among its node's pods, where removing and adding it would put it."""
        pods = self.nodes[rec.node_name].pods
        old = rec.pod
        for i, p in enumerate(pods):
            if p is old:
                del pods[i]
                break
        pods.append(pod)
        rec.pod = pod

    def remove_pod(self, pod: dict[str, Any]) -> None:
        """Forget a pod (DELETED event); identified by namespace/name."""
        self._remove_key(_pod_key(pod))

    def assume(self, pod: dict[str, Any], node_name: str) -> dict[str, Any]:
        """Record a binding before the API server confirms it; returns the bound copy.

        The later watch event for the same pod simply replaces it.
        """
        bound = {**pod, "spec": {**(pod.get("spec") or {}), "nodeName": node_name}}
        self.add_pod(bound)
        return bound

    def _remove_key(self, key: str) -> None:
        rec = self._pods.pop(key, None)
        if rec is None:
            return
        if rec.attached:
            self._detach(rec, self.nodes[rec.node_name])
        else:
            waiting = self._waiting.get(rec.node_name)
            if waiting is not None:
                waiting.pop(key, None)
                if not waiting:
                    del self._waiting[rec.node_name]
        ns = rec.namespace
        _discard(self._pods_by_ns, ns, key)
        if self._label_index:
            for k, v in rec.labels.items():
                _discard(self._pods_by_key, (ns, k), key)
                _discard(self._pods_by_label, (ns, k, v), key)
        for term in rec.anti_terms:
            if single_key_shape(term.selector) is not None:
                continue
            entry = self._anti_entries[term]
            entry.owners -= 1
            if entry.owners <= 0:
                del self._anti_entries[term]
                _discard(self._anti_buckets, anti_guard(term.selector), term)

    def _attach(self, rec: _PodRecord, info: NodeInfo) -> None:
        rec.attached = True
        self.bound.add(rec.terms, +1)
        info.pods.append(rec.pod)
        add_into(info.requested, rec.requests)
        info.update_free()
        info.nonzero_cpu += rec.nonzero_cpu
        info.nonzero_memory += rec.nonzero_memory
        for key, topo in self._topology.items():
            domain = info.labels.get(key)
            if domain is not None:
                self._count_in_topology(topo, rec, domain, +1)
        for term in rec.anti_terms:
            domain = info.labels.get(term.topology_key)
            if domain is not None:
                self._count_anti(term, domain, +1)
                rec.anti_domains.append((term, domain))

    def _detach(self, rec: _PodRecord, info: NodeInfo) -> None:
        rec.attached = False
        self.bound.add(rec.terms, -1)
        info.pods = [p for p in info.pods if p is not rec.pod]
        for name, v in rec.requests.items():
            left = info.requested.get(name, 0) - v
            if left > 0:
                info.requested[name] = left
            else:
                info.requested.pop(name, None)
        info.update_free()
        info.nonzero_cpu -= rec.nonzero_cpu
        info.nonzero_memory -= rec.nonzero_memory
        for key, topo in self._topology.items():
            domain = info.labels.get(key)
            if domain is not None:
                self._count_in_topology(topo, rec, domain, -1)
        for term, domain in rec.anti_domains:
            self._count_anti(term, domain, -1)
        rec.anti_domains.clear()

    def _count_anti(self, term: Term, domain: str, delta: int) -> None:
        shape = single_key_shape(term.selector)
        if shape is None:
            entry = self._anti_entries.get(term)
            if entry is not None:
                n = entry.domains.get(domain, 0) + delta
                if n > 0:
                    entry.domains[domain] = n
                else:
                    entry.domains.pop(domain, None)
            return
        kind, label_key, values = shape
        gkey = _group_key(term, label_key)
        group = self._anti_groups.get(gkey)
        if group is None:
            group = self._anti_groups[gkey] = _AntiGroup(term, label_key)
        if kind == "in":
            for v in values:
                _bump(group.by_value, v, domain, delta)
        else:
            n = group.agg.get(domain, 0) + delta
            if n > 0:
                group.agg[domain] = n
            else:
                group.agg.pop(domain, None)
            for v in values:
                _bump(group.excl, v, domain, delta)
        if not group.by_value and not group.agg and not group.excl:
            del self._anti_groups[gkey]

    @staticmethod
    def _count_in_topology(topo: _TopologyIndex, rec: _PodRecord, domain: str, d: int) -> None:
        ns = rec.namespace
        _bump(topo.by_ns, ns, domain, d)
        for k, v in rec.labels.items():
            _bump(topo.by_key, (ns, k), domain, d)
            _bump(topo.by_label, (ns, k, v), domain, d)

    def _topology_index(self, key: str) -> _TopologyIndex:
        """The per-domain counts for one topology key, built on first use and then kept
        current by `_attach`/`_detach`."""
        topo = self._topology.get(key)
        if topo is None:
            topo = self._topology[key] = _TopologyIndex()
            for rec in self._pods.values():
                if rec.attached:
                    domain = self.nodes[rec.node_name].labels.get(key)
                    if domain is not None:
                        self._count_in_topology(topo, rec, domain, +1)
        return topo

    # -- queries used by schedule() ----------------------------------------------------------

    def _namespaces_of(self, term: Term) -> Iterable[str]:
        if term.all_namespaces or term.ns_selector is not None:
            return [ns for ns in self._pods_by_ns if term.namespace_matches(ns)]
        return term.namespaces

    def term_counts(self, term: Term) -> DomainCount:
        """Per domain of the term's topology key: are there bound pods the term selects?"""
        keys = {r[0] for r in term.selector}
        if len(keys) > 1:
            found: set[str] = set()
            for rec in self.records_matching([term]):
                domain = self.nodes[rec.node_name].labels.get(term.topology_key)
                if domain is not None:
                    found.add(domain)
            return DomainCount(fixed=found)
        topo = self._topology_index(term.topology_key)
        pos: list[Mapping[str, int]] = []
        neg: list[Mapping[str, int]] = []
        for ns in self._namespaces_of(term):
            if not term.selector:
                pos.append(topo.by_ns.get(ns, EMPTY))
                continue
            key = term.selector[0][0]
            in_values: frozenset[str] | None = None
            not_in: set[str] = set()
            exists = absent = False
            for _, op, values in term.selector:
                if op == "In":
                    in_values = values if in_values is None else in_values & values
                elif op == "NotIn":
                    not_in |= values
                elif op == "Exists":
                    exists = True
                else:
                    absent = True
            if in_values is not None or exists:
                if absent:
                    continue  # contradiction: selects nothing
                if in_values is not None:
                    pos.extend(topo.by_label.get((ns, key, v), EMPTY) for v in in_values - not_in)
                else:
                    pos.append(topo.by_key.get((ns, key), EMPTY))
                    neg.extend(topo.by_label.get((ns, key, v), EMPTY) for v in not_in)
            else:  # only NotIn / DoesNotExist: pods without the label match too
                pos.append(topo.by_ns.get(ns, EMPTY))
                if absent:
                    neg.append(topo.by_key.get((ns, key), EMPTY))
                else:
                    neg.extend(topo.by_label.get((ns, key, v), EMPTY) for v in not_in)
        return DomainCount(pos, neg)

    def records_matching(self, terms: list[Term]) -> Iterable[_PodRecord]:
        """Bound pods matching every term, drawn from the narrowest label index of the first."""
        if not self._label_index:
            self._label_index = True
            for rec in self._pods.values():
                self._index_pod_labels(rec)
        first = terms[0]
        for ns in self._namespaces_of(first):
            candidates: Iterable[str] = self._pods_by_ns.get(ns, ())
            best = len(self._pods_by_ns.get(ns, ()))
            for key, op, values in first.selector:
                if op == "In":
                    groups = [self._pods_by_label.get((ns, key, v), {}) for v in values]
                    size = sum(len(g) for g in groups)
                    if size < best:
                        best, candidates = size, [k for g in groups for k in g]
                elif op == "Exists":
                    group = self._pods_by_key.get((ns, key), {})
                    if len(group) < best:
                        best, candidates = len(group), group
            for pod_key in list(candidates):
                rec = self._pods[pod_key]
                if rec.attached and all(t.matches(rec.namespace, rec.labels) for t in terms):
                    yield rec

    def existing_anti_affinity(
        self, ns: str, labels: Mapping[str, str]
    ) -> list[tuple[str, DomainCount]]:
        """(topology key, counts) pairs marking the domains the incoming pod may not enter
        because a pod already there has a required anti-affinity term selecting it (the
        symmetric half of anti-affinity)."""
        if not self._anti_groups and not self._anti_entries:
            return []
        out: list[tuple[str, DomainCount]] = []
        for group in self._anti_groups.values():
            value = labels.get(group.label_key)
            if value is None or not group.sample.namespace_matches(ns):
                continue
            key = group.sample.topology_key
            by_value = group.by_value.get(value)
            if by_value:
                out.append((key, DomainCount([by_value])))
            if group.agg:
                out.append((key, DomainCount([group.agg], [group.excl.get(value, EMPTY)])))
        fixed: dict[str, set[str]] = {}
        buckets = [self._anti_buckets.get(("any",))]
        for k, v in labels.items():
            buckets.append(self._anti_buckets.get(("kv", k, v)))
            buckets.append(self._anti_buckets.get(("k", k)))
        for bucket in buckets:
            if not bucket:
                continue
            for term in bucket:
                entry = self._anti_entries[term]
                if entry.domains and term.matches(ns, labels):
                    fixed.setdefault(term.topology_key, set()).update(entry.domains)
        out.extend((key, DomainCount(fixed=domains)) for key, domains in fixed.items())
        return out

    def nodes_with_label(self, key: str, value: str) -> list[str]:
        """Names of nodes labelled key=value, in insertion order."""
        return list(self._nodes_by_label.get((key, value), ()))


# The spec fields a `_PodRecord` is derived from (requests, affinity terms, their counts).
_RECORD_FIELDS: Final = ("containers", "initContainers", "overhead", "affinity", "nodeSelector")


def _same_facts(old: Mapping[str, Any], meta: Mapping[str, Any], spec: Mapping[str, Any]) -> bool:
    """Whether a pod's new labels and spec give the same `_PodRecord` as `old` did."""
    old_spec = old.get("spec") or {}
    if old_spec is not spec:
        for f in _RECORD_FIELDS:
            if old_spec.get(f) != spec.get(f):
                return False
    return bool((old.get("metadata") or {}).get("labels") == meta.get("labels"))


def _discard(index: dict[Any, dict[Any, None]], key: Any, member: Any) -> None:
    group = index.get(key)
    if group is not None:
        group.pop(member, None)
        if not group:
            del index[key]
