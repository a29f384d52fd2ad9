"""`prune`: keep only the fields the schema declares, except under
`x-kubernetes-preserve-unknown-fields`; `apiVersion`/`kind`/`metadata` of the object and of
embedded resources always stay.
"""

from __future__ import annotations

from typing import Any

from kubesim.machinery.schema.nodes import CompiledSchema, _copy, _Node

# ------------------------------------------------------------------------------------------------
# Pruning


def prune(obj: dict[str, Any], schema: CompiledSchema) -> dict[str, Any]:
    """A copy of `obj` without the fields its schema does not declare (structural pruning)."""
    out = _prune(obj, schema.root)
    return out if isinstance(out, dict) else {}


def _prune(value: Any, node: _Node | None) -> Any:
    if node is None:
        return _copy(value)
    if isinstance(value, dict):
        props = node.properties
        if (
            props is None
            and node.additional is None
            and (node.preserve_unknown or node.type is None)
        ):
            return _copy(value)
        out: dict[str, Any] = {}
        keep_unknown = node.preserve_unknown or node.additional_any
        for k, v in value.items():
            if node.root_like and k in ("apiVersion", "kind", "metadata"):
                out[k] = _copy(v)
                continue
            child = props.get(k) if props is not None else None
            if child is not None:
                out[k] = _prune(v, child)
            elif node.additional is not None:
                out[k] = _prune(v, node.additional)
            elif keep_unknown:
                out[k] = _copy(v)
        return out
    if isinstance(value, list):
        items = node.items
        return [_prune(v, items) for v in value]
    return value
