"""Strategic merge patch (`application/strategic-merge-patch+json`), following
`k8s.io/apimachinery/pkg/util/strategicpatch`: lists merged by key or as sets per the
`PatchSchema`, the `$patch`, `$retainKeys`, `$setElementOrder` and `$deleteFromPrimitiveList`
directives.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from kubesim.machinery.patch.common import MISSING, JsonDict, PatchError
from kubesim.machinery.patch.schema import PatchSchema, SchemaNode

# ------------------------------------------------------------------------ strategic merge patch

_DIRECTIVE: Final = "$patch"


_RETAIN_KEYS: Final = "$retainKeys"


_SET_ORDER: Final = "$setElementOrder"


_DELETE_PRIMITIVE: Final = "$deleteFromPrimitiveList"


def apply_strategic_merge_patch(obj: JsonDict, patch: JsonDict, schema: PatchSchema) -> JsonDict:
    """Kubernetes' strategic merge patch (`kubectl patch`, client-side `kubectl apply`, Helm's
    three-way merge): like a JSON merge patch, except that lists declared as merging in the
    schema merge item by item (objects by merge key, scalars as a set), and these directives:

    - `$patch: replace` (object or list item: replace instead of merge; a `{"$patch": "replace"}`
      element replaces the whole list), `$patch: delete` (object: becomes `{}`; list item:
      removes the items with that merge key), `$patch: merge` (explicitly the default);
    - `$retainKeys: [...]`: drop the object's fields not listed, then merge;
    - `$setElementOrder/<list>: [...]`: the order of the merged list;
    - `$deleteFromPrimitiveList/<list>: [...]`: remove these scalars from the list.

    Differences from apimachinery, all where it would leave directives or nulls inside the
    stored object: a new sub-tree brought in by the patch is cleaned of directives and nulls
    the way an existing one would be (`$patch: replace` on a field the object lacks sets it
    instead of dropping it), and `$patch: merge` is accepted instead of rejected."""
    if not isinstance(obj, dict) or not isinstance(patch, dict):
        raise PatchError("a strategic merge patch and its target must be JSON objects")
    return _smp_map(obj, patch, schema.root, "")


def _smp_map(
    original: Mapping[str, Any] | None, patch: Mapping[str, Any], node: SchemaNode, where: str
) -> JsonDict:
    if _DIRECTIVE in patch:
        directive = patch[_DIRECTIVE]
        rest = {k: v for k, v in patch.items() if k != _DIRECTIVE}
        if directive == "replace":
            return _smp_map(None, rest, node, where)
        if directive == "delete":
            return {}
        if directive != "merge":
            raise PatchError(f"unknown patch type: {directive!r} in map at {where or '<root>'}")
        patch = rest
    result: JsonDict = dict(original) if original else {}
    handled: set[str] = set()

    if _RETAIN_KEYS in patch:
        retain = patch[_RETAIN_KEYS]
        if not isinstance(retain, list):
            raise PatchError(f"invalid patch format of retainKeys at {where or '<root>'}")
        keep = {k for k in retain if isinstance(k, str)}
        for key, value in patch.items():
            if value is not None and not key.startswith("$") and key not in keep:
                raise PatchError(
                    f"the patch has field {where}.{key} which is not in its $retainKeys list"
                )
        result = {k: v for k, v in result.items() if k in keep}
        handled.add(_RETAIN_KEYS)

    for key, value in patch.items():
        if key.startswith(_SET_ORDER):
            field_name = _directive_field(key, _SET_ORDER, "setElementOrder list")
            _smp_set_element_order(result, patch, field_name, value, node, where)
            handled.update((key, field_name))

    for key, value in patch.items():
        if key in handled:
            continue
        delete_list = key.startswith(_DELETE_PRIMITIVE)
        if delete_list:
            key = _directive_field(key, _DELETE_PRIMITIVE, "primitive list")
        child = node.child(key)
        path = f"{where}.{key}"
        if value is None:
            result.pop(key, None)
            continue
        current = result.get(key, MISSING)
        if isinstance(current, dict) and isinstance(value, dict):
            result[key] = _smp_map(current, value, child, path)
        elif isinstance(current, list) and isinstance(value, list):
            if delete_list:
                result[key] = _delete_from_list(current, value)
            elif child.list_strategy.smp_merge:
                result[key] = _smp_list(current, value, child, path)
            else:
                result[key] = _smp_new_list(value, child, path)
        elif not delete_list:
            new = _smp_new(value, child, path)
            if new is MISSING:
                result.pop(key, None)
            else:
                result[key] = new
    return result


def _directive_field(key: str, prefix: str, what: str) -> str:
    name = key[len(prefix) :]
    if not name.startswith("/") or len(name) < 2:
        raise PatchError(f"invalid patch format of {what}: {key!r}")
    return name[1:]


def _smp_new(value: Any, node: SchemaNode, where: str) -> Any:
    """A patch value for a field the object lacks (or holds with another type): the patch value
    itself, cleaned of directives and nulls. `MISSING` means "leave the field out"."""
    if isinstance(value, dict):
        if value.get(_DIRECTIVE) == "delete":
            return MISSING
        return _smp_map(None, value, node, where)
    if isinstance(value, list):
        return _smp_new_list(value, node, where)
    return value


def _smp_new_list(items: Sequence[Any], node: SchemaNode, where: str) -> list[Any]:
    """A list taken from the patch as is (a new or non-merging list): directive markers such as
    `{"$patch": "replace"}` and delete entries are instructions, not items."""
    item_node = node.item_node
    out: list[Any] = []
    for item in items:
        if isinstance(item, dict):
            if item.get(_DIRECTIVE) == "delete" or (_DIRECTIVE in item and len(item) == 1):
                continue
            out.append(_smp_map(None, item, item_node, where))
        else:
            out.append(item)
    return out


def _delete_from_list(current: Sequence[Any], remove: Sequence[Any]) -> list[Any]:
    doomed = {_ident(v) for v in remove}
    return [v for v in current if _ident(v) not in doomed]


def _ident(value: Any) -> Any:
    """A hashable identity for a JSON value, keeping `true` apart from `1` (Python's bool is an
    int) while `1 == 1.0` as in Go's decoding of JSON numbers."""
    if isinstance(value, bool) or value is None:
        return ("b", value)
    if isinstance(value, int | float):
        return ("n", value)
    if isinstance(value, str):
        return ("s", value)
    return ("j", json.dumps(value, sort_keys=True))


