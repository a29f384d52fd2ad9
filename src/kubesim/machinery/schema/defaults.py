"""`apply_defaults`: `default`s top-down, only where the parent exists; a `null` for a non-nullable
field is replaced by the default, or dropped when there is none.
"""

from __future__ import annotations

from typing import Any

from kubesim.machinery.schema.nodes import MISSING, CompiledSchema, Node, copy_json

# ------------------------------------------------------------------------------------------------
# Defaulting


def apply_defaults(obj: dict[str, Any], schema: CompiledSchema) -> dict[str, Any]:
    """A copy of `obj` with the schema's `default` values applied, as kube-apiserver does.

    Defaults apply top-down where the parent exists; a defaulted value gets its own children's
    defaults. A `null` in a non-nullable field is replaced by the field's default, or removed
    when the field has none (kube-apiserver prunes such nulls before defaulting).
    """
    out = default_value(obj, schema.root)
    return out if isinstance(out, dict) else {}


def default_value(value: Any, node: Node | None) -> Any:
    if node is None:
        return copy_json(value)
    if isinstance(value, dict):
        props = node.properties
        addl = node.additional
        out: dict[str, Any] = {}
        for k, v in value.items():
            if node.root_like and k in ("apiVersion", "kind", "metadata"):
                out[k] = copy_json(v)
                continue
            child = props.get(k) if props is not None else None
            if child is None:
                child = addl
            if child is None:
                out[k] = copy_json(v)
            elif v is None and not child.nullable:
                if child.default is not MISSING:
                    out[k] = default_value(copy_json(child.default), child)
            else:
                out[k] = default_value(v, child)
        if props:
            for k, child in props.items():
                if child.default is not MISSING and k not in value:
                    if node.root_like and k in ("apiVersion", "kind", "metadata"):
                        continue
                    out[k] = default_value(copy_json(child.default), child)
        return out
    if isinstance(value, list):
        items = node.items
        if items is None:
            return copy_json(value)
        result: list[Any] = []
        for v in value:
            if v is None and not items.nullable and items.default is not MISSING:
                result.append(default_value(copy_json(items.default), items))
            else:
                result.append(default_value(v, items))
        return result
    return value
