"""`crd_patch_schema`: a custom resource's merge semantics from its structural `openAPIV3Schema`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Final

from kubesim.machinery.patch.builtin import builtin_node
from kubesim.machinery.patch.schema import (
    ATOMIC_LIST,
    UNKNOWN,
    ListStrategy,
    PatchSchema,
    SchemaNode,
)

_CRD_CACHE: dict[int, tuple[Mapping[str, Any], PatchSchema]] = {}


_CRD_CACHE_SIZE: Final = 128


def crd_patch_schema(openapi_v3_schema: Mapping[str, Any]) -> PatchSchema:
    """Merge semantics of a custom resource from its structural `openAPIV3Schema`:
    `x-kubernetes-list-type` (atomic, the default | set | map with `x-kubernetes-list-map-keys`)
    and `x-kubernetes-map-type: atomic`. `metadata` always follows ObjectMeta, as the API server
    does for every custom resource. Results are cached per schema object (CRD schemas are
    long-lived), so calling this on every request is cheap."""
    cached = _CRD_CACHE.get(id(openapi_v3_schema))
    if cached is not None and cached[0] is openapi_v3_schema:
        return cached[1]
    root = _crd_node(openapi_v3_schema)
    fields = dict(root.fields)
    fields["metadata"] = builtin_node("ObjectMeta")
    schema = PatchSchema(replace(root, fields=fields), "crd")
    if len(_CRD_CACHE) >= _CRD_CACHE_SIZE:
        _CRD_CACHE.pop(next(iter(_CRD_CACHE)))
    _CRD_CACHE[id(openapi_v3_schema)] = (openapi_v3_schema, schema)
    return schema


def _crd_node(schema: Any) -> SchemaNode:
    if not isinstance(schema, Mapping):
        return UNKNOWN
    if schema.get("type") == "array" or "items" in schema:
        items = schema.get("items")
        item = _crd_node(items)
        list_type = schema.get("x-kubernetes-list-type", "atomic")
        if list_type == "map":
            keys = tuple(str(k) for k in schema.get("x-kubernetes-list-map-keys") or ())
            props = items.get("properties") if isinstance(items, Mapping) else None
            defaults = tuple(
                (k, props[k]["default"])
                for k in keys
                if isinstance(props, Mapping)
                and isinstance(props.get(k), Mapping)
                and "default" in props[k]
            )
            return SchemaNode(list=ListStrategy("map", keys, key_defaults=defaults), item=item)
        if list_type == "set":
            return SchemaNode(list=ListStrategy("set"), item=item)
        return SchemaNode(list=ATOMIC_LIST, item=item)
    props = schema.get("properties")
    fields = {str(k): _crd_node(v) for k, v in props.items()} if isinstance(props, Mapping) else {}
    if schema.get("x-kubernetes-embedded-resource"):
        fields["metadata"] = builtin_node("ObjectMeta")
    extra = schema.get("additionalProperties")
    elem = _crd_node(extra) if isinstance(extra, Mapping) else None
    atomic = schema.get("x-kubernetes-map-type") == "atomic"
    if not fields and elem is None and not atomic:
        return UNKNOWN
    return SchemaNode(fields=fields, elem=elem, atomic=atomic)