def _element_kind(*lists: Sequence[Any]) -> str:
    kind = ""
    for items in lists:
        for item in items:
            if isinstance(item, list):
                raise PatchError("lists of lists are not supported")
            this = "map" if isinstance(item, dict) else "scalar"
            if kind and kind != this:
                raise PatchError("list element types are not identical")
            kind = this
    return kind


def _merge_key_of(item: Any, key: str, where: str) -> Any:
    if not isinstance(item, dict) or key not in item:
        raise PatchError(f"map: {item} does not contain declared merge key: {key} (at {where})")
    return _ident(item[key])


def _smp_list(
    original: Sequence[Any], patch: Sequence[Any], node: SchemaNode, where: str
) -> list[Any]:
    """Merge a patch list into a list whose strategy is merge."""
    return _smp_list_parts(original, patch, node, where)[0]


def _smp_list_parts(
    original: Sequence[Any], patch: Sequence[Any], node: SchemaNode, where: str
) -> tuple[list[Any], Sequence[Any]]:
    """`_smp_list`, plus the "server order" a `$setElementOrder` for the same list then sorts
    against. apimachinery reads that order through a slice that aliases the list being merged:
    after `$patch: delete` entries it shows the surviving items followed by as many appended
    items as were deleted. Mirroring that keeps the item order kubectl users get."""
    if not original and not patch:
        return list(original), original
    strategy = node.list_strategy
    if _element_kind(original, patch) != "map":
        merged: list[Any] = []
        seen: set[Any] = set()
        for item in [*original, *patch]:
            ident = _ident(item)
            if ident not in seen:
                seen.add(ident)
                merged.append(item)
        return _smp_order(merged, patch, original, None, where), original
    key = strategy.smp_key
    if not key:
        raise PatchError(f"cannot merge lists without merge key for {where}")
    base, items = _smp_special_elements(original, patch, key, node, where)
    merged = list(base)
    position: dict[Any, int] = {}
    for i, item in enumerate(merged):
        if isinstance(item, dict) and key in item:
            position.setdefault(_ident(item[key]), i)
    for item in items:
        ident = _merge_key_of(item, key, where)
        at = position.get(ident)
        if at is None:
            position[ident] = len(merged)
            merged.append(_smp_map(None, item, node.item_node, where))
        else:
            merged[at] = _smp_map(merged[at], item, node.item_node, where)
    return _smp_order(merged, items, base, key, where), merged[: len(original)]


