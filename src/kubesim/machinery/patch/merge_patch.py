"""JSON merge patch (RFC 7386, `application/merge-patch+json`)."""

from __future__ import annotations

from typing import Any

from kubesim.machinery.patch.common import JsonDict, PatchError

# ----------------------------------------------------------------------------- JSON merge patch


def apply_merge_patch(obj: JsonDict, patch: JsonDict) -> JsonDict:
    """RFC 7386 JSON merge patch: objects merge recursively, `null` deletes, anything else
    (lists included) replaces."""
    if not isinstance(patch, dict):
        raise PatchError("a JSON merge patch for an object must be a JSON object")
    result = _merge_patch(obj, patch)
    assert isinstance(result, dict)
    return result


def _merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return patch
    out: JsonDict = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = _merge_patch(out.get(key), value)
    return out
