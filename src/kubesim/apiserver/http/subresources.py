"""The `binding` and `scale` subresources: a pod bound to a node, and the `autoscaling/v1 Scale`
view of a workload's replicas, read, replaced and patched."""

from __future__ import annotations

from typing import Any

from kubesim.apiserver.core.apicore import ApiCore
from kubesim.apiserver.core.request import Request
from kubesim.apiserver.http.responses import success_status
from kubesim.apiserver.http.target import Target
from kubesim.machinery import patch as patching
from kubesim.machinery.errors import ApiError, bad_request

__all__ = ["bind", "patch_scale", "scale_of", "set_scale"]


async def bind(core: ApiCore, t: Target, body: Any, req: Request) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise bad_request("the body of the request must be a JSON object")
    await core.bind(t.rt, t.namespace or "", t.name, body, req)
    return success_status()


async def set_scale(core: ApiCore, t: Target, body: Any, req: Request) -> dict[str, Any]:
    obj = core.get(t.rt, t.namespace or "", t.name)
    replicas = ((body or {}).get("spec") or {}).get("replicas")
    spec = {**(obj.get("spec") or {}), "replicas": replicas}
    return await core.update(t.rt, t.namespace or "", t.name, {**obj, "spec": spec}, req)


async def patch_scale(
    core: ApiCore, t: Target, ctype: str, body: Any, req: Request
) -> dict[str, Any]:
    scale = scale_of(core.get(t.rt, t.namespace or "", t.name))
    try:
        if ctype.split(";")[0].strip() == "application/json-patch+json":
            patched = patching.apply_json_patch(scale, body if isinstance(body, list) else [])
        else:  # merge and strategic merge patches are the same on a Scale
            patched = patching.apply_merge_patch(scale, body if isinstance(body, dict) else {})
    except patching.PatchError as exc:
        raise ApiError(422, "Invalid", str(exc)) from None
    return await set_scale(core, t, patched, req)


def scale_of(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    selector = (obj.get("spec") or {}).get("selector") or {}
    if "matchLabels" in selector or "matchExpressions" in selector:
        selector = selector.get("matchLabels") or {}  # a ReplicationController's is a map
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        },
        "spec": {"replicas": (obj.get("spec") or {}).get("replicas", 0)},
        "status": {
            "replicas": (obj.get("status") or {}).get("replicas", 0),
            "selector": ",".join(f"{k}={v}" for k, v in selector.items()),
        },
    }
