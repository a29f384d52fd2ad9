"""OpenAPI documents: enough for `kubectl explain`, `kubectl apply` and Helm.

Custom resources are described by their CRD schemas. Built-in types are listed with
their paths (so kubectl sees that the server validates fields itself) but with open
schemas: kubectl then uses its compiled-in knowledge of those types.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from kubesim.apiserver.registry import catalogue
from kubesim.apiserver.registry.registry import Registry
from kubesim.apiserver.registry.resourcetype import ResourceType

BUILTIN_SCHEMAS = catalogue.schemas()


def _reverse_group(group: str) -> str:
    if not group:
        return "io.k8s.api.core"
    return ".".join(reversed(group.split(".")))


def definition_name(rt: ResourceType) -> str:
    return f"{_reverse_group(rt.group)}.{rt.version}.{rt.kind}"


def _published(rt: ResourceType) -> bool:
    """Custom resources, and the built-ins kubectl v1.32 does not know (those whose registry
    module gives a schema)."""
    return rt.crd is not None or (rt.group, rt.version, rt.kind) in BUILTIN_SCHEMAS


def _object_schema(rt: ResourceType) -> dict[str, Any]:
    gvk = [{"group": rt.group, "version": rt.version, "kind": rt.kind}]
    schema: dict[str, Any]
    builtin = BUILTIN_SCHEMAS.get((rt.group, rt.version, rt.kind))
    if builtin is not None:
        schema = dict(builtin)
    elif rt.crd is not None and rt.crd.get("schema"):
        schema = dict(rt.crd["schema"])
        props = dict(schema.get("properties") or {})
        props.setdefault(
            "apiVersion",
            {
                "type": "string",
                "description": "APIVersion defines the versioned schema of this representation of an object.",
            },
        )
        props.setdefault(
            "kind",
            {
                "type": "string",
                "description": "Kind is a string value representing the REST resource this object represents.",
            },
        )
        props["metadata"] = {
            "allOf": [
                {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
            ],
            "description": "Standard object's metadata.",
        }
        schema["properties"] = props
    else:
        schema = {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {
                    "allOf": [
                        {
                            "$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
                        }
                    ]
                },
            },
        }
    schema["x-kubernetes-group-version-kind"] = gvk
    return schema


_OBJECT_META = {
    "type": "object",
    "description": "ObjectMeta is metadata that all persisted resources must have.",
    "properties": {
        "name": {"type": "string", "description": "Name must be unique within a namespace."},
        "generateName": {"type": "string"},
        "namespace": {"type": "string"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        "uid": {"type": "string"},
        "resourceVersion": {"type": "string"},
        "generation": {"type": "integer", "format": "int64"},
        "creationTimestamp": {"type": "string", "format": "date-time"},
        "deletionTimestamp": {"type": "string", "format": "date-time"},
        "finalizers": {"type": "array", "items": {"type": "string"}},
        "ownerReferences": {
            "type": "array",
            "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
        "managedFields": {
            "type": "array",
            "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    },
}

_QUERY_PARAMS = [
    {"name": "dryRun", "in": "query", "schema": {"type": "string"}, "uniqueItems": True},
    {"name": "fieldManager", "in": "query", "schema": {"type": "string"}, "uniqueItems": True},
    {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}, "uniqueItems": True},
]


def _query(name: str, type_: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "schema": {"type": type_}, "uniqueItems": True}


# What kube-apiserver declares and this server reads (watch is left out: a list here is
# never a stream; clients that watch know the parameter without the document).
_LIST_PARAMS = [
    _query("labelSelector", "string"),
    _query("fieldSelector", "string"),
    _query("limit", "integer"),
    _query("continue", "string"),
]
_DELETE_PARAMS = [
    _query("dryRun", "string"),
    _query("gracePeriodSeconds", "integer"),
    _query("orphanDependents", "boolean"),
    _query("propagationPolicy", "string"),
]


def _path_param(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "schema": {"type": "string"},
        "uniqueItems": True,
    }


def _paths_for(rt: ResourceType) -> dict[str, Any]:
    prefix = f"/apis/{rt.group}/{rt.version}" if rt.group else f"/api/{rt.version}"
    base = (
        f"{prefix}/namespaces/{{namespace}}/{rt.plural}"
        if rt.namespaced
        else f"{prefix}/{rt.plural}"
    )
    # Built-ins carry no component schema: kubectl then falls back to its compiled-in
    # patch metadata for them instead of trusting an open schema.
    ref: dict[str, Any] = (
        {"$ref": f"#/components/schemas/{definition_name(rt)}"}
        if _published(rt)
        else {"type": "object"}
    )
    body = {"content": {"application/json": {"schema": ref}}}
    action = {
        "x-kubernetes-group-version-kind": {
            "group": rt.group,
            "version": rt.version,
            "kind": rt.kind,
        }
    }
    ok = {"200": {"description": "OK", "content": {"application/json": {"schema": ref}}}}
    in_namespace = [_path_param("namespace")] if rt.namespaced else []
    return {
        base: {
            "parameters": in_namespace,
            "get": {
                **action,
                "x-kubernetes-action": "list",
                "parameters": _LIST_PARAMS,
                "responses": ok,
            },
            "post": {
                **action,
                "x-kubernetes-action": "post",
                "parameters": _QUERY_PARAMS,
                "requestBody": body,
                "responses": ok,
            },
        },
        f"{base}/{{name}}": {
            "parameters": [_path_param("name"), *in_namespace],
            "get": {**action, "x-kubernetes-action": "get", "responses": ok},
            "put": {
                **action,
                "x-kubernetes-action": "put",
                "parameters": _QUERY_PARAMS,
                "requestBody": body,
                "responses": ok,
            },
            "patch": {
                **action,
                "x-kubernetes-action": "patch",
                "parameters": [
                    *_QUERY_PARAMS,
                    {"name": "force", "in": "query", "schema": {"type": "boolean"}},
                ],
                "requestBody": {
                    "content": {"application/merge-patch+json": {"schema": {"type": "object"}}}
                },
                "responses": ok,
            },
            "delete": {
                **action,
                "x-kubernetes-action": "delete",
                "parameters": _DELETE_PARAMS,
                "requestBody": {
                    "content": {"application/json": {"schema": {"type": "object"}}},
                    "required": False,
                },
                "responses": {
                    **ok,
                    "202": {"description": "Accepted", "content": ok["200"]["content"]},
                },
            },
        },
    }


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def v3_index(registry: Registry) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for group, versions in registry.groups().items():
        for version in versions:
            doc = v3_document(registry, _gv_path(group, version))
            digest = hashlib.sha256(orjson.dumps(doc)).hexdigest()[:32].upper()
            paths[_gv_path(group, version)] = {
                "serverRelativeURL": f"/openapi/v3/{_gv_path(group, version)}?hash={digest}"
            }
    return {"paths": paths}


def v3_document(registry: Registry, gv_path: str) -> dict[str, Any] | None:
    parts = gv_path.split("?")[0].strip("/").split("/")
    if parts[0] == "api" and len(parts) == 2:
        group, version = "", parts[1]
    elif parts[0] == "apis" and len(parts) == 3:
        group, version = parts[1], parts[2]
    else:
        return None
    types = registry.in_group_version(group, version)
    if not types:
        return None
    schemas: dict[str, Any] = {"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": _OBJECT_META}
    paths: dict[str, Any] = {}
    for rt in types:
        if _published(rt):
            schemas[definition_name(rt)] = _object_schema(rt)
        paths.update(_paths_for(rt))
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes (jobset sim)", "version": "v1.32.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    }


V2_PROTOBUF = (
    "application/octet-stream"  # what client-go accepts; the "@" media type is not RFC-valid
)


def _pb_field(number: int, payload: bytes) -> bytes:
    """One length-delimited protobuf field (wire type 2); lengths here stay below 128."""
    assert len(payload) < 128
    return bytes([(number << 3) | 2, len(payload)]) + payload


def v2_protobuf() -> bytes:
    """A minimal OpenAPI v2 document in gnostic's protobuf encoding.

    client-go only ever asks for /openapi/v2 as protobuf (kubectl falls back to it for
    client-side validation when it cannot confirm server-side validation). Hand-encoding
    the two fields needed (swagger, info) avoids a protobuf dependency; a document with
    no definitions makes kubectl skip client-side schema checks, leaving validation to
    this server, as with any type the schema does not list.
    """
    info = _pb_field(1, b"Kubernetes (jobset sim)") + _pb_field(2, b"v1.32.0")
    return _pb_field(1, b"2.0") + _pb_field(2, info)


def v2_document(registry: Registry) -> dict[str, Any]:
    """Swagger 2.0 with the custom resources' definitions (older clients read this)."""
    definitions: dict[str, Any] = {
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": _OBJECT_META,
    }
    for rt in registry.all():
        if not _published(rt):
            continue
        schema = orjson.loads(
            orjson.dumps(_object_schema(rt)).replace(b"#/components/schemas/", b"#/definitions/")
        )
        definitions[definition_name(rt)] = schema
    return {
        "swagger": "2.0",
        "info": {"title": "Kubernetes (jobset sim)", "version": "v1.32.0"},
        "paths": {},
        "definitions": definitions,
    }
