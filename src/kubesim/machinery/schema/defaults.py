"""`apply_defaults`: `default`s top-down, only where the parent exists; a `null` for a non-nullable
field is replaced by the default, or dropped when there is none.
"""

from __future__ import annotations

from typing import Any

from kubesim.machinery.schema.nodes import _MISSING, CompiledSchema, _copy, _Node

# ------------------------------------------------------------------------------------------------
# Defaulting


def apply_defaults(obj: dict[str, Any], schema: CompiledSchema) -> dict[str, Any]:
    """A copy of `obj` with the schema's `default` values applied, as kube-apiserver does.

    Defaults apply top-down where the parent exists; a defaulted value gets its own children's
    defaults. A `null` in a non-nullable field is replaced by the field's default, or removed
    when the field has none (kube-apiserver prunes such nulls before defaulting).
    """
    out = _default(obj, schema.root)
    return out if isinstance(out, dict) else {}


def _default(value: Any, node: _Node | None) -> Any:
    if node is None:
        return _copy(value)
    if isinstance(value, dict):
        props = node.properties
        addl = node.additional
        out: dict[str, Any] = {}
        for k, v in value.items():
            if node.root_like and k in ("apiVersion", "kind", "metadata"):
                out[k] = _copy(v)
                continue
            child = props.get(k) if props is not None else None
            if child is None:
                child = addl
            if child is None:
                out[k] = _copy(v)
            elif v is None and not child.nullable:
                if child.default is not _MISSING:
                    out[k] = _default(_copy(child.default), child)
            else:
                out[k] = _default(v, child)
        if props:
            for k, child in props.items():
                if child.default is not _MISSING and k not in value:
                    if node.root_like and k in ("apiVersion", "kind", "metadata"):
                        continue
                    out[k] = _default(_copy(child.default), child)
        return out
    if isinstance(value, list):
        items = node.items
        if items is None:
            return _copy(value)
        result: list[Any] = []
        for v in value:
            if v is None and not items.nullable and items.default is not _MISSING:
                result.append(_default(_copy(items.default), items))
            else:
                result.append(_default(v, items))
        return result
    return value
