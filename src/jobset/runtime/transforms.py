"""Ready-made cache transforms for built-in kinds (see `cache.py` for the contract).

`slim_job` is what a generic controller of Jobs keeps: everything a reconcile of the owner
may read (metadata, labels, annotations, owner references, the Job's counts/flags and its
whole status) and not what it never reads: the pod template's spec (containers, volumes,
env - usually most of a Job's bytes), `managedFields`, and kubectl's last-applied
annotation. A controller that knows exactly what it reads can go much further (the JobSet
controller's own `slim_job` keeps about a tenth of this), using `Interner` to share what
its records have in common.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Final, TypeVar

from jobset.runtime.cache import Object

__all__ = ["LAST_APPLIED", "Interner", "slim_job", "slim_metadata"]

LAST_APPLIED: Final = "kubectl.kubernetes.io/last-applied-configuration"

V = TypeVar("V")


def slim_metadata(obj: Object) -> Object:
    meta: dict[str, Any] = obj.get("metadata") or {}
    meta.pop("managedFields", None)
    annotations = meta.get("annotations")
    if annotations and LAST_APPLIED in annotations:
        annotations.pop(LAST_APPLIED)
    return obj


def slim_job(obj: Object) -> Object:
    slim_metadata(obj)
    template = (obj.get("spec") or {}).get("template")
    if isinstance(template, dict):
        template.pop("spec", None)  # keeps template.metadata: labels/annotations are small
    return obj


class Interner:
    """One shared copy of equal values held by many cached objects.

    Cached objects are read-only by contract (see `cache.py`), so equal parts of different
    objects can be one object: the owner reference every child of a JobSet carries, the
    status `{"active": 1, "ready": 1}` of every running Job, a namespace or label value
    repeated 50,000 times. orjson shares dict keys but builds every value anew, so without
    this each Job pays again for each of them.

    `str()` shares strings; `shared(key, build)` the value built for a hashable key the
    caller derives from the value's content (cheaper than hashing the value generically,
    and the caller knows which JSON types can meet: `True == 1` in a generic key). The
    table is bounded: past `max_entries` distinct values it starts over, which costs only
    sharing (values already handed out stay valid). Pass unique values (a Job's name or
    uid) not at all: sharing them saves nothing and costs a table entry each.
    """

    def __init__(self, max_entries: int = 1 << 15) -> None:
        self.max_entries = max_entries
        self._table: dict[Hashable, Any] = {}

    def str(self, value: str) -> str:
        found: str | None = self._table.get(value)
        if found is not None:
            return found
        self._remember(value, value)
        return value

    def shared(self, key: Hashable, build: Callable[[], V]) -> V:
        found: V | None = self._table.get(key)
        if found is not None:
            return found
        value = build()
        self._remember(key, value)
        return value

    def _remember(self, key: Hashable, value: Any) -> None:
        if len(self._table) >= self.max_entries:
            self._table.clear()
        self._table[key] = value

    def __len__(self) -> int:
        return len(self._table)
