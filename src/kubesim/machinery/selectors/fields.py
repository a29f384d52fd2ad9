"""Field selectors, as `k8s.io/apimachinery/pkg/fields` parses them, and which fields each
built-in type (and a CRD's `selectableFields`) lets a client select on.

`FieldSpec` says where a field's value lives in the JSON object; `field_selectors_for` is the
set a resource accepts; `FieldSelector` parses `a=b,c!=d` terms (with upstream's escaping) and
matches objects.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubesim.machinery.errors import bad_request

__all__ = ["FieldSelector", "FieldSpec", "SelectableFields", "field_selectors_for"]

# --------------------------------------------------------------------------------------------
# Field selectors


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """Where a selectable field's value lives in the JSON object.

    `paths` are tried in order and the first non-empty value wins (upstream computes some
    fields with a fallback, e.g. an Event's `source` falls back to its reporting controller).
    `default` is what upstream reports when the Go field holds its zero value, which JSON
    omits: `spec.hostNetwork` is "false" and `status.successful` is "0", never "".
    """

    paths: tuple[tuple[str | int, ...], ...]
    default: str = ""


def _spec(*paths: str, default: str = "") -> FieldSpec:
    return FieldSpec(
        tuple(tuple(int(p) if p.isdigit() else p for p in path.split(".")) for path in paths),
        default,
    )


class SelectableFields(frozenset[str]):
    """The field labels a resource accepts, plus where each one is found in an object.

    It is a frozenset so callers can test membership and list it; `FieldSelector.parse` also
    reads `specs` to resolve computed fields. A plain set of names is accepted too: each name
    is then looked up as a dotted path.
    """

    specs: Mapping[str, FieldSpec]

    def __new__(cls, specs: Mapping[str, FieldSpec]) -> SelectableFields:
        self = super().__new__(cls, specs.keys())
        self.specs = dict(specs)
        return self


_META: Final[dict[str, FieldSpec]] = {
    "metadata.name": _spec("metadata.name"),
    "metadata.namespace": _spec("metadata.namespace"),
}

_INVOLVED = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")

# Keyed by (group, plural). The events paths accept either API shape because the simulated
# store may keep events in either version; each selector reads the version it was sent for.
_BUILTIN_FIELDS: Final[dict[tuple[str, str], dict[str, FieldSpec]]] = {
    ("", "pods"): {
        "spec.nodeName": _spec("spec.nodeName"),
        "spec.restartPolicy": _spec("spec.restartPolicy"),
        "spec.schedulerName": _spec("spec.schedulerName"),
        "spec.serviceAccountName": _spec("spec.serviceAccountName"),
        "spec.hostNetwork": _spec("spec.hostNetwork", default="false"),
        "status.phase": _spec("status.phase"),
        "status.podIP": _spec("status.podIP", "status.podIPs.0.ip"),
        "status.nominatedNodeName": _spec("status.nominatedNodeName"),
    },
    ("", "events"): {
        **{
            f"involvedObject.{f}": _spec(f"involvedObject.{f}", f"regarding.{f}") for f in _INVOLVED
        },
        "reason": _spec("reason"),
        "reportingComponent": _spec("reportingComponent", "reportingController"),
        "source": _spec(
            "source.component",
            "deprecatedSource.component",
            "reportingComponent",
            "reportingController",
        ),
        "type": _spec("type"),
    },
    ("events.k8s.io", "events"): {
        **{f"regarding.{f}": _spec(f"regarding.{f}", f"involvedObject.{f}") for f in _INVOLVED},
        "reason": _spec("reason"),
        "reportingController": _spec("reportingController", "reportingComponent"),
        "source": _spec(
            "deprecatedSource.component",
            "source.component",
            "reportingController",
            "reportingComponent",
        ),
        "type": _spec("type"),
    },
    ("", "secrets"): {"type": _spec("type")},
    ("", "nodes"): {"spec.unschedulable": _spec("spec.unschedulable", default="false")},
    ("", "namespaces"): {"status.phase": _spec("status.phase")},
    ("", "services"): {"spec.clusterIP": _spec("spec.clusterIP"), "spec.type": _spec("spec.type")},
    ("", "replicationcontrollers"): {"status.replicas": _spec("status.replicas", default="0")},
    ("batch", "jobs"): {"status.successful": _spec("status.succeeded", default="0")},
    ("apps", "replicasets"): {"status.replicas": _spec("status.replicas", default="0")},
    ("extensions", "replicasets"): {"status.replicas": _spec("status.replicas", default="0")},
    ("certificates.k8s.io", "certificatesigningrequests"): {
        "spec.signerName": _spec("spec.signerName")
    },
}

# Singular kind names (lowercased) for callers that pass a Kind instead of a plural.
_KIND_TO_PLURAL: Final[dict[str, str]] = {
    "pod": "pods",
    "event": "events",
    "secret": "secrets",
    "node": "nodes",
    "namespace": "namespaces",
    "service": "services",
    "replicationcontroller": "replicationcontrollers",
    "job": "jobs",
    "replicaset": "replicasets",
    "certificatesigningrequest": "certificatesigningrequests",
}


@functools.lru_cache(maxsize=1024)
def _fields_for(group: str, plural: str, extra: tuple[str, ...]) -> SelectableFields:
    specs: dict[str, FieldSpec] = dict(_META)
    specs.update(_BUILTIN_FIELDS.get((group, plural), {}))
    for field in extra:
        specs.setdefault(field, _spec(field))
    return SelectableFields(specs)


def field_selectors_for(
    group: str, kind: str, selectable_fields: Iterable[str] = ()
) -> SelectableFields:
    """The field labels kube-apiserver accepts in a fieldSelector for this resource.

    `kind` may be the plural (`pods`) or the Kind (`Pod`); `group` is "" (or "core") for the
    legacy group. Every resource accepts `metadata.name` and `metadata.namespace`; custom
    resources accept those plus the CRD's `selectableFields` (their `jsonPath`s, with or
    without the leading dot).
    """
    g = "" if group in ("core", "v1") else group
    k = kind.lower()
    plural = _KIND_TO_PLURAL.get(k, k)
    extra = tuple(sorted({f.lstrip(".") for f in selectable_fields if f.lstrip(".")}))
    return _fields_for(g, plural, extra)


def _lookup(obj: Mapping[str, Any], spec: FieldSpec) -> str:
    for path in spec.paths:
        cur: Any = obj
        for part in path:
            if isinstance(part, int):
                if isinstance(cur, list) and 0 <= part < len(cur):
                    cur = cur[part]
                else:
                    cur = None
                    break
            elif isinstance(cur, Mapping):
                cur = cur.get(part)
            else:
                cur = None
                break
        text = _field_text(cur)
        if text:
            return text
    return spec.default


def _field_text(v: Any) -> str:
    """Render a JSON scalar the way upstream's field sets do (strconv.FormatBool / Itoa)."""
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() else repr(v)
    return ""


