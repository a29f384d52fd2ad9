"""Field paths in the FieldsV1 vocabulary (`f:spec`, `k:{"name":"app"}`, `v:...`, `i:0`):
the fields a configuration sets, the fields two objects differ in, and FieldsV1 encoding.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from kubesim.machinery.patch.common import MISSING, FieldPath, JsonDict, PatchError
from kubesim.machinery.patch.schema import ListStrategy, SchemaNode

# ---------------------------------------------------------------------- field paths (FieldsV1)


def go_json(value: Any) -> str:
    """JSON as Go's encoding/json writes it in FieldsV1 keys: compact, HTML characters escaped,
    other non-ASCII characters left as they are."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    for char, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escaped)
    return text


def item_element(item: Any, strategy: ListStrategy) -> str | None:
    """The FieldsV1 path element of a list item: `k:{...}` for map lists (key fields, sorted by
    name, schema defaults filling omitted ones), `v:...` for sets; None if the item has no
    identity (no key field at all, or an object in a set)."""
    if strategy.type == "map":
        if not isinstance(item, dict):
            return None
        defaults = dict(strategy.key_defaults)
        key: JsonDict = {}
        for name in strategy.keys:
            if item.get(name) is not None:
                key[name] = item[name]
            elif name in defaults:
                key[name] = defaults[name]
        return "k:" + go_json(key) if key else None
    if isinstance(item, dict | list) or item is None:
        return None
    return "v:" + go_json(item)


def _list_elements(
    items: Sequence[Any], strategy: ListStrategy
) -> tuple[list[str], dict[str, Any], set[str]] | None:
    """Path elements of all items, the first item per element and the duplicated elements;
    None if some item has no identity, in which case the list can only be handled whole."""
    elements: list[str] = []
    first: dict[str, Any] = {}
    duplicates: set[str] = set()
    for item in items:
        element = item_element(item, strategy)
        if element is None:
            return None
        if element in first:
            duplicates.add(element)
        else:
            first[element] = item
        elements.append(element)
    return elements, first, duplicates


def is_granular_list(value: Any, node: SchemaNode) -> bool:
    return isinstance(value, list) and node.list_strategy.type != "atomic"


def collect_fields(value: Any, node: SchemaNode, prefix: FieldPath, out: set[FieldPath]) -> None:
    """The fields an applied configuration sets, as structured-merge-diff's ToFieldSet: leaves,
    empty objects, atomic objects/lists and list items (`.` of `k:`/`v:` elements); a non-empty
    object is not a member itself, only its contents are. Raises `PatchError` for list items
    without identity or with duplicate keys, which apply rejects."""
    if isinstance(value, dict) and value and not node.atomic:
        for key, sub in value.items():
            collect_fields(sub, node.child(key), (*prefix, "f:" + key), out)
        return
    if is_granular_list(value, node):
        where = pretty_path(prefix)
        for element, item in zip(
            config_element_keys(value, node.list_strategy, where), value, strict=True
        ):
            out.add((*prefix, element))
            collect_fields(item, node.item_node, (*prefix, element), out)
        return
    if prefix:
        out.add(prefix)


@dataclass
class _Diff:
    added: set[FieldPath] = field(default_factory=set)
    modified: set[FieldPath] = field(default_factory=set)
    removed: set[FieldPath] = field(default_factory=set)

    def changed(self) -> set[FieldPath]:
        return self.added | self.modified


def diff_fields(old: Any, new: Any, node: SchemaNode) -> _Diff:
    """Which fields an update added, modified and removed (structured-merge-diff's Compare):
    the basis of ownership for Update operations and of apply conflicts."""
    diff = _Diff()
    _compare(old, new, node, (), diff)
    return diff


