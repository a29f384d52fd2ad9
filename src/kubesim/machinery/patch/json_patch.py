"""JSON patch (RFC 6902, `application/json-patch+json`), with kube-apiserver's limits and errors."""

from __future__ import annotations

import re
from typing import Any, Final

import jsonpatch

from kubesim.machinery.patch.common import JsonDict, PatchError

# ----------------------------------------------------------------------------------- JSON patch

_MAX_JSON_PATCH_OPERATIONS: Final = 10000  # kube-apiserver's limit


def apply_json_patch(obj: JsonDict, ops: list[Any]) -> JsonDict:
    """RFC 6902 JSON patch, as `kubectl patch --type json` sends. The `jsonpatch` library works
    on a deep copy, so `obj` is untouched."""
    if not isinstance(ops, list):
        raise PatchError("a JSON patch must be a list of operations")
    if len(ops) > _MAX_JSON_PATCH_OPERATIONS:
        raise PatchError(
            f"The allowed maximum operations in a JSON patch is {_MAX_JSON_PATCH_OPERATIONS}, "
            f"got {len(ops)}"
        )
    for i, op in enumerate(ops):
        if not isinstance(op, dict):
            raise PatchError(f"JSON patch operation {i} is not an object")
        if "op" not in op:
            raise PatchError(f"JSON patch operation {i} has no 'op'")
        if "path" not in op:
            raise PatchError(f"JSON patch operation {i} ({op['op']}) has no 'path'")
    try:
        result = jsonpatch.JsonPatch(ops).apply(obj, in_place=False)
    except jsonpatch.JsonPatchTestFailed as exc:
        detail = re.sub(r" \(<class '\w+'>\)", "", str(exc))
        raise PatchError(f"the test operation failed: {detail}") from None
    except (
        jsonpatch.JsonPatchException,
        jsonpatch.JsonPointerException,
        KeyError,
        IndexError,
        TypeError,
        ValueError,
        AttributeError,
    ) as exc:
        raise PatchError(f"unable to apply JSON patch: {exc}") from None
    if not isinstance(result, dict):
        raise PatchError("a JSON patch must leave an object")
    return result
