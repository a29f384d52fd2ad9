"""Label selectors, node affinity terms and pod (anti-)affinity terms, compiled once per pod, and the
per-topology-domain counts (`DomainCount`) that answer pod affinity terms without visiting pods.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

_NS_NAME_LABEL: Final = "kubernetes.io/metadata.name"


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


def node_term_matches(term: Any, labels: Mapping[str, str], name: str) -> bool:
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
class Term:
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


def _compile_term(term: Any, owner_ns: str, owner_labels: Mapping[str, str]) -> Term | None:
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
    return Term(selector, str(topology_key), namespaces, ns_selector, all_namespaces)


def required_terms(pod: Mapping[str, Any], kind: str) -> list[Term]:
    spec = pod.get("spec") or {}
    affinity = spec.get("affinity") or {}
    section = affinity.get(kind) or {} if isinstance(affinity, Mapping) else {}
    raw = section.get("requiredDuringSchedulingIgnoredDuringExecution") or ()
    if not raw:
        return []
    meta = pod.get("metadata") or {}
    ns = str(meta.get("namespace") or "default")
    labels = str_map(meta.get("labels"))
    out: list[Term] = []
    for t in raw if isinstance(raw, list | tuple) else ():
        compiled = _compile_term(t, ns, labels)
        if compiled is not None:
            out.append(compiled)
    return out


def str_map(m: Any) -> dict[str, str]:
    if not isinstance(m, Mapping):
        return {}
    return {str(k): str(v) for k, v in m.items()}


def anti_guard(sel: _Selector) -> tuple[str, ...]:
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
def single_key_shape(sel: _Selector) -> tuple[str, str, frozenset[str]] | None:
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


EMPTY: Final[Mapping[str, int]] = MappingProxyType({})


class DomainCount:
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
# Term counts, for the kube-scheduler cost model (cost.py)


@dataclass(frozen=True)
class PodTerms:
    """How many inter-pod (anti-)affinity terms a pod carries, and whether it constrains nodes:
    what kube-scheduler's `framework.PodInfo` pre-parses and the cost model multiplies by."""

    required_affinity: int = 0
    required_anti_affinity: int = 0
    preferred: int = 0  # preferred podAffinity + podAntiAffinity terms
    node_constraint: bool = False  # nodeSelector or required nodeAffinity: NodeAffinity runs

    @property
    def has_affinity(self) -> bool:
        """In kube-scheduler's `NodeInfo.PodsWithAffinity` (any pod (anti-)affinity term)."""
        return bool(self.required_affinity or self.required_anti_affinity or self.preferred)


NO_TERMS: Final = PodTerms()


def _list_len(section: Any, field: str) -> int:
    if not isinstance(section, Mapping):
        return 0
    raw = section.get(field)
    return len(raw) if isinstance(raw, list | tuple) else 0


def pod_terms(pod: Mapping[str, Any]) -> PodTerms:
    """Count a pod's terms from its spec as written (upstream counts every listed term)."""
    spec = pod.get("spec") or {}
    affinity = spec.get("affinity")
    if not isinstance(affinity, Mapping):
        affinity = {}
    node_aff = affinity.get("nodeAffinity")
    node_constraint = bool(spec.get("nodeSelector")) or (
        isinstance(node_aff, Mapping)
        and node_aff.get("requiredDuringSchedulingIgnoredDuringExecution") is not None
    )
    pa, anti = affinity.get("podAffinity"), affinity.get("podAntiAffinity")
    required, preferred = (
        "requiredDuringSchedulingIgnoredDuringExecution",
        "preferredDuringSchedulingIgnoredDuringExecution",
    )
    terms = PodTerms(
        required_affinity=_list_len(pa, required),
        required_anti_affinity=_list_len(anti, required),
        preferred=_list_len(pa, preferred) + _list_len(anti, preferred),
        node_constraint=node_constraint,
    )
    return NO_TERMS if terms == NO_TERMS else terms