def _compare(old: Any, new: Any, node: SchemaNode, path: FieldPath, diff: _Diff) -> None:
    old_present = old is not MISSING
    new_present = new is not MISSING
    if (not old_present or isinstance(old, dict)) and (not new_present or isinstance(new, dict)):
        olds: Mapping[str, Any] = old if old_present else {}
        news: Mapping[str, Any] = new if new_present else {}
        if node.atomic or (not olds and not news):
            _compare_leaf(old, new, path, diff)
            return
        for key in dict.fromkeys([*olds, *news]):
            child_path = (*path, "f:" + key)
            child = node.child(key)
            _compare(olds.get(key, MISSING), news.get(key, MISSING), child, child_path, diff)
        _compare_container(old_present, new_present, path, diff)
        return
    old_list = old if isinstance(old, list) else None
    new_list = new if isinstance(new, list) else None
    if (old_list is not None or not old_present) and (new_list is not None or not new_present):
        strategy = node.list_strategy
        if strategy.type != "atomic" and (old_list or new_list):
            old_index = _list_elements(old_list or [], strategy)
            new_index = _list_elements(new_list or [], strategy)
            if old_index is not None and new_index is not None:
                _compare_items(
                    old_list or [], new_list or [], old_index, new_index, node, path, diff
                )
                _compare_container(old_present, new_present, path, diff)
                return
    _compare_leaf(old, new, path, diff)


def _compare_items(
    old: Sequence[Any],
    new: Sequence[Any],
    old_index: tuple[list[str], dict[str, Any], set[str]],
    new_index: tuple[list[str], dict[str, Any], set[str]],
    node: SchemaNode,
    path: FieldPath,
    diff: _Diff,
) -> None:
    old_elements, old_first, old_dups = old_index
    new_elements, new_first, new_dups = new_index
    for element in dict.fromkeys([*old_elements, *new_elements]):
        item_path = (*path, element)
        if element in old_dups or element in new_dups:
            # Duplicated keys (only possible in objects written without apply) are compared as
            # a whole, as structured-merge-diff does.
            olds = [o for o, e in zip(old, old_elements, strict=True) if e == element]
            news = [n for n, e in zip(new, new_elements, strict=True) if e == element]
            if olds != news:
                (diff.modified if olds and news else diff.added if news else diff.removed).add(
                    item_path
                )
            continue
        old_item = old_first.get(element, MISSING)
        new_item = new_first.get(element, MISSING)
        _compare(old_item, new_item, node.item_node, item_path, diff)


def _compare_leaf(old: Any, new: Any, path: FieldPath, diff: _Diff) -> None:
    if not path:
        return
    if old is MISSING:
        if new is not MISSING:
            diff.added.add(path)
    elif new is MISSING:
        diff.removed.add(path)
    elif old != new or isinstance(old, bool) != isinstance(new, bool):
        diff.modified.add(path)


def _compare_container(old_present: bool, new_present: bool, path: FieldPath, diff: _Diff) -> None:
    if path and not old_present:
        diff.added.add(path)
    elif path and not new_present:
        diff.removed.add(path)


def fields_to_paths(tree: Any, prefix: FieldPath, out: set[FieldPath]) -> None:
    if not isinstance(tree, Mapping):
        return
    for key, sub in tree.items():
        if key == ".":
            continue
        path = (*prefix, str(key))
        if not isinstance(sub, Mapping) or not sub or "." in sub:
            out.add(path)
        fields_to_paths(sub, path, out)


@lru_cache(maxsize=8192)
def element_sort_key(element: str) -> tuple[Any, ...]:
    """structured-merge-diff's order of path elements: field names, then keys, then values,
    then indexes; within a kind by value (numbers numerically)."""
    kind, _, body = element.partition(":")
    rank = {"f": 0, "k": 1, "v": 2, "i": 3}.get(kind, 4)
    if kind == "f":
        return (rank, body)
    if kind == "i":
        return (rank, int(body) if body.lstrip("-").isdigit() else 0, body)
    try:
        parsed = json.loads(body)
    except ValueError:
        return (rank, body)
    if kind == "k" and isinstance(parsed, dict):
        return (rank, tuple((name, _value_sort_key(v)) for name, v in sorted(parsed.items())))
    return (rank, _value_sort_key(parsed))


