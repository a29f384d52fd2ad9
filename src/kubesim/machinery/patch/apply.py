"""Server-side apply (`application/apply-patch+yaml`), following `sigs.k8s.io/structured-merge-diff`:
merge the applied configuration, prune what the manager no longer applies, detect conflicts
with other managers, and record the manager's Apply entry in managedFields.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence, Set
from dataclasses import replace
from typing import Any

from kubesim.machinery.patch.common import (
    MISSING,
    ConflictError,
    FieldConflict,
    FieldPath,
    JsonDict,
    PatchError,
)
from kubesim.machinery.patch.fieldpaths import (
    collect_fields,
    config_element_keys,
    diff_fields,
    element_sort_key,
    go_json,
    is_granular_list,
    item_element,
    pretty_path,
)
from kubesim.machinery.patch.managed_fields import (
    LAST_APPLIED,
    Entry,
    decode_entries,
    with_managed_fields,
    without_ignored,
    without_managed_fields,
)
from kubesim.machinery.patch.schema import PatchSchema, SchemaNode

# --------------------------------------------------------------------------- server-side apply


def server_side_apply(
    live: JsonDict | None,
    applied: JsonDict,
    manager: str,
    schema: PatchSchema,
    *,
    force: bool,
    now: str,
    subresource: str = "",
    ignore: Collection[str] = (),
) -> JsonDict:
    """Server-side apply (`application/apply-patch+yaml`) of `applied` by `manager` onto `live`
    (None to create), following structured-merge-diff:

    1. the applied configuration is merged into the live object: objects field by field, lists
       per the schema (map lists by key, sets by value, atomic lists replaced; merged items keep
       the live order with the applied ones placed in the applied order);
    2. fields this manager applied last time and no longer applies are removed, unless another
       manager owns them (or something inside them) -- objects and lists emptied by that are
       removed too;
    3. fields the result changes that another manager owns -- Apply *and* Update managers, as
       in Kubernetes -- are conflicts: `ConflictError` unless `force`, which moves their
       ownership to this manager;
    4. the manager's Apply entry in managedFields becomes exactly the applied fields (FieldsV1),
       with `time = now` when the object changed.

    `ignore` names top-level fields that this endpoint resets (e.g. `("status",)` on the main
    resource of a type with a status subresource): they are neither owned nor conflicted.

    As kube-apiserver does for the manager "kubectl" (what `kubectl apply --server-side` uses),
    conflicts on fields that kubectl's last-applied-configuration annotation holds with their
    live values are not conflicts, and that annotation, if present, is refreshed with the
    applied configuration: this is how an object moves from client-side to server-side apply.

    Simplified: `null` values in the applied configuration are dropped before applying (rather
    than owned as explicit nulls); apiVersions of managers are not converted (all versions of a
    kind are assumed to share field paths); when a field is pruned its unowned sibling fields
    inside an otherwise owned object stay.
    """
    _check_apply_patch(applied, manager)
    config = _drop_nulls(applied)
    live_obj: Mapping[str, Any] = live if live is not None else {}
    entries = decode_entries((live_obj.get("metadata") or {}).get("managedFields"))
    live_body = without_managed_fields(live_obj)
    root = schema.root

    config_fields: set[FieldPath] = set()
    collect_fields(config, root, (), config_fields)  # also validates the configuration
    config_fields = without_ignored(config_fields, ignore)
    merged = _apply_merge(live_body, config, root, "")

    ident = (manager, "Apply", subresource, "")
    previous = next((e for e in entries if e.ident == ident), None)
    others = [e for e in entries if e is not previous]
    merged = _prune_stale(merged, previous, others, config_fields, root)

    diff = diff_fields(live_body if live is not None else MISSING, merged, root)
    changed = without_ignored(diff.changed(), ignore)
    conflicts = _conflicts(others, changed)
    if conflicts and not force and manager == "kubectl":
        # kube-apiserver lets kubectl take over, without --force-conflicts, the fields it
        # applied client-side before (kubectl migrates the managedFields right afterwards).
        allowed = _client_side_applied(live_obj, live_body, root)
        conflicts = [(path, c) for path, c in conflicts if path not in allowed]
    if conflicts and not force:
        raise ConflictError([c for _, c in conflicts])

    result = _without_fields(others, changed | diff.removed)
    if config_fields:
        object_changed = merged != live_body
        when = previous.time if previous is not None and not object_changed else now
        api_version = str(applied.get("apiVersion") or live_obj.get("apiVersion") or "")
        result.append(
            Entry(manager, "Apply", api_version, subresource, when, frozenset(config_fields))
        )
    if manager == "kubectl":
        merged = _refresh_last_applied(merged, applied)
    return with_managed_fields(merged, result)


def _check_apply_patch(applied: Any, manager: str) -> None:
    if not isinstance(applied, dict):
        raise PatchError("an apply patch must be a JSON object")
    if not manager:
        raise PatchError("fieldManager is required for apply requests")
    applied_meta = applied.get("metadata")
    if applied_meta is not None and not isinstance(applied_meta, dict):
        raise PatchError("metadata must be an object")
    if isinstance(applied_meta, dict) and applied_meta.get("managedFields"):
        raise PatchError("metadata.managedFields must be nil")


def _prune_stale(
    merged: JsonDict,
    previous: Entry | None,
    others: Iterable[Entry],
    config_fields: Set[FieldPath],
    root: SchemaNode,
) -> JsonDict:
    """`merged` without the fields the manager applied last time (`previous`) and no longer
    applies, unless another manager owns them."""
    if previous is None:
        return merged
    owned = set(config_fields).union(*(e.fields for e in others))
    stale = set(previous.fields) - owned
    if not stale:
        return merged
    pruned = _prune(merged, stale, owned, root, ())
    return pruned if isinstance(pruned, dict) else {}


def _conflicts(
    others: Iterable[Entry], changed: Set[FieldPath]
) -> list[tuple[FieldPath, FieldConflict]]:
    """The fields in `changed` that other managers own, each with who owns it."""
    conflicts: list[tuple[FieldPath, FieldConflict]] = []
    for entry in others:
        for path in sorted(entry.fields & changed, key=_path_sort_key):
            conflict = FieldConflict(
                pretty_path(path),
                entry.manager,
                entry.operation,
                entry.api_version,
                entry.subresource,
                entry.time,
            )
            conflicts.append((path, conflict))
    return conflicts


def _without_fields(entries: Iterable[Entry], lost: Set[FieldPath]) -> list[Entry]:
    """The entries with the `lost` fields taken out; entries left with no field are dropped."""
    result: list[Entry] = []
    for entry in entries:
        kept = entry.fields - lost
        if kept:
            result.append(replace(entry, fields=frozenset(kept)))
    return result


def _path_sort_key(path: FieldPath) -> list[tuple[Any, ...]]:
    return [element_sort_key(e) for e in path]


def _client_side_applied(
    live: Mapping[str, Any], live_body: Mapping[str, Any], root: SchemaNode
) -> set[FieldPath]:
    """The fields of kubectl's last-applied-configuration annotation whose values the live
    object still has: those that `kubectl apply --server-side` may take over from the
    client-side-apply manager without conflict."""
    annotations = (live.get("metadata") or {}).get("annotations") or {}
    try:
        last = json.loads(annotations.get(LAST_APPLIED) or "")
    except (TypeError, ValueError):
        return set()
    if not isinstance(last, dict) or last.get("apiVersion") != live.get("apiVersion"):
        return set()
    fields: set[FieldPath] = set()
    try:
        collect_fields(last, root, (), fields)
    except PatchError:
        return set()
    differs = diff_fields(last, live_body, root)
    return fields - differs.added - differs.modified - differs.removed


def _drop_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def _apply_merge(live: Any, config: Any, node: SchemaNode, where: str) -> Any:
    """Merge an applied value into a live one (structured-merge-diff's Merge, config wins)."""
    if isinstance(config, dict):
        if not isinstance(live, dict) or node.atomic:
            return config
        out = dict(live)
        for key, value in config.items():
            path = f"{where}.{key}"
            out[key] = (
                _apply_merge(live[key], value, node.child(key), path) if key in live else value
            )
        return out
    if isinstance(config, list):
        strategy = node.list_strategy
        if not isinstance(live, list) or strategy.type == "atomic" or not (live or config):
            return config
        return _apply_merge_list(live, config, node, where)
    return config


def _apply_merge_list(
    live: Sequence[Any], config: Sequence[Any], node: SchemaNode, where: str
) -> list[Any]:
    """Merge a keyed list, ordering the result as structured-merge-diff does: live items keep
    their places, items both sides have follow the applied order, new items come where the
    applied list puts them relative to the shared ones."""
    strategy = node.list_strategy
    config_elements = config_element_keys(config, strategy, where)
    config_items = dict(zip(config_elements, config, strict=True))
    live_elements: list[str] = []
    live_items: dict[str, Any] = {}
    for i, item in enumerate(live):
        # A live item without identity (written by a plain update) cannot be matched: keep it.
        element = item_element(item, strategy) or f"?{i}"
        live_items[element] = MISSING if element in live_items else item
        live_elements.append(element)

    def merge(element: str) -> Any:
        current = live_items.get(element, MISSING)
        new = config_items[element]
        if current is MISSING:
            return new
        return _apply_merge(current, new, node.item_node, f"{where}{pretty_path((element,))}")

    shared = iter([e for e in config_elements if e in live_items])
    next_shared = next(shared, None)
    merged_config: set[str] = set()
    out: list[Any] = []
    li = ci = 0
    while li < len(live_elements) or ci < len(config_elements):
        if li < len(live_elements) and ci < len(config_elements):
            element = live_elements[li]
            if element == config_elements[ci]:
                merged_config.add(element)
                out.append(merge(element))
                li += 1
                ci += 1
                next_shared = next(shared, None)
                continue
            if element in config_items and next_shared is not None and next_shared != element:
                li += 1  # shared, but its turn comes with the applied order
                continue
        if li < len(live_elements):
            element = live_elements[li]
            if element not in config_items:
                out.append(live[li])
                li += 1
                continue
            if element in merged_config:
                li += 1
        if ci < len(config_elements):
            element = config_elements[ci]
            merged_config.add(element)
            out.append(merge(element))
            ci += 1
            if next_shared is not None and next_shared == element:
                next_shared = next(shared, None)
    return out


def _prefixes(paths: Iterable[FieldPath]) -> set[FieldPath]:
    """Every proper prefix of the given paths."""
    out: set[FieldPath] = set()
    for path in paths:
        for i in range(1, len(path)):
            out.add(path[:i])
    return out


def _prune(
    value: Any, stale: set[FieldPath], owned: set[FieldPath], node: SchemaNode, path: FieldPath
) -> Any:
    """Remove the `stale` fields from an applied result; returns `MISSING` when `value` itself
    goes. A stale field that another manager owns something inside of is descended into rather
    than removed whole; a container that pruning empties goes too unless someone owns it."""
    return _Pruner(stale, owned).prune(value, node, path)


class _Pruner:
    def __init__(self, stale: set[FieldPath], owned: set[FieldPath]) -> None:
        self.stale = stale
        self.owned = owned
        self.inside_stale = _prefixes(stale)
        self.inside_owned = _prefixes(owned)

    def prune(self, value: Any, node: SchemaNode, path: FieldPath) -> Any:
        if isinstance(value, dict) and not node.atomic:
            out: JsonDict = {}
            changed = False
            for key, sub in value.items():
                new = self.child(sub, node.child(key), (*path, "f:" + key))
                if new is MISSING:
                    changed = True
                    continue
                changed = changed or new is not sub
                out[key] = new
            return self.result(value, out, changed, path)
        if is_granular_list(value, node):
            strategy = node.list_strategy
            items: list[Any] = []
            changed = False
            for item in value:
                element = item_element(item, strategy)
                if element is None:
                    items.append(item)
                    continue
                new = self.child(item, node.item_node, (*path, element))
                if new is MISSING:
                    changed = True
                    continue
                changed = changed or new is not item
                items.append(new)
            return self.result(value, items, changed, path)
        return value

    def child(self, value: Any, node: SchemaNode, path: FieldPath) -> Any:
        if path in self.stale and path not in self.inside_owned:
            return MISSING
        if path in self.stale or path in self.inside_stale:
            return self.prune(value, node, path)
        return value

    def result(self, before: Any, after: Any, changed: bool, path: FieldPath) -> Any:
        if not changed:
            return before
        if not after and path and path not in self.owned and path not in self.inside_owned:
            return MISSING
        return after


def _refresh_last_applied(obj: JsonDict, applied: Mapping[str, Any]) -> JsonDict:
    """kube-apiserver keeps kubectl's client-side-apply annotation in step when kubectl applies
    server-side, so that switching back to client-side apply sees the right baseline."""
    meta = obj.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    if not isinstance(annotations, dict) or LAST_APPLIED not in annotations:
        return obj
    config = dict(applied)
    config_meta = dict(config.get("metadata") or {})
    config_annotations = {
        k: v for k, v in (config_meta.get("annotations") or {}).items() if k != LAST_APPLIED
    }
    if config_annotations:
        config_meta["annotations"] = config_annotations
    else:
        config_meta.pop("annotations", None)
    config["metadata"] = config_meta
    out = dict(obj)
    out["metadata"] = dict(meta or {})
    out["metadata"]["annotations"] = {
        **annotations,
        LAST_APPLIED: go_json(config) + "\n",
    }
    return out