def _smp_special_elements(
    original: Sequence[Any], patch: Sequence[Any], key: str, node: SchemaNode, where: str
) -> tuple[list[Any], list[Any]]:
    """Apply the `$patch` list elements: delete items by merge key, or replace the whole list.
    Returns the list to merge into and the ordinary patch items."""
    base = list(original)
    items: list[Any] = []
    replace_all = False
    for item in patch:
        directive = item.get(_DIRECTIVE, MISSING)
        if directive is MISSING:
            items.append(item)
        elif directive == "delete":
            doomed = _merge_key_of(item, key, where)
            base = [
                o
                for o in base
                if not (isinstance(o, dict) and key in o and _ident(o[key]) == doomed)
            ]
        elif directive == "replace":
            replace_all = True
        elif directive == "merge":
            rest = {k: v for k, v in item.items() if k != _DIRECTIVE}
            if rest:
                items.append(rest)
        else:
            raise PatchError(f"unknown patch type: {directive!r} in list at {where}")
    if replace_all:
        return [_smp_map(None, item, node.item_node, where) for item in items], []
    return base, items


def _smp_order(
    merged: Sequence[Any],
    patch_order: Sequence[Any],
    server_order: Sequence[Any],
    key: str | None,
    where: str,
) -> list[Any]:
    """Order a merged list as apimachinery does: items named in the patch keep the patch's
    relative order, the others keep the server's, and the two are interleaved so that each
    server-only item stays ahead of the patch items it preceded on the server."""

    def ident(item: Any) -> Any:
        if key is None:
            return _ident(item)
        if isinstance(item, dict) and key in item:
            return _ident(item[key])
        return ("?", id(item))

    def positions(items: Sequence[Any]) -> dict[Any, int]:
        out: dict[Any, int] = {}
        for i, item in enumerate(items):
            out.setdefault(ident(item), i)
        return out

    in_patch_at = positions(patch_order)
    server_at = positions(server_order)
    ours = [m for m in merged if ident(m) in in_patch_at]
    theirs = [m for m in merged if ident(m) not in in_patch_at]
    ours.sort(key=lambda m: in_patch_at[ident(m)])
    theirs.sort(key=lambda m: server_at.get(ident(m), len(server_at)))
    out: list[Any] = []
    i = j = 0
    while i < len(theirs) or j < len(ours):
        if j >= len(ours):
            out.append(theirs[i])
            i += 1
        elif i >= len(theirs):
            out.append(ours[j])
            j += 1
        else:
            left = server_at.get(ident(theirs[i]), -1)
            right = server_at.get(ident(ours[j]), -1)
            if left >= 0 and right >= 0 and left < right:
                out.append(theirs[i])
                i += 1
            else:
                out.append(ours[j])
                j += 1
    return out


def _smp_set_element_order(
    result: JsonDict,
    patch: Mapping[str, Any],
    field_name: str,
    order: Any,
    node: SchemaNode,
    where: str,
) -> None:
    """Merge `patch[field_name]` into `result[field_name]` and order the outcome by the
    `$setElementOrder/<field>` list (kubectl sends one for every merging list it patches)."""
    path = f"{where}.{field_name}"
    if not isinstance(order, list):
        raise PatchError(f"invalid patch format of setElementOrder list at {path}")
    child = node.child(field_name)
    strategy = child.list_strategy
    current = result.get(field_name, MISSING)
    incoming = patch.get(field_name, MISSING)
    if current is not MISSING and not isinstance(current, list):
        raise PatchError(f"{path} is not a list")
    if incoming is not MISSING and not isinstance(incoming, list):
        raise PatchError(f"the patch for {path} is not a list")
    key = strategy.smp_key if strategy.smp_merge else None
    if isinstance(incoming, list):
        _check_element_order(incoming, order, key, path)
    server_order: Sequence[Any] = []
    if isinstance(current, list) and isinstance(incoming, list):
        if strategy.smp_merge:
            merged, server_order = _smp_list_parts(current, incoming, child, path)
        else:
            merged = _smp_new_list(incoming, child, path)
    elif isinstance(incoming, list):
        merged = _smp_new_list(incoming, child, path)
    elif isinstance(current, list):
        merged = server_order = current
    else:
        return
    if strategy.smp_merge:
        merged = _smp_order(merged, order, server_order, key, path)
    result[field_name] = merged


def _check_element_order(
    patch_list: Sequence[Any], order: Sequence[Any], key: str | None, where: str
) -> None:
    """The patch items must appear in `$setElementOrder` and in the same relative order."""
    if not patch_list or not order:
        return
    items = [
        p for p in patch_list if not (key and isinstance(p, dict) and p.get(_DIRECTIVE) == "delete")
    ]
    pi = oi = 0
    while pi < len(items) and oi < len(order):
        item = items[pi]
        if isinstance(item, dict) and _DIRECTIVE in item:
            pi += 1
            continue
        if key is None:
            same = _ident(item) == _ident(order[oi])
        else:
            same = _merge_key_of(item, key, where) == _merge_key_of(order[oi], key, where)
        if same:
            pi += 1
        oi += 1
    if pi < len(items):
        raise PatchError(
            f"the order in patch list {list(patch_list)} doesn't match $setElementOrder list "
            f"{list(order)} at {where}"
        )