def _value_sort_key(value: Any) -> tuple[Any, ...]:
    if value is None:
        return (0,)
    if isinstance(value, bool):
        return (3, value)
    if isinstance(value, int | float):
        return (1, value)
    if isinstance(value, str):
        return (2, value)
    return (4, json.dumps(value, sort_keys=True))


def paths_to_fields(paths: Iterable[FieldPath]) -> JsonDict:
    """Serialize a set of field paths as FieldsV1: nested objects keyed by path element, `{}`
    for a leaf, and `".": {}` where a path with children is itself a member."""
    trie: dict[str, Any] = {}
    members: set[FieldPath] = set(paths)
    for path in members:
        node = trie
        for element in path:
            node = node.setdefault(element, {})

    def emit(node: dict[str, Any], prefix: FieldPath) -> JsonDict:
        out: JsonDict = {}
        if prefix in members and node:
            out["."] = {}
        for element in sorted(node, key=element_sort_key):
            out[element] = emit(node[element], (*prefix, element))
        return out

    return emit(trie, ())


def _new_fields(value: Any, node: SchemaNode) -> JsonDict:
    """FieldsV1 of a value that did not exist before: what `paths_to_fields` makes of the
    paths `diff_fields(MISSING, value)` adds, built in one walk (the fast path of creates)."""
    if isinstance(value, dict):
        if not value or node.atomic:
            return {}
        out: JsonDict = {".": {}}
        for key in sorted(value):
            out["f:" + key] = _new_fields(value[key], node.child(key))
        return out
    if isinstance(value, list) and value and node.list_strategy.type != "atomic":
        index = _list_elements(value, node.list_strategy)
        if index is None:
            return {}  # items without identity: the list is one value
        _, first, duplicates = index
        out = {".": {}}
        item = node.item_node
        for element in sorted(first, key=element_sort_key):
            # Duplicated keys are one member, compared (and owned) whole.
            out[element] = {} if element in duplicates else _new_fields(first[element], item)
        return out
    return {}


def created_fields(body: Mapping[str, Any], root: SchemaNode, *, typed: bool) -> JsonDict:
    """FieldsV1 of every field a create of `body` sets, before the unowned metadata is
    stripped: equal to `paths_to_fields(diff_fields(baseline, body, root).changed())` for
    `update_managed_fields`'s baseline of a create (typed kinds start from empty `spec` and
    `status`, which are then not members themselves), in one walk without field paths."""
    out: JsonDict = {}
    for key in sorted(body):
        value = body[key]
        node = root.child(key)
        if typed and key in ("spec", "status") and isinstance(value, dict):
            if node.atomic:
                if value:  # replaced as a whole: the field itself changed
                    out["f:" + key] = {}
                continue
            sub = _new_fields(value, node)
            sub.pop(".", None)
            if sub:
                out["f:" + key] = sub
            continue
        out["f:" + key] = _new_fields(value, node)
    return out


def pretty_path(path: FieldPath) -> str:
    """A field path in structured-merge-diff's human notation, e.g.
    `.spec.containers[name="app"].image`."""
    parts: list[str] = []
    for element in path:
        kind, _, body = element.partition(":")
        if kind == "f":
            parts.append("." + body)
        elif kind == "k":
            try:
                key = json.loads(body)
            except ValueError:
                key = {}
            parts.append(
                "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in sorted(key.items())) + "]"
            )
        elif kind == "v":
            parts.append(f"[={body}]")
        else:
            parts.append(f"[{body}]")
    return "".join(parts)


def config_element_keys(items: Sequence[Any], strategy: ListStrategy, where: str) -> list[str]:
    elements: list[str] = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        element = item_element(item, strategy)
        if element is None:
            if strategy.type == "map":
                raise PatchError(
                    f"{where}: element {i}: associative list with keys has an element that "
                    f"omits all key fields {list(strategy.keys)}"
                )
            raise PatchError(f"{where}: element {i}: a set may only hold scalar values")
        if element in seen:
            raise PatchError(f"{where}: duplicate entries for key {pretty_path((element,))}")
        seen.add(element)
        elements.append(element)
    return elements
