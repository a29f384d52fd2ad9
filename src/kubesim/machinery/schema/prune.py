"""`prune`: keep only the fields the schema declares, except under
`x-kubernetes-preserve-unknown-fields`; `apiVersion`/`kind`/`metadata` of the object and of
embedded resources always stay.
"""

from __future__ import annotations

from typing import Any

from kubesim.machinery.schema.nodes import CompiledSchema, Node, copy_json

# ------------------------------------------------------------------------------------------------
# Pruning


def prune(obj: dict[str, Any], schema: CompiledSchema) -> dict[str, Any]:
    """A copy of `obj` without the fields its schema does not declare (structural pruning)."""
    out = prune_value(obj, schema.root)
    return out if isinstance(out, dict) else {}


def prune_value(value: Any, node: Node | None) -> Any:
    if node is None:
        return copy_json(value)
    if isinstance(value, dict):
        props = node.properties
        if (
            props is None
            and node.additional is None
            and (node.preserve_unknown or node.type is None)
        ):
            return copy_json(value)
        out: dict[str, Any] = {}
        keep_unknown = node.preserve_unknown or node.additional_any
        for k, v in value.items():
            if node.root_like and k in ("apiVersion", "kind", "metadata"):
                out[k] = copy_json(v)
                continue
            child = props.get(k) if props is not None else None
            if child is not None:
                out[k] = prune_value(v, child)
            elif node.additional is not None:
                out[k] = prune_value(v, node.additional)
            elif keep_unknown:
                out[k] = copy_json(v)
        return out
    if isinstance(value, list):
        items = node.items
        return [prune_value(v, items) for v in value]
    return value
