"""Server-side printing: `meta.k8s.io/v1 Table` answers for `kubectl get`, and
`PartialObjectMetadata` answers for clients that ask for metadata only.

kubectl asks for Tables and prints whatever columns the server gives, so the columns are
what users see. Built-ins get the columns kube-apiserver prints for them, declared in their
registry modules (`registry/<group>/<kind>.py`); custom resources get their CRD's
`additionalPrinterColumns` (JSONPath), else Name/Age.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from kubesim.apiserver.registry import catalogue
from kubesim.apiserver.registry.columns import Column, Obj, age, age_of, name
from kubesim.apiserver.registry.resourcetype import ResourceType


def wants_table(accept: str) -> bool:
    return "as=Table" in accept


def wants_metadata(accept: str) -> bool:
    """Whether the client asked for `PartialObjectMetadata` (client-go's metadata client,
    or a writer that needs only the new resourceVersion): kube-apiserver then answers any
    verb - get, list, watch, and the writes - with the objects' metadata only. The first
    media type the client lists that this server produces decides, as in kube-apiserver's
    negotiation (protobuf is not produced here: client-go lists JSON after it)."""
    for media in accept.split(","):
        if "protobuf" in media:
            continue
        return "as=PartialObjectMetadata" in media and "g=meta.k8s.io" in media
    return False


# --------------------------------------------------------------------- JSONPath

_TOKEN = re.compile(
    r"\.([A-Za-z0-9_\-$]+)|\[(\d+|\*)\]|\[\?\(@\.([A-Za-z0-9_.\-]+)\s*==\s*['\"]([^'\"]*)['\"]\)\]"
)


def jsonpath(obj: Any, path: str) -> list[Any]:
    """The subset of JSONPath CRD printer columns use: fields, [n], [*], [?(@.k=="v")]."""
    path = path.strip()
    if path.startswith("{") and path.endswith("}"):
        path = path[1:-1]
    if path.startswith("$"):
        path = path[1:]
    values = [obj]
    pos = 0
    while pos < len(path):
        m = _TOKEN.match(path, pos)
        if m is None:
            return []
        pos = m.end()
        field, index, fkey, fval = m.groups()
        nxt: list[Any] = []
        for v in values:
            if field is not None:
                if isinstance(v, dict) and field in v:
                    nxt.append(v[field])
            elif index is not None:
                if isinstance(v, list):
                    if index == "*":
                        nxt.extend(v)
                    elif int(index) < len(v):
                        nxt.append(v[int(index)])
            elif isinstance(v, list):
                for item in v:
                    got = jsonpath(item, "." + fkey) if isinstance(item, dict) else []
                    if got and str(got[0]) == fval:
                        nxt.append(item)
        values = nxt
    return values


def _crd_columns(rt: ResourceType) -> list[Column]:
    version = next(
        (v for v in (rt.crd or {}).get("versions", []) if v.get("name") == rt.version), None
    )
    printer = (version or {}).get("additionalPrinterColumns")
    if printer is None:
        printer = (rt.crd or {}).get("additionalPrinterColumns")
    cols: list[Column] = [("Name", "string", 0, name)]
    if not printer:
        cols.append(("Age", "date", 0, age))
        return cols
    for col in printer:
        ctype = col.get("type", "string")
        path = col.get("jsonPath", "")

        def cell(o: Obj, path: str = path, ctype: str = ctype) -> Any:
            got = jsonpath(o, path)
            if not got:
                return None
            value = got[0]
            if ctype == "date" and isinstance(value, str):
                return age_of(value)
            if isinstance(value, (dict, list)):
                import orjson

                return orjson.dumps(value).decode()
            return value

        cols.append((col["name"], ctype, int(col.get("priority", 0)), cell))
    return cols


def columns_for(rt: ResourceType) -> list[Column]:
    if rt.crd is not None:
        return _crd_columns(rt)
    return list(catalogue.columns(rt.key))


def partial_object_metadata(o: Obj) -> Obj:
    """`meta.k8s.io/v1 PartialObjectMetadata`: the object's metadata alone."""
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": o["metadata"],
    }


def partial_object_metadata_list(objs: list[Obj], list_meta: dict[str, Any]) -> Obj:
    """`meta.k8s.io/v1 PartialObjectMetadataList`: a list's items, metadata alone."""
    return {
        "kind": "PartialObjectMetadataList",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "items": [partial_object_metadata(o) for o in objs],
    }


def to_table(
    rt: ResourceType,
    objs: list[Obj],
    include_object: str,
    list_meta: dict[str, Any] | None,
    with_headers: bool = True,
) -> dict[str, Any]:
    cols = columns_for(rt)
    rows = []
    for o in objs:
        row: dict[str, Any] = {"cells": [_safe(cell, o) for _, _, _, cell in cols]}
        if include_object == "Object":
            row["object"] = o
        elif include_object != "None":
            row["object"] = partial_object_metadata(o)
        rows.append(row)
    table: dict[str, Any] = {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta
        or {"resourceVersion": objs[0]["metadata"].get("resourceVersion", "") if objs else ""},
        "columnDefinitions": [
            {
                "name": name,
                "type": ctype if ctype != "date" else "string",
                "format": "name" if name == "Name" else "",
                "description": name,
                "priority": prio,
            }
            for name, ctype, prio, _ in cols
        ],
        "rows": rows,
    }
    _ = with_headers  # kubectl prints headers only when they change; always sending them is safe
    return table


def _safe(cell: Callable[[Obj], Any], o: Obj) -> Any:
    try:
        return cell(o)
    except Exception:  # a malformed object must not break `kubectl get` of a whole list
        return "<error>"
