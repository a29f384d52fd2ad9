"""The simulated kube-scheduler's decision logic: which node, if any, a pod may be bound to.

Pure functions over plain Kubernetes-shaped dicts; the server's scheduler loop feeds watch events
into a `ClusterSnapshot` and calls `schedule()` for each pending pod. The filters, their order and
the wording of the "0/N nodes are available: ..." message follow kube-scheduler's default profile
(NodeUnschedulable, TaintToleration, NodeAffinity, NodeResourcesFit, InterPodAffinity), because
users and tests read those messages from `PodScheduled=False` exactly as on a real cluster.

Scale is the reason for the shape of `ClusterSnapshot`: JobSet's exclusive placement gives every
pod a required pod affinity *and* anti-affinity term, and benchmarks bind ~10k such pods onto
thousands of nodes. kube-scheduler answers those terms from per-topology-domain counts; so does
this module. Bound pods are indexed by namespace and label, and, per topology key in use, by
domain, so a term is answered in time proportional to the distinct label values involved rather
than to the number of pods. Nodes are indexed by label, so a pod whose affinity or nodeSelector
pins it to a domain only examines that domain's nodes.

Deliberate simplifications (documented so nobody mistakes them for kube-scheduler behaviour):
no preemption (so no "preemption: ..." suffix in messages), no preferred affinity / topology
spread / image locality scoring, no host ports or volumes, and `namespaceSelector` only sees the
`kubernetes.io/metadata.name` label every namespace carries.
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from kubeutil.quantity import parse_quantity

__all__ = [
    "DEFAULT_ALLOCATABLE",
    "MAX_NODES_TO_SCORE",
    "NO_NODES_MESSAGE",
    "SCHEDULING_GATED_MESSAGE",
    "ClusterSnapshot",
    "NodeInfo",
    "needs_scheduling",
    "num_feasible_nodes_to_find",
    "parse_quantity",
    "pod_requests",
    "resource_units",
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

#: Capacity assumed for a Node whose status does not report it (the simulation's documented
#: defaults; a real kubelet always reports these).
DEFAULT_ALLOCATABLE: Final[Mapping[str, str]] = {
    "cpu": "32",
    "memory": "128Gi",
    "pods": "110",
    "ephemeral-storage": "100Gi",
}

# kube-scheduler scores pods that request nothing as if they asked for this much, so that
# "best effort" pods still spread instead of piling onto one node.
_NONZERO_CPU_MILLI: Final = 100
_NONZERO_MEMORY: Final = 200 * 1024 * 1024

_UNSCHEDULABLE_TAINT: Final = "node.kubernetes.io/unschedulable"
_NOT_READY_TAINT: Final = "node.kubernetes.io/not-ready"
_UNREACHABLE_TAINT: Final = "node.kubernetes.io/unreachable"
_NS_NAME_LABEL: Final = "kubernetes.io/metadata.name"

# ---------------------------------------------------------------------------------------------
# Quantities (parsed by kubeutil.quantity, shared with the placement planner)


@functools.lru_cache(maxsize=8192)
def resource_units(name: str, q: str | int | float) -> int:
    """Convert a quantity to the integer unit the scheduler accounts in.

    CPU is counted in millicores and everything else in whole units (bytes, pods, devices),
    rounding up like `Quantity.MilliValue()` / `Quantity.Value()`, so that a request never
    looks smaller than it is. Cached: a cluster uses few distinct quantity strings.
    """
    value = parse_quantity(q)
    if name == "cpu":
        return math.ceil(value * 1000)
    return math.ceil(value)


def _units_or_zero(name: str, q: Any) -> int:
    """`resource_units` for data that passed no validation: the scheduler must never raise."""
    try:
        return resource_units(name, q)
    except (ValueError, TypeError, ZeroDivisionError, OverflowError):
        return 0


# ---------------------------------------------------------------------------------------------
# Pod resource requests


def _container_requests(container: Mapping[str, Any]) -> dict[str, int]:
    """A container's effective requests: limits stand in for absent requests, as the API
    server's defaulting does, so a pod that only sets `limits: {nvidia.com/gpu: 1}` still
    consumes a GPU."""
    resources = container.get("resources") or {}
    requests = resources.get("requests") or {}
    limits = resources.get("limits") or {}
    out: dict[str, int] = {}
    if isinstance(limits, Mapping):
        for name, q in limits.items():
            out[str(name)] = _units_or_zero(str(name), q)
    if isinstance(requests, Mapping):
        for name, q in requests.items():
            out[str(name)] = _units_or_zero(str(name), q)
    return out


def _add_into(total: dict[str, int], more: Mapping[str, int]) -> None:
    for name, v in more.items():
        total[name] = total.get(name, 0) + v


def _max_into(total: dict[str, int], other: Mapping[str, int]) -> None:
    for name, v in other.items():
        if v > total.get(name, 0):
            total[name] = v


def pod_requests(pod: Mapping[str, Any]) -> dict[str, int]:
    """What a pod occupies on its node, in `resource_units` (no "pods" entry).

    Follows `resourcehelper.PodRequests`: the sum over app containers, at least the largest
    init container (plus the restartable "sidecar" init containers started before it, which
    keep running), plus `spec.overhead`.
    """
    spec = pod.get("spec") or {}
    total: dict[str, int] = {}
    for c in spec.get("containers") or ():
        if isinstance(c, Mapping):
            _add_into(total, _container_requests(c))
    init_peak: dict[str, int] = {}
    sidecars: dict[str, int] = {}
    for c in spec.get("initContainers") or ():
        if not isinstance(c, Mapping):
            continue
        req = _container_requests(c)
        if c.get("restartPolicy") == "Always":
            _add_into(total, req)
            _add_into(sidecars, req)
            _max_into(init_peak, sidecars)
        else:
            during = dict(sidecars)
            _add_into(during, req)
            _max_into(init_peak, during)
    _max_into(total, init_peak)
    overhead = spec.get("overhead") or {}
    if isinstance(overhead, Mapping):
        _add_into(total, {str(k): _units_or_zero(str(k), v) for k, v in overhead.items()})
    return {k: v for k, v in total.items() if v > 0}


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
# Label selectors (LabelSelector for pods, NodeSelector for nodes)

# A compiled requirement: (key, operator, values). matchLabels become ("In", {value}).
_Req = tuple[str, str, frozenset[str]]
_Selector = tuple[_Req, ...]


def _compile_label_selector(sel: Any) -> _Selector | None:
    """Compile a metav1.LabelSelector. None means "matches nothing": a null selector in an
    affinity term selects no pods, and so does an invalid one (the API server would have
    rejected it, but the scheduler must not crash on it)."""
    if not isinstance(sel, Mapping):
        return None
    reqs: list[_Req] = []
    match_labels = sel.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        return None
    for k, v in match_labels.items():
        reqs.append((str(k), "In", frozenset((str(v),))))
    for expr in sel.get("matchExpressions") or ():
        if not isinstance(expr, Mapping):
            return None
        op = expr.get("operator")
        key = str(expr.get("key") or "")
        values = frozenset(str(v) for v in expr.get("values") or ())
        if op not in ("In", "NotIn", "Exists", "DoesNotExist") or not key:
            return None
        reqs.append((key, str(op), values))
    return tuple(sorted(reqs, key=lambda r: (r[0], r[1], sorted(r[2]))))


def _req_matches_value(op: str, values: frozenset[str], value: str | None) -> bool:
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    return value is None  # DoesNotExist


def _selector_matches(sel: _Selector, labels: Mapping[str, str]) -> bool:
    for key, op, values in sel:
        if not _req_matches_value(op, values, labels.get(key)):
            return False
    return True


def _node_req_matches(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """One NodeSelectorRequirement: the label operators plus numeric Gt/Lt."""
    key = str(expr.get("key") or "")
    op = expr.get("operator")
    raw_values = expr.get("values") or ()
    values = [str(v) for v in raw_values] if isinstance(raw_values, list | tuple) else []
    value = labels.get(key)
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt"):
        if value is None or len(values) != 1:
            return False
        try:
            have, want = int(value), int(values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False


def _node_term_matches(term: Any, labels: Mapping[str, str], name: str) -> bool:
    """A NodeSelectorTerm: all expressions and fields must match; an empty term matches no
    node (as in `nodeaffinity.NewNodeSelector`)."""
    if not isinstance(term, Mapping):
        return False
    exprs = term.get("matchExpressions") or ()
    fields = term.get("matchFields") or ()
    if not exprs and not fields:
        return False
    for expr in exprs:
        if not isinstance(expr, Mapping) or not _node_req_matches(expr, labels):
            return False
    for expr in fields:
        if not isinstance(expr, Mapping) or expr.get("key") != "metadata.name":
            return False
        if not _node_req_matches({**expr, "key": "n"}, {"n": name}):
            return False
    return True


# ---------------------------------------------------------------------------------------------
# Pod affinity terms


@dataclass(frozen=True)
class _Term:
    """A compiled PodAffinityTerm; hashable so identical terms of many pods share one entry."""

    selector: _Selector
    topology_key: str
    namespaces: frozenset[str]
    ns_selector: _Selector | None  # None: no selector; () with all_namespaces: every namespace
    all_namespaces: bool

    def namespace_matches(self, ns: str) -> bool:
        if self.all_namespaces or ns in self.namespaces:
            return True
        return self.ns_selector is not None and _selector_matches(
            self.ns_selector, {_NS_NAME_LABEL: ns}
        )

    def matches(self, ns: str, labels: Mapping[str, str]) -> bool:
        return self.namespace_matches(ns) and _selector_matches(self.selector, labels)


def _compile_term(term: Any, owner_ns: str, owner_labels: Mapping[str, str]) -> _Term | None:
    """Compile one required PodAffinityTerm of a pod in `owner_ns`.

    Returns None for terms that can select nothing (null/invalid selector or no topologyKey);
    such terms are dropped, which for affinity is more lenient than kube-apiserver (which
    would have rejected the pod) but never leaves a pod stuck on malformed input.
    """
    if not isinstance(term, Mapping):
        return None
    topology_key = term.get("topologyKey")
    selector = _compile_label_selector(term.get("labelSelector"))
    if not topology_key or selector is None:
        return None
    extra: list[_Req] = []
    for key in term.get("matchLabelKeys") or ():
        if key in owner_labels:
            extra.append((str(key), "In", frozenset((owner_labels[key],))))
    for key in term.get("mismatchLabelKeys") or ():
        if key in owner_labels:
            extra.append((str(key), "NotIn", frozenset((owner_labels[key],))))
    if extra:
        selector = tuple(sorted((*selector, *extra), key=lambda r: (r[0], r[1], sorted(r[2]))))
    namespaces = frozenset(str(n) for n in term.get("namespaces") or ())
    raw_ns_sel = term.get("namespaceSelector")
    ns_selector: _Selector | None = None
    all_namespaces = False
    if isinstance(raw_ns_sel, Mapping):
        ns_selector = _compile_label_selector(raw_ns_sel)
        if ns_selector == ():
            all_namespaces = True  # `namespaceSelector: {}` selects every namespace
    elif not namespaces:
        namespaces = frozenset((owner_ns,))
    return _Term(selector, str(topology_key), namespaces, ns_selector, all_namespaces)


def _required_terms(pod: Mapping[str, Any], kind: str) -> list[_Term]:
    spec = pod.get("spec") or {}
    affinity = spec.get("affinity") or {}
    section = affinity.get(kind) or {} if isinstance(affinity, Mapping) else {}
    raw = section.get("requiredDuringSchedulingIgnoredDuringExecution") or ()
    meta = pod.get("metadata") or {}
    ns = str(meta.get("namespace") or "default")
    labels = _str_map(meta.get("labels"))
    out: list[_Term] = []
    for t in raw if isinstance(raw, list | tuple) else ():
        compiled = _compile_term(t, ns, labels)
        if compiled is not None:
            out.append(compiled)
    return out


def _str_map(m: Any) -> dict[str, str]:
    if not isinstance(m, Mapping):
        return {}
    return {str(k): str(v) for k, v in m.items()}


def _anti_guard(sel: _Selector) -> tuple[str, ...]:
    """A cheap necessary condition for a pod to match `sel`, used to bucket the anti-affinity
    terms of existing pods so an incoming pod is only tested against plausible ones."""
    best: tuple[str, ...] = ("any",)
    for key, op, values in sel:
        if op == "In" and len(values) == 1:
            return ("kv", key, next(iter(values)))
        if op in ("In", "Exists"):
            best = ("k", key)
    return best


@functools.lru_cache(maxsize=65536)
def _single_key_shape(sel: _Selector) -> tuple[str, str, frozenset[str]] | None:
    """Classify a selector over one label key L by how it treats L's value v:
    ("in", L, S): matches iff v in S;  ("notin", L, S): matches iff v is set and not in S
    (JobSet's exclusive-placement anti-affinity: `Exists` + `NotIn [own job]`).
    None for anything else (several keys, DoesNotExist, a bare NotIn matching unlabelled pods).
    Existing pods' anti-affinity terms of these shapes are aggregated per label key, so the
    symmetric check costs O(1) per node however many jobs are running."""
    keys = {r[0] for r in sel}
    if len(keys) != 1:
        return None
    key = next(iter(keys))
    in_values: frozenset[str] | None = None
    not_in: set[str] = set()
    exists = False
    for _, op, values in sel:
        if op == "In":
            in_values = values if in_values is None else in_values & values
        elif op == "NotIn":
            not_in |= values
        elif op == "Exists":
            exists = True
        else:
            return None
    if in_values is not None:
        return ("in", key, in_values - not_in)
    if exists:
        return ("notin", key, frozenset(not_in))
    return None


_EMPTY: Final[Mapping[str, int]] = MappingProxyType({})


class _DomainCount:
    """How many existing pods a term selects in a topology domain, answered lazily per domain
    as sum(pos) - sum(neg) over per-domain counters, or from a precomputed set (`fixed`).
    Lazy, because an incoming pod is checked against far fewer domains than exist."""

    __slots__ = ("fixed", "neg", "pos")

    def __init__(
        self,
        pos: Iterable[Mapping[str, int]] = (),
        neg: Iterable[Mapping[str, int]] = (),
        fixed: set[str] | None = None,
    ) -> None:
        self.pos = [m for m in pos if m]
        self.neg = [m for m in neg if m]
        self.fixed = fixed

    def has(self, domain: str) -> bool:
        if self.fixed is not None:
            return domain in self.fixed
        n = 0
        for m in self.pos:
            n += m.get(domain, 0)
        if n <= 0:
            return False
        for m in self.neg:
            n -= m.get(domain, 0)
        return n > 0

    def domains(self) -> set[str]:
        if self.fixed is not None:
            return self.fixed
        seen: set[str] = set()
        for m in self.pos:
            seen.update(m)
        return {d for d in seen if self.has(d)} if self.neg else seen

    def any(self) -> bool:
        if self.fixed is not None:
            return bool(self.fixed)
        if not self.neg:
            return bool(self.pos)
        return any(self.has(d) for m in self.pos for d in m)


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
                out[str(name)] = _units_or_zero(str(name), q)
    return out


@dataclass
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

    def __post_init__(self) -> None:
        self.refresh()

    def refresh(self) -> None:
        """Re-derive the cached fields after `node` changed."""
        node = self.node
        meta = node.get("metadata") or {}
        spec = node.get("spec") or {}
        self.name = str(meta.get("name") or "")
        self.labels = _str_map(meta.get("labels"))
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
    anti_terms: list[_Term]
    attached: bool = False
    # (term, domain) pairs this pod contributed to `_anti_entries`, to undo exactly.
    anti_domains: list[tuple[_Term, str]] = field(default_factory=list)


@dataclass
class _AntiEntry:
    """All existing pods sharing one anti-affinity term: how many of them sit in each domain."""

    term: _Term
    owners: int = 0
    domains: dict[str, int] = field(default_factory=dict)


@dataclass
class _AntiGroup:
    """Existing pods' anti-affinity terms of a `_single_key_shape`, for one namespace scope,
    topology key and label key, summed per domain."""

    sample: _Term  # carries the namespace scope
    label_key: str
    by_value: dict[str, dict[str, int]] = field(default_factory=dict)  # "in": v -> domain -> n
    agg: dict[str, int] = field(default_factory=dict)  # "notin": domain -> n
    excl: dict[str, dict[str, int]] = field(default_factory=dict)  # "notin": v -> domain -> n


def _group_key(term: _Term, label_key: str) -> tuple[Any, ...]:
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
        self._order: list[str] = []  # node names, for O(1) random access in rotation
        self._order_pos: dict[str, int] = {}
        self._nodes_by_label: dict[tuple[str, str], dict[str, None]] = {}
        self._pods: dict[str, _PodRecord] = {}
        self._waiting: dict[str, dict[str, None]] = {}  # node name -> pods bound to it, unknown
        self._pods_by_ns: dict[str, dict[str, None]] = {}
        self._pods_by_key: dict[tuple[str, str], dict[str, None]] = {}
        self._pods_by_label: dict[tuple[str, str, str], dict[str, None]] = {}
        self._label_values: dict[tuple[str, str], dict[str, int]] = {}
        self._topology: dict[str, _TopologyIndex] = {}
        self._anti_entries: dict[_Term, _AntiEntry] = {}  # terms of no special shape
        self._anti_buckets: dict[tuple[str, ...], dict[_Term, None]] = {}
        self._anti_groups: dict[tuple[Any, ...], _AntiGroup] = {}

    # -- nodes ------------------------------------------------------------------------------

    def add_node(self, node: dict[str, Any]) -> None:
        """Add or update a node. A label change re-files the node's pods under their new
        topology domains."""
        info = NodeInfo(node)
        name = info.name
        old = self.nodes.get(name)
        if old is None:
            self.nodes[name] = info
            self._order_pos[name] = len(self._order)
            self._order.append(name)
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
        last = self._order.pop()
        if last != name:
            self._order[pos] = last
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
        if key in self._pods:
            self._remove_key(key)
        spec = pod.get("spec") or {}
        node_name = spec.get("nodeName")
        phase = (pod.get("status") or {}).get("phase")
        if not node_name or phase in ("Succeeded", "Failed"):
            return
        meta = pod.get("metadata") or {}
        requests = pod_requests(pod)
        requests["pods"] = 1
        rec = _PodRecord(
            key=key,
            pod=pod,
            namespace=str(meta.get("namespace") or "default"),
            labels=_str_map(meta.get("labels")),
            node_name=str(node_name),
            requests=requests,
            nonzero_cpu=requests.get("cpu") or _NONZERO_CPU_MILLI,
            nonzero_memory=requests.get("memory") or _NONZERO_MEMORY,
            anti_terms=_required_terms(pod, "podAntiAffinity"),
        )
        self._pods[key] = rec
        ns = rec.namespace
        self._pods_by_ns.setdefault(ns, {})[key] = None
        for k, v in rec.labels.items():
            self._pods_by_key.setdefault((ns, k), {})[key] = None
            self._pods_by_label.setdefault((ns, k, v), {})[key] = None
            values = self._label_values.setdefault((ns, k), {})
            values[v] = values.get(v, 0) + 1
        for term in rec.anti_terms:
            if _single_key_shape(term.selector) is not None:
                continue
            entry = self._anti_entries.get(term)
            if entry is None:
                entry = self._anti_entries[term] = _AntiEntry(term)
                self._anti_buckets.setdefault(_anti_guard(term.selector), {})[term] = None
            entry.owners += 1
        info = self.nodes.get(rec.node_name)
        if info is not None:
            self._attach(rec, info)
        else:
            self._waiting.setdefault(rec.node_name, {})[key] = None

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
        for k, v in rec.labels.items():
            _discard(self._pods_by_key, (ns, k), key)
            _discard(self._pods_by_label, (ns, k, v), key)
            _bump(self._label_values, (ns, k), v, -1)
        for term in rec.anti_terms:
            if _single_key_shape(term.selector) is not None:
                continue
            entry = self._anti_entries[term]
            entry.owners -= 1
            if entry.owners <= 0:
                del self._anti_entries[term]
                _discard(self._anti_buckets, _anti_guard(term.selector), term)

    def _attach(self, rec: _PodRecord, info: NodeInfo) -> None:
        rec.attached = True
        info.pods.append(rec.pod)
        _add_into(info.requested, rec.requests)
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
        info.pods = [p for p in info.pods if _pod_key(p) != rec.key]
        for name, v in rec.requests.items():
            left = info.requested.get(name, 0) - v
            if left > 0:
                info.requested[name] = left
            else:
                info.requested.pop(name, None)
        info.nonzero_cpu -= rec.nonzero_cpu
        info.nonzero_memory -= rec.nonzero_memory
        for key, topo in self._topology.items():
            domain = info.labels.get(key)
            if domain is not None:
                self._count_in_topology(topo, rec, domain, -1)
        for term, domain in rec.anti_domains:
            self._count_anti(term, domain, -1)
        rec.anti_domains.clear()

    def _count_anti(self, term: _Term, domain: str, delta: int) -> None:
        shape = _single_key_shape(term.selector)
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

    def _namespaces_of(self, term: _Term) -> Iterable[str]:
        if term.all_namespaces or term.ns_selector is not None:
            return [ns for ns in self._pods_by_ns if term.namespace_matches(ns)]
        return term.namespaces

    def _term_counts(self, term: _Term) -> _DomainCount:
        """Per domain of the term's topology key: are there bound pods the term selects?"""
        keys = {r[0] for r in term.selector}
        if len(keys) > 1:
            found: set[str] = set()
            for rec in self._records_matching([term]):
                domain = self.nodes[rec.node_name].labels.get(term.topology_key)
                if domain is not None:
                    found.add(domain)
            return _DomainCount(fixed=found)
        topo = self._topology_index(term.topology_key)
        pos: list[Mapping[str, int]] = []
        neg: list[Mapping[str, int]] = []
        for ns in self._namespaces_of(term):
            if not term.selector:
                pos.append(topo.by_ns.get(ns, _EMPTY))
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
                    pos.extend(topo.by_label.get((ns, key, v), _EMPTY) for v in in_values - not_in)
                else:
                    pos.append(topo.by_key.get((ns, key), _EMPTY))
                    neg.extend(topo.by_label.get((ns, key, v), _EMPTY) for v in not_in)
            else:  # only NotIn / DoesNotExist: pods without the label match too
                pos.append(topo.by_ns.get(ns, _EMPTY))
                if absent:
                    neg.append(topo.by_key.get((ns, key), _EMPTY))
                else:
                    neg.extend(topo.by_label.get((ns, key, v), _EMPTY) for v in not_in)
        return _DomainCount(pos, neg)

    def _records_matching(self, terms: list[_Term]) -> Iterable[_PodRecord]:
        """Bound pods matching every term, drawn from the narrowest label index of the first."""
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

    def _existing_anti_affinity(
        self, ns: str, labels: Mapping[str, str]
    ) -> list[tuple[str, _DomainCount]]:
        """(topology key, counts) pairs marking the domains the incoming pod may not enter
        because a pod already there has a required anti-affinity term selecting it (the
        symmetric half of anti-affinity)."""
        out: list[tuple[str, _DomainCount]] = []
        for group in self._anti_groups.values():
            value = labels.get(group.label_key)
            if value is None or not group.sample.namespace_matches(ns):
                continue
            key = group.sample.topology_key
            by_value = group.by_value.get(value)
            if by_value:
                out.append((key, _DomainCount([by_value])))
            if group.agg:
                out.append((key, _DomainCount([group.agg], [group.excl.get(value, _EMPTY)])))
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
        out.extend((key, _DomainCount(fixed=domains)) for key, domains in fixed.items())
        return out

    def nodes_with_label(self, key: str, value: str) -> list[str]:
        """Names of nodes labelled key=value, in insertion order."""
        return list(self._nodes_by_label.get((key, value), ()))


def _discard(index: dict[Any, dict[Any, None]], key: Any, member: Any) -> None:
    group = index.get(key)
    if group is not None:
        group.pop(member, None)
        if not group:
            del index[key]


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


# Resource check order of NodeResourcesFit, so messages list reasons as kube-scheduler does.
_RESOURCE_ORDER: Final = ("pods", "cpu", "memory", "ephemeral-storage")


class _PodContext:
    """Everything about the incoming pod that the per-node filter needs, computed once."""

    def __init__(self, pod: Mapping[str, Any], snap: ClusterSnapshot) -> None:
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        self.namespace = str(meta.get("namespace") or "default")
        self.labels = _str_map(meta.get("labels"))
        req = pod_requests(pod)
        req["pods"] = 1
        ordered: list[str] = [n for n in _RESOURCE_ORDER if n in req]
        ordered += sorted(n for n in req if n not in _RESOURCE_ORDER)
        self.requests = [(n, req[n]) for n in ordered]
        self.nonzero_cpu = req.get("cpu") or _NONZERO_CPU_MILLI
        self.nonzero_memory = req.get("memory") or _NONZERO_MEMORY
        self.scored_extended = [n for n, _ in self.requests if n not in ("pods", "cpu", "memory")]

        self.node_selector = list(_str_map(spec.get("nodeSelector")).items())
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
        self.tolerates_unschedulable = self._tolerates(_UNSCHEDULABLE_TAINT, "", "NoSchedule")

        # Required pod affinity: per term, the domains that already hold a pod matching *all*
        # terms (kube-scheduler's affinityCounts), plus its first-pod-of-a-group exception.
        self.affinity = _required_terms(pod, "podAffinity")
        self.allowed: list[_DomainCount] = []
        if len(self.affinity) == 1:
            self.allowed = [snap._term_counts(self.affinity[0])]
        elif self.affinity:
            found: list[set[str]] = [set() for _ in self.affinity]
            for rec in snap._records_matching(self.affinity):
                node_labels = snap.nodes[rec.node_name].labels
                for i, term in enumerate(self.affinity):
                    domain = node_labels.get(term.topology_key)
                    if domain is not None:
                        found[i].add(domain)
            self.allowed = [_DomainCount(fixed=f) for f in found]
        self.first_of_group = not any(a.any() for a in self.allowed) and all(
            t.matches(self.namespace, self.labels) for t in self.affinity
        )
        self.anti = [
            (t.topology_key, snap._term_counts(t)) for t in _required_terms(pod, "podAntiAffinity")
        ]
        self.anti_checks = [(k, c) for k, c in self.anti if c.fixed or c.pos]
        self.existing_anti = snap._existing_anti_affinity(self.namespace, self.labels)

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
                return [f"node(s) had untolerated taint {{{key}: {value}}}"]
        labels = info.labels
        for k, v in self.node_selector:
            if labels.get(k) != v:
                return [_MSG_NODE_AFFINITY]
        if self.node_terms is not None and not any(
            _node_term_matches(t, labels, info.name) for t in self.node_terms
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
        req = dict(self.requests)
        for name in self.scored_extended:
            cap = alloc.get(name, 0)
            used = info.requested.get(name, 0) + req[name]
            total += (cap - used) * 100 // cap if cap > 0 and used <= cap else 0
            count += 1
        return total // count

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


def schedule(
    pod: dict[str, Any],
    snap: ClusterSnapshot,
    rng: random.Random,
    *,
    nodes_to_score: int | None = None,
) -> tuple[str | None, str]:
    """Pick a node for `pod`: (node name, "") or (None, the PodScheduled=False message).

    Filters as kube-scheduler's default profile; among feasible nodes (sampled in a random
    rotation like `percentageOfNodesToScore`) the least allocated wins, ties broken by `rng`
    so runs are reproducible per seed. A pod that is already bound is returned as is; callers
    should pick pods with `needs_scheduling()`. `nodes_to_score` overrides how many feasible
    nodes are compared (default: kube-scheduler's adaptive count, capped at
    MAX_NODES_TO_SCORE).
    """
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"]), ""
    if spec.get("schedulingGates"):
        return None, SCHEDULING_GATED_MESSAGE
    if not snap.nodes:
        return None, NO_NODES_MESSAGE
    ctx = _PodContext(pod, snap)
    order = snap._order
    narrowed = ctx.candidates(snap)
    names = order if narrowed is None else narrowed
    wanted = nodes_to_score or min(num_feasible_nodes_to_find(len(order)), MAX_NODES_TO_SCORE)
    feasible: list[NodeInfo] = []
    n = len(names)
    if n:
        start = rng.randrange(n)
        nodes = snap.nodes
        for i in range(n):
            info = nodes[names[(start + i) % n]]
            if ctx.reasons(info) is None:
                feasible.append(info)
                if len(feasible) >= wanted:
                    break
    if not feasible:
        return None, _diagnose(ctx, snap)
    best_score = -1
    best: list[str] = []
    for info in feasible:
        s = ctx.score(info)
        if s > best_score:
            best_score, best = s, [info.name]
        elif s == best_score:
            best.append(info.name)
    return (best[0] if len(best) == 1 else rng.choice(best)), ""


def _diagnose(ctx: _PodContext, snap: ClusterSnapshot) -> str:
    """The FitError message: every node's reasons counted, sorted as strings (like
    `sort.Strings` in kube-scheduler), e.g. "0/16 nodes are available: 12 Insufficient
    nvidia.com/gpu, 4 node(s) didn't match Pod's node affinity/selector."."""
    histogram: dict[str, int] = {}
    for info in snap.nodes.values():
        for reason in ctx.reasons(info) or ():
            histogram[reason] = histogram.get(reason, 0) + 1
    parts = sorted(f"{count} {reason}" for reason, count in histogram.items())
    message = f"0/{len(snap.nodes)} nodes are available"
    return f"{message}: {', '.join(parts)}." if parts else f"{message}."