def _unescape(value: str) -> str:
    """Upstream `fields.UnescapeValue`: `\\\\`, `\\,` and `\\=` are the only escapes."""
    if "\\" not in value and "," not in value and "=" not in value:
        return value
    out: list[str] = []
    in_slash = False
    for c in value:
        if in_slash:
            if c not in "\\,=":
                raise bad_request(f"invalid field selector: invalid escape sequence: \\{c}")
            out.append(c)
            in_slash = False
        elif c == "\\":
            in_slash = True
        elif c in ",=":
            raise bad_request(f"invalid field selector: unescaped character in value: {ord(c)}")
        else:
            out.append(c)
    if in_slash:
        raise bad_request("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def _split_terms(s: str) -> list[str]:
    """Split on commas that are not escaped with a backslash."""
    terms: list[str] = []
    start = 0
    escaped = False
    for i, c in enumerate(s):
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c == ",":
            terms.append(s[start:i])
            start = i + 1
    terms.append(s[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    """The first operator in the term, trying `!=` then `==` then `=` at each position."""
    for i in range(len(term)):
        for op in ("!=", "==", "="):
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op) :]
    return None


@dataclass(frozen=True, slots=True)
class FieldTerm:
    """One `field=value` or `field!=value` clause."""

    field: str
    negated: bool
    value: str

    def __str__(self) -> str:
        v = self.value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")
        return f"{self.field}{'!=' if self.negated else '='}{v}"


class FieldSelector:
    """A parsed field selector, matched against raw JSON objects."""

    __slots__ = ("_compiled", "_terms")

    def __init__(
        self, terms: Iterable[FieldTerm] = (), specs: Mapping[str, FieldSpec] | None = None
    ) -> None:
        self._terms = tuple(sorted(terms, key=lambda t: (t.field, t.negated, t.value)))
        specs = specs or {}
        self._compiled = tuple(
            (specs.get(t.field) or _spec(t.field), t.negated, t.value) for t in self._terms
        )

    @staticmethod
    def parse(s: str, allowed: Collection[str]) -> FieldSelector:
        """Parse the `fieldSelector` query parameter.

        A field that the resource does not support is rejected with upstream's 400
        `field label not supported: <field>`; pass `field_selectors_for(...)` as `allowed`
        so computed fields (an Event's `source`, a Job's `status.successful`) resolve.
        """
        if not s:
            return _ALL_FIELDS
        terms: list[FieldTerm] = []
        for part in sorted(_split_terms(s)):
            if part == "":
                continue
            split = _split_term(part)
            if split is None:
                raise bad_request(f"invalid selector: '{s}'; can't understand '{part}'")
            lhs, op, rhs = split
            value = _unescape(rhs)
            if lhs not in allowed:
                raise bad_request(f"field label not supported: {lhs}")
            terms.append(FieldTerm(lhs, op == "!=", value))
        if not terms:
            return _ALL_FIELDS
        specs = allowed.specs if isinstance(allowed, SelectableFields) else None
        return FieldSelector(terms, specs)

    @property
    def terms(self) -> tuple[FieldTerm, ...]:
        return self._terms

    def empty(self) -> bool:
        return not self._terms

    def exact(self, field: str) -> str | None:
        """The value required by a `field=value` term, if any.

        Lets the store answer `metadata.name=x` (what client-go sends to watch one object) or
        `spec.nodeName=n` from an index instead of scanning.
        """
        for t in self._terms:
            if t.field == field and not t.negated:
                return t.value
        return None

    def matches(self, obj: Mapping[str, Any]) -> bool:
        for spec, negated, value in self._compiled:
            if (_lookup(obj, spec) == value) == negated:
                return False
        return True

    def __str__(self) -> str:
        return ",".join(str(t) for t in self._terms)

    def __repr__(self) -> str:
        return f"FieldSelector({str(self)!r})"


_ALL_FIELDS: Final = FieldSelector()
