"""Patches and field managers: JSON, merge and strategic merge patches, server-side apply
with its conflicts, and the managedFields every write records (`kubesim.machinery.patch`
does the work; this is where the API server's rules and errors around it live)."""

from __future__ import annotations

from typing import Any

from kubesim.apiserver.core.request import SYSTEM_USER, Request
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.clock import now_rfc3339
from kubesim.machinery import patch as patching
from kubesim.machinery.errors import ApiError, Cause, bad_request, not_found

__all__ = [
    "APPLY_PATCH",
    "APPLY_PATCH_CBOR",
    "APPLY_TYPES",
    "JSON_PATCH",
    "MERGE_PATCH",
    "STRATEGIC_PATCH",
    "apply_create",
    "apply_patch",
    "apply_to",
    "patch_schema",
    "record_managers",
]

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
APPLY_PATCH_CBOR = "application/apply-patch+cbor"
APPLY_TYPES = (APPLY_PATCH, APPLY_PATCH_CBOR)


def record_managers(
    obj: dict[str, Any],
    old: dict[str, Any] | None,
    req: Request,
    operation: str,
    rt: ResourceType,
    subresource: str = "",
) -> dict[str, Any]:
    if req.user.get("username") == SYSTEM_USER["username"]:
        # The simulated in-process controllers (job controller, kubelet, scheduler, GC)
        # do not record managedFields: computing them dominated the cost of their
        # status writes, and no client relies on those entries.
        return obj
    manager = req.field_manager or "unknown"
    try:
        return patching.update_managed_fields(
            old,
            obj,
            manager,
            operation,
            now_rfc3339(),
            subresource=subresource,
            schema=patch_schema(rt),
        )
    except Exception:  # managedFields are bookkeeping: never fail a write over them
        return obj


def _check_apply(body: Any, req: Request) -> dict[str, Any]:
    if not req.field_manager:
        raise bad_request("PATCH requests with apply content types require a fieldManager")
    if not isinstance(body, dict):
        raise bad_request("apply patch must be an object")
    return body


def apply_create(
    rt: ResourceType,
    namespace: str,
    name: str,
    body: Any,
    req: Request,
    subresource: str,
) -> dict[str, Any]:
    """Server-side apply of an object that does not exist: the object to create."""
    body = _check_apply(body, req)
    if subresource:
        raise not_found(rt.group, rt.plural, name)
    applied = patching.server_side_apply(
        None,
        body,
        req.field_manager,
        patch_schema(rt),
        force=req.force,
        now=now_rfc3339(),
        ignore=_apply_ignores(rt, ""),
    )
    meta = applied.setdefault("metadata", {})
    meta["name"] = name
    if rt.namespaced:
        meta["namespace"] = namespace
    return applied


def apply_to(
    rt: ResourceType,
    name: str,
    old: dict[str, Any],
    body: Any,
    req: Request,
    subresource: str,
) -> dict[str, Any]:
    """Server-side apply of `body` to the stored `old`; a conflict is kube-apiserver's 409."""
    body = _check_apply(body, req)
    try:
        return patching.server_side_apply(
            old,
            body,
            req.field_manager,
            patch_schema(rt),
            force=req.force,
            now=now_rfc3339(),
            subresource=subresource,
            ignore=_apply_ignores(rt, subresource),
        )
    except patching.ConflictError as exc:
        raise _apply_conflict(rt, name, exc) from None


def _apply_ignores(rt: ResourceType, subresource: str) -> tuple[str, ...]:
    """The main resource of a type with a status subresource does not own `.status`."""
    return ("status",) if rt.has_status_subresource and subresource != "status" else ()


def patch_schema(rt: ResourceType) -> patching.PatchSchema:
    if rt.crd is not None:
        schema = rt.crd.get("schema") or {}
        return patching.crd_patch_schema(schema)
    return patching.builtin_patch_schema(rt.group, rt.kind)


def _apply_conflict(rt: ResourceType, name: str, exc: patching.ConflictError) -> ApiError:
    causes = [Cause(c["reason"], c["message"], c.get("field", "")) for c in exc.status_causes()]
    return ApiError(
        409,
        "Conflict",
        str(exc),
        group=rt.group,
        kind=rt.plural,
        name=name,
        causes=causes,
    )


def apply_patch(
    rt: ResourceType, old: dict[str, Any], content_type: str, body: Any
) -> dict[str, Any]:
    try:
        if content_type == JSON_PATCH:
            if not isinstance(body, list):
                raise bad_request("json patch must be a list of operations")
            return patching.apply_json_patch(old, body)
        if content_type == MERGE_PATCH:
            if not isinstance(body, dict):
                raise bad_request("merge patch must be a JSON object")
            return patching.apply_merge_patch(old, body)
        if content_type == STRATEGIC_PATCH:
            if rt.crd is not None:
                raise ApiError(
                    415,
                    "UnsupportedMediaType",
                    f"the body of the request was in an unknown format - accepted media "
                    f"types include: {JSON_PATCH}, {MERGE_PATCH}, {APPLY_PATCH}",
                )
            if not isinstance(body, dict):
                raise bad_request("strategic merge patch must be a JSON object")
            return patching.apply_strategic_merge_patch(
                old, body, patching.builtin_patch_schema(rt.group, rt.kind)
            )
    except patching.PatchError as exc:
        raise ApiError(422, "Invalid", str(exc)) from None
    raise ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: "
        f"{JSON_PATCH}, {MERGE_PATCH}, {APPLY_PATCH}, {STRATEGIC_PATCH}",
    )
