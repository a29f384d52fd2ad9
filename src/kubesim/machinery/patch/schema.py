"""What a patch needs to know about a type: `PatchSchema`, a tree of `SchemaNode`s giving each
list's `ListStrategy` (atomic, set, or map with merge keys) and which maps are atomic.

The built-in types' schemas are in `builtin.py`, custom resources' in `crd.py`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

# --------------------------------------------------------------------------------------- schema


class ListStrategy(NamedTuple):
    """How one list field merges.

    `type` is the structured-merge-diff list type used by server-side apply and CRDs:
    "map" (items identified by `keys`), "set" (scalar items identified by value) or "atomic"
    (the list is one value). Strategic merge patch has its own, older vocabulary: `smp_merge`
    says whether the list merges at all and `smp_key` is its `patchMergeKey` (None for a merging
    list of scalars). The two differ for real types -- container ports merge by `containerPort`
    in strategic merge patch but by (containerPort, protocol) in apply; Job conditions merge by
    type in strategic merge patch but are atomic in apply -- which is why both are kept.
    `key_defaults` are the schema defaults of key fields (ports' protocol is "TCP"), which apply
    uses when an item omits a key."""

    type: str = "atomic"
    keys: tuple[str, ...] = ()
    smp_merge: bool = False
    smp_key: str | None = None
    key_defaults: tuple[tuple[str, Any], ...] = ()


ATOMIC_LIST: Final = ListStrategy()


@dataclass(frozen=True, eq=False)
class SchemaNode:
    """The merge-relevant shape of one value: the fields of an object (`fields`, with `elem` for
    map values / additionalProperties), or, for a list, its `list` strategy and `item` shape.
    `atomic` marks objects that are replaced as a whole (`+structType=atomic`,
    `x-kubernetes-map-type: atomic`). Anything the schema does not describe is a granular
    object / atomic list, which is also how Kubernetes treats schema-less data."""

    fields: Mapping[str, SchemaNode] = field(default_factory=dict)
    elem: SchemaNode | None = None
    list: ListStrategy | None = None
    item: SchemaNode | None = None
    atomic: bool = False

    def child(self, name: str) -> SchemaNode:
        node = self.fields.get(name)
        if node is not None:
            return node
        return self.elem if self.elem is not None else UNKNOWN

    @property
    def list_strategy(self) -> ListStrategy:
        return self.list if self.list is not None else ATOMIC_LIST

    @property
    def item_node(self) -> SchemaNode:
        return self.item if self.item is not None else UNKNOWN


UNKNOWN: Final = SchemaNode()


class PatchSchema:
    """Per-path merge semantics of one resource type.

    Paths are field names from the object root with list items skipped, e.g.
    `("spec", "template", "spec", "containers", "env")`. The patch functions themselves walk
    the `SchemaNode` tree directly (cheaper than resolving a path per field)."""

    def __init__(self, root: SchemaNode, name: str = "", *, typed: bool = False) -> None:
        self.root = root
        self.name = name
        # Built-in kinds are Go structs on the real server, whose zero value already has `spec`
        # and `status` objects: a create does not count those as added (no `.` in FieldsV1).
        self.typed = typed

    def node(self, path: Iterable[str]) -> SchemaNode:
        node = self.root
        for name in path:
            while node.list is not None:  # list items are skipped in paths
                node = node.item_node
            node = node.child(name)
        return node

    def list_strategy(self, path: Iterable[str]) -> ListStrategy:
        return self.node(path).list_strategy

    def __call__(self, path: Iterable[str]) -> ListStrategy:
        return self.list_strategy(path)

    def __repr__(self) -> str:
        return f"PatchSchema({self.name!r})"
