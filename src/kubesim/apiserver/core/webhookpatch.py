"""A mutating webhook's JSONPatch applied to a copy of the object that shares every part
no operation touches.

`jsonpatch.apply_patch` deep-copies the whole object first; for a pod that copy cost more
than the rest of applying a webhook's answer, although a webhook's patch usually adds a label
or two. Here only the containers on the path of each operation (and on its `from`, for a
move) are copied, one level at a time, just before the operation runs; `jsonpatch` then
applies it in place, so what an operation does, and the error it raises, are the library's.
The object passed in is never changed.
"""

from __future__ import annotations

from typing import Any

import jsonpatch

__all__ = ["apply_patch"]

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
    jsonpatch.JsonPatch(operations)  # every operation checked first, as apply_patch does
    owned: dict[int, Any] = {}  # id -> a container copied here (kept alive, so ids stay unique)
    for op in operations:
        doc = _owned(doc, owned)
        for key in _WRITES.get(op.get("op"), ()):
            pointer = op.get(key)
            if isinstance(pointer, str):
                _own_parents(doc, pointer, owned)
        doc = jsonpatch.JsonPatch([op]).apply(doc, in_place=True)
    return doc


def _owned(value: Any, owned: dict[int, Any]) -> Any:
    """`value` if it is a container copied here (or not a container), else a shallow copy."""
    if not isinstance(value, dict | list) or id(value) in owned:
        return value
    copied: Any = dict(value) if isinstance(value, dict) else list(value)
    owned[id(copied)] = copied
    return copied


def _own_parents(doc: Any, pointer: str, owned: dict[int, Any]) -> None:
    """Replace each container on the way to `pointer`'s parent by a copy of it, from the
    (already copied) root down; stop where the path does not resolve (the operation then
    fails as it would have)."""
    if not pointer.startswith("/"):
        return
    node = doc
    for raw in pointer.split("/")[1:-1]:
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict):
            if token not in node:
                return
            child = node[token] = _owned(node[token], owned)
        elif isinstance(node, list):
            if not (token.isascii() and token.isdigit()) or int(token) >= len(node):
                return
            child = node[int(token)] = _owned(node[int(token)], owned)
        else:
            return
        node = child
