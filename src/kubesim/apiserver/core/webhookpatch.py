"""A mutating webhook's JSONPatch applied to a copy of the object that shares every part
no operation touches.

`jsonpatch.apply_patch` deep-copies the whole object first; for a pod that copy cost more
than the rest of applying a webhook's answer, although a webhook's patch usually adds a label
or two. Here only the containers on the path of each operation (and on its `from`, for a
move) are copied, one level at a time, just before the operation runs. An add, replace or
remove that certainly succeeds (its parent exists, its index is in range: what webhooks
send) is applied here; any other operation `jsonpatch` applies in place, so what it does,
and the error it raises, are the library's. The object passed in is never changed.
"""

from __future__ import annotations

import re
from typing import Any

import jsonpatch

__all__ = ["apply_patch"]

_PLAIN = frozenset({"add", "replace", "remove"})
_BAD_ESCAPE = re.compile(r"~(?![01])")
_INDEX = re.compile(r"0|[1-9][0-9]*")  # an array index as a JSON pointer may write it

# Operations and the pointers whose parents they change (`copy` deep-copies what it reads,
# `test` changes nothing).
_WRITES = {
    "add": ("path",),
    "remove": ("path",),
    "replace": ("path",),
    "copy": ("path",),
    "move": ("path", "from"),
}


def apply_patch(doc: Any, operations: list[Any]) -> Any:
    """`operations` (a JSONPatch, RFC 6902) applied to `doc`, which stays as it was."""
    owned: dict[int, Any] = {}  # id -> a container copied here (kept alive, so ids stay unique)
    if all(_plain(op) for op in operations):
        for op in operations:
            doc = _owned(doc, owned)
            if not _apply_plain(doc, op, owned):
                doc = jsonpatch.JsonPatch([op]).apply(doc, in_place=True)  # its error
        return doc
    jsonpatch.JsonPatch(operations)  # every operation checked first, as apply_patch does
    for op in operations:
        doc = _owned(doc, owned)
        for key in _WRITES.get(op.get("op"), ()):
            pointer = op.get(key)
            if isinstance(pointer, str):
                _own_parents(doc, pointer, owned)
        doc = jsonpatch.JsonPatch([op]).apply(doc, in_place=True)
    return doc


def _plain(op: Any) -> bool:
    """An add, replace or remove below the root that jsonpatch would accept as written
    (what webhooks send): applied here directly, without building jsonpatch's objects."""
    if not isinstance(op, dict) or op.get("op") not in _PLAIN:
        return False
    path = op.get("path")
    if not isinstance(path, str) or not path.startswith("/") or _BAD_ESCAPE.search(path):
        return False
    return op["op"] == "remove" or "value" in op


def _apply_plain(doc: Any, op: dict[str, Any], owned: dict[int, Any]) -> bool:
    """Apply a `_plain` operation in place, if it certainly succeeds; False (nothing done)
    otherwise, for jsonpatch to raise its error."""
    parent = _own_parents(doc, op["path"], owned)
    token = _unescape(op["path"].rpartition("/")[2])
    kind = op["op"]
    if isinstance(parent, dict):
        if kind == "add":
            parent[token] = op["value"]
        elif token not in parent:
            return False
        elif kind == "replace":
            parent[token] = op["value"]
        else:
            del parent[token]
        return True
    if not isinstance(parent, list):
        return False
    if kind == "add" and token == "-":
        parent.append(op["value"])
        return True
    if not _INDEX.fullmatch(token):
        return False
    index = int(token)
    if kind == "add" and index <= len(parent):
        parent.insert(index, op["value"])
    elif kind != "add" and index < len(parent):
        if kind == "replace":
            parent[index] = op["value"]
        else:
            del parent[index]
    else:
        return False
    return True


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~") if "~" in token else token


def _owned(value: Any, owned: dict[int, Any]) -> Any:
    """`value` if it is a container copied here (or not a container), else a shallow copy."""
    if not isinstance(value, dict | list) or id(value) in owned:
        return value
    copied: Any = dict(value) if isinstance(value, dict) else list(value)
    owned[id(copied)] = copied
    return copied


def _own_parents(doc: Any, pointer: str, owned: dict[int, Any]) -> Any:
    """Replace each container on the way to `pointer`'s parent by a copy of it, from the
    (already copied) root down, and return the parent; None where the path does not
    resolve (the operation then fails as it would have)."""
    if not pointer.startswith("/"):
        return None
    node = doc
    for raw in pointer.split("/")[1:-1]:
        token = _unescape(raw)
        if isinstance(node, dict):
            if token not in node:
                return None
            child = node[token] = _owned(node[token], owned)
        elif isinstance(node, list):
            if not _INDEX.fullmatch(token) or int(token) >= len(node):
                return None
            child = node[int(token)] = _owned(node[int(token)], owned)
        else:
            return None
        node = child
    return node
