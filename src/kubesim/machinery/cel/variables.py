"""`LazyVariables`: CEL variables whose JSON values are converted only when an expression
reads them.

Converting a JSON object to CEL values (`celpy.adapter.json_to_cel`) builds a CEL value for
every field; for a Pod that is most of the cost of evaluating a webhook's matchCondition
(`request.operation == 'CREATE' || ...` never reads `object` on a create, yet the whole pod
was converted for it). cel-go, which kube-apiserver uses, wraps unstructured objects lazily
too (`UnstructuredToVal`), so an expression costs what it reads.

It is a `dict` (what `K8sEvaluator` keeps its scope in): names bound or already converted
are plain entries; `get` converts a pending JSON value on first use and keeps it. A field
path on a pending variable (`oldObject.metadata.labels`) is converted alone, without the
rest of the object (`pending`, read by `K8sEvaluator.member_dot`): converting JSON is
structural, so the value is the same. `copy()` keeps the pending ones pending (the
evaluator copies its scope for each macro).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from celpy.adapter import json_to_cel

__all__ = ["LazyVariables"]

_MISSING: Any = object()


class LazyVariables(dict[str, Any]):
    """CEL variables from JSON values, each converted on its first lookup."""

    def __init__(
        self,
        pending: Mapping[str, Any],
        convert: Callable[[Any], Any] = json_to_cel,
    ) -> None:
        super().__init__()
        self._pending = dict(pending)
        self._convert = convert

    def get(self, key: str, default: Any = None) -> Any:
        value = dict.get(self, key, _MISSING)
        if value is not _MISSING:
            return value
        raw = self._pending.pop(key, _MISSING)
        if raw is _MISSING:
            return default
        value = self[key] = self._convert(raw)
        return value

    def __missing__(self, key: str) -> Any:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or key in self._pending

    def pending(self, key: str, default: Any = None) -> Any:
        """The JSON value of `key` if it is still unconverted (and not shadowed by a bound
        name), else `default`: `K8sEvaluator` then converts only the field path it reads."""
        if dict.__contains__(self, key):
            return default
        return self._pending.get(key, default)

    def convert(self, raw: Any) -> Any:
        """A JSON value as a CEL value, as the variables' own are converted."""
        return self._convert(raw)

    def copy(self) -> LazyVariables:
        out = LazyVariables(self._pending, self._convert)
        out.update(self)
        return out

    @property
    def converted(self) -> frozenset[str]:
        """The names whose values exist as CEL values (bound, or converted by a lookup)."""
        return frozenset(self.keys())
