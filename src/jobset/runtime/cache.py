"""The informer's local store: objects by key, secondary indexes, and object transforms.

client-go's `cache.Indexer` (a thread-safe store plus `Indexers`) and
`SharedIndexInformer.SetTransform`. Reads never touch the API server: reconcilers read
everything from here. Objects are shared, not copied, on every read (as in client-go):
callers must treat them as read-only and copy before changing one.

A transform runs on every object before it is stored (and before handlers see it), so each
kind can keep only what reconcile reads - e.g. drop `metadata.managedFields` and the pod
template of a Job. It must be deterministic and must keep `metadata.name`, `namespace`,
`uid`, `resourceVersion` and `ownerReferences` (keys and owner indexes use them).
"""

from __future__ import annotations

import builtins
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

__all__ = [
    "BY_CONTROLLER_UID",
    "BY_NAMESPACE",
    "ChangeListener",
    "IndexFunc",
    "Indexer",
    "Store",
    "Transform",
    "chain",
    "controller_of",
    "deep_sizeof",
    "drop_fields",
    "index_by_controller_owner",
    "index_by_controller_uid",
    "index_by_namespace",
    "object_key",
    "owner_key",
    "split_key",
    "strip_managed_fields",
]

Object = dict[str, Any]
IndexFunc = Callable[[Object], Sequence[str]]
Transform = Callable[[Object], Object]
# (key, the object before, the object after): None for "absent" (`Store.add_listener`).
ChangeListener = Callable[[str, Object | None, Object | None], None]

BY_NAMESPACE: Final = "namespace"
BY_CONTROLLER_UID: Final = "controller-uid"


def object_key(obj: Mapping[str, Any]) -> str:
    """client-go's MetaNamespaceKeyFunc: `namespace/name`, or `name` when cluster-scoped."""
    meta = obj["metadata"]
    ns = meta.get("namespace")
    return f"{ns}/{meta['name']}" if ns else str(meta["name"])


def split_key(key: str) -> tuple[str, str]:
    """(namespace, name) of a key; namespace is "" for cluster-scoped objects."""
    ns, sep, name = key.partition("/")
    return (ns, name) if sep else ("", ns)


