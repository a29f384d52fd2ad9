"""`fieldValidation=Strict|Warn|Ignore`: what kube-apiserver does with the unknown and
duplicate fields of a create, update, patch or apply body.

`Strict` refuses the request (400, `strict decoding error: unknown field "spec.replcas"`,
the whole list in one message); `Warn` - the default when a client does not say, as in
kube-apiserver since 1.27 - answers each as a `Warning` header; `Ignore` says nothing.
Whatever the value, what is stored has no unknown field: `pruned` drops a built-in
object's as decoding into its Go type does (from the table Strict reads, so what Strict
refuses is what is dropped), and a custom resource's are pruned by its schema (the CRD hook). Built-in types are checked against their fields
(`machinery/schema/strict.py`), custom resources against their structural schema with
`x-kubernetes-preserve-unknown-fields` honoured. At most `MAX_REPORTED` problems are
reported per request: a body made of a million typos costs its walk, not a million-line
answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubesim.apiserver.core.request import Request
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.machinery.errors import bad_request
from kubesim.machinery.schema.strict import (
    Pairs,
    builtin_model,
    duplicate_fields,
    load_pairs,
    prune_field,
    prune_typed,
    schema_unknown_fields,
    typed_problems,
    typed_unknown_fields,
)

__all__ = [
    "MAX_REPORTED",
    "apply_problems",
    "body_problems",
    "enforce",
    "patch_problems",
    "pruned",
]

MAX_REPORTED: Final = 100
_JSON_PATCH_OP_FIELDS: Final = frozenset({"op", "path", "value", "from"})


def _tree(raw: bytes | None, body: Any) -> Any:
    """The body with its repeated keys when its raw JSON is at hand, else as decoded."""
    if raw:
        try:
            return load_pairs(raw)
        except ValueError:
            pass
    return _pairs(body)


def _pairs(value: Any) -> Any:
    if isinstance(value, Mapping):
        return Pairs((k, _pairs(v)) for k, v in value.items())
    if isinstance(value, list):
        return [_pairs(v) for v in value]
    return value


def _unknown(rt: ResourceType, obj: Mapping[str, Any]) -> list[str]:
    """The unknown fields of a decoded object of `rt` (sorted, as after a patch)."""
    if rt.crd is not None:
        return schema_unknown_fields(obj, rt.crd["compiled"])
    model = builtin_model(rt.group, rt.version, rt.kind)
    return sorted(typed_unknown_fields(obj, model)) if model is not None else []


def pruned(rt: ResourceType, obj: dict[str, Any], subresource: str = "") -> dict[str, Any]:
    """A built-in object without its unknown fields (`obj` itself when it has none); a
    status write is pruned in `.status` only, the one part of it that is kept."""
    if rt.crd is not None:
        return obj
    model = builtin_model(rt.group, rt.version, rt.kind)
    if model is None:
        return obj
    if subresource == "status":
        return prune_field(obj, model, "status")
    out: dict[str, Any] = prune_typed(obj, model)
    return out


def body_problems(rt: ResourceType, raw: bytes | None, body: Any) -> list[str]:
    """A create or update body's problems, worded and ordered as kube-apiserver's."""
    tree = _tree(raw, body)
    if rt.crd is not None:
        found = [f'duplicate field "{p}"' for p in duplicate_fields(tree)]
        if isinstance(body, Mapping):
            found += [f'unknown field "{p}"' for p in _unknown(rt, body)]
        return found
    model = builtin_model(rt.group, rt.version, rt.kind)
    return typed_problems(tree, model) if model is not None else []


def _json_patch_problems(tree: Any) -> list[str]:
    found: list[str] = []
    for i, op in enumerate(tree if isinstance(tree, list) else []):
        if not isinstance(op, Pairs):
            continue
        seen: set[str] = set()
        for key, _value in op:
            if key not in _JSON_PATCH_OP_FIELDS:
                found.append(f'json patch unknown field "[{i}].{key}"')
            elif key in seen:
                found.append(f'json patch duplicate field "[{i}].{key}"')
            seen.add(key)
    return found


def patch_problems(
    rt: ResourceType, content_type: str, raw: bytes | None, body: Any, patched: Mapping[str, Any]
) -> list[str]:
    """A patch's problems: repeated keys of the patch (of a JSON patch's operations), then
    the unknown fields of the object it makes."""
    tree = _tree(raw, body)
    if content_type == "application/json-patch+json":
        found = _json_patch_problems(tree)
    else:
        found = [f'duplicate field "{p}"' for p in duplicate_fields(tree)]
    return found + [f'unknown field "{p}"' for p in _unknown(rt, patched)]


def apply_problems(rt: ResourceType, applied: Mapping[str, Any]) -> list[str]:
    """An apply configuration's unknown fields."""
    return [f'unknown field "{p}"' for p in _unknown(rt, applied)]


def enforce(problems: list[str], req: Request, prefix: str = "") -> None:
    """Refuse (Strict) or warn about (Warn) `problems`, as `req.field_validation` says."""
    if not problems or req.field_validation not in ("Warn", "Strict"):
        return
    problems = problems[:MAX_REPORTED]
    if req.field_validation == "Strict":
        raise bad_request(f"{prefix}strict decoding error: {', '.join(problems)}")
    req.warnings.extend(problems)