def controller_of(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ownerReference with `controller: true`, if any (metav1.GetControllerOf)."""
    for ref in obj.get("metadata", {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref  # type: ignore[no-any-return]
    return None


def index_by_namespace(obj: Object) -> Sequence[str]:
    ns = obj["metadata"].get("namespace")
    return (ns,) if ns else ()


def index_by_controller_uid(obj: Object) -> Sequence[str]:
    ref = controller_of(obj)
    return (str(ref["uid"]),) if ref and ref.get("uid") else ()


def owner_key(namespace: str, uid: str) -> str:
    """The value `index_by_controller_owner` files an object under: its owner's namespace
    (the object's own: owner references never cross namespaces) and UID."""
    return f"{namespace}/{uid}"


def index_by_controller_owner(group: str, kind: str) -> IndexFunc:
    """An index of objects by their controller owner of one kind and API group, in their own
    namespace (`owner_key`). Upstream's controllers list children by controller owner within
    the owner's namespace and check the owner's APIVersion and Kind: a UID alone is not
    enough, since anyone who can write an object may put any UID in its ownerReferences."""

    def index(obj: Object) -> Sequence[str]:
        ref = controller_of(obj)
        if ref is None or ref.get("kind") != kind or not ref.get("uid"):
            return ()
        ref_group, _, _ = str(ref.get("apiVersion") or "").rpartition("/")
        if ref_group != group:
            return ()
        return (owner_key(str(obj["metadata"].get("namespace") or ""), str(ref["uid"])),)

    return index


# ---------------------------------------------------------------------- transforms


def drop_fields(*paths: str) -> Transform:
    """A transform removing dotted paths (`metadata.managedFields`, `spec.template`)."""
    split = [tuple(p.split(".")) for p in paths]

    def transform(obj: Object) -> Object:
        for path in split:
            parent: Any = obj
            for part in path[:-1]:
                parent = parent.get(part) if isinstance(parent, dict) else None
                if parent is None:
                    break
            if isinstance(parent, dict):
                parent.pop(path[-1], None)
        return obj

    return transform


strip_managed_fields: Final = drop_fields("metadata.managedFields")


def chain(*transforms: Transform) -> Transform:
    def transform(obj: Object) -> Object:
        for t in transforms:
            obj = t(obj)
        return obj

    return transform


def deep_sizeof(obj: object, seen: set[int] | None = None) -> int:
    """Bytes held by a parsed JSON value: every dict, list, str, number counted once.

    Pass the same `seen` set across many objects to count shared objects (e.g. the dict
    keys orjson caches and reuses) once, as the process really holds them. Used to check
    transforms and by the cache-memory benchmark.
    """
    seen = set() if seen is None else seen
    total = 0
    stack = [obj]
    while stack:
        o = stack.pop()
        if id(o) in seen:
            continue
        seen.add(id(o))
        total += sys.getsizeof(o)
        if isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, list | tuple):
            stack.extend(o)
    return total


# ---------------------------------------------------------------------- store


class Store:
    """Objects by key with secondary indexes (`cache.Indexer`); single event-loop use."""

    def __init__(self, indexers: Mapping[str, IndexFunc] | None = None) -> None:
        self._items: dict[str, Object] = {}
        self._indexers: dict[str, IndexFunc] = dict(indexers or {})
        # index name -> indexed value -> keys
        self._indices: dict[str, dict[str, set[str]]] = {n: {} for n in self._indexers}
        self._listeners: list[ChangeListener] = []

    def add_listener(self, listener: ChangeListener) -> None:
        """Call `listener(key, old, new)` after every write: `put` (old None for a new key)
        and `remove` of a key held (new None). For whoever keeps something derived from
        the store up to date write by write; it must be cheap and must not write here."""
        self._listeners.append(listener)

    # -- writes (the informer's) ------------------------------------------------

    def has_indexer(self, name: str) -> bool:
        """Whether an index of this name exists (client-go's `GetIndexers()` lookup)."""
        return name in self._indexers

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        for name, fn in indexers.items():
            if name in self._indexers:
                raise ValueError(f"indexer {name!r} already exists")
            self._indexers[name] = fn
            index: dict[str, set[str]] = {}
            for key, obj in self._items.items():
                for value in fn(obj):
                    index.setdefault(value, set()).add(key)
            self._indices[name] = index

    def put(self, key: str, obj: Object) -> Object | None:
        """Insert or replace; returns the previous object."""
        old = self._items.get(key)
        if old is not None:
            self._unindex(key, old)
        self._items[key] = obj
        for name, fn in self._indexers.items():
            index = self._indices[name]
            for value in fn(obj):
                index.setdefault(value, set()).add(key)
        for listener in self._listeners:
            listener(key, old, obj)
        return old

    def remove(self, key: str) -> Object | None:
        old = self._items.pop(key, None)
        if old is not None:
            self._unindex(key, old)
            for listener in self._listeners:
                listener(key, old, None)
        return old

    def _unindex(self, key: str, obj: Object) -> None:
        for name, fn in self._indexers.items():
            index = self._indices[name]
            for value in fn(obj):
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]

    # -- reads -------------------------------------------------------------------

    def get(self, key: str) -> Object | None:
        return self._items.get(key)

    def get_by_name(self, namespace: str | None, name: str) -> Object | None:
        return self._items.get(f"{namespace}/{name}" if namespace else name)

    def keys(self) -> list[str]:
        return list(self._items)

    def items(self) -> Iterator[tuple[str, Object]]:
        return iter(list(self._items.items()))

    def list(self, namespace: str | None = None) -> list[Object]:
        if namespace is None:
            return list(self._items.values())
        if BY_NAMESPACE in self._indices:
            return self.by_index(BY_NAMESPACE, namespace)
        return [o for o in self._items.values() if o["metadata"].get("namespace") == namespace]

    def by_index(self, index: str, value: str) -> builtins.list[Object]:
        try:
            keys = self._indices[index].get(value, ())
        except KeyError:
            raise KeyError(f"no indexer named {index!r}") from None
        return [self._items[k] for k in keys]

    def index_keys(self, index: str, value: str) -> builtins.list[str]:
        return list(self._indices[index].get(value, ()))

    def index_values(self, index: str) -> Iterable[str]:
        return list(self._indices[index])

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items


Indexer = Store
