"""The CRD's OpenAPI schema rules, as kube-apiserver applies them to a JobSet it is sent.

`jobset submit --dry-run=client` and the SDK's `build()` must refuse what the API server
refuses before any webhook sees the object: a negative `replicas` (`minimum: 0`), an unknown
failure-policy `action` (`enum`), a string where an integer belongs, and, with
`fieldValidation=Strict` as kubectl sends it, a field the schema does not declare. Two pure
functions on the object and the CRD version's `openAPIV3Schema`:

* `schema_errors`: type, `enum`, `minimum`/`maximum`, `minLength`/`maxLength`, `pattern`,
  `minItems`/`maxItems` and `required`, worded as kube-openapi words them
  (`spec.replicatedJobs[0].replicas: Invalid value: -1: spec.replicatedJobs[0].replicas in
  body should be greater than or equal to 0`);
* `unknown_fields`: the paths of undeclared fields (`spec.replicatedJobs[0].replcas`), and
  `strict_decoding_message`, the API server's text for them.

The CEL rules (`x-kubernetes-validations`) are not evaluated here: the JobSet ones guard
updates (immutability) or repeat rules the webhook's `validate_create` already applies. A
handwritten walk, because the only full implementation in the project is the simulator's,
which the product may not import.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, Final

from jobset.api.validation.errors import ErrorType, FieldError, go_quote, invalid, too_long

__all__ = ["schema_errors", "strict_decoding_message", "unknown_fields"]

# Always kept at the root and in embedded resources, whatever the schema says.
_OBJECT_META_KEYS: Final = frozenset({"apiVersion", "kind", "metadata"})
_JSON_TYPES: Final = {bool: "boolean", str: "string", list: "array", dict: "object"}


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    return _JSON_TYPES.get(type(value), "object")


def _type_ok(value: Any, node: Mapping[str, Any]) -> bool:
    if node.get("x-kubernetes-int-or-string"):
        return _json_type(value) in ("integer", "string")
    expected = node.get("type")
    if not expected:
        return True
    actual = _json_type(value)
    return actual == expected or (expected == "number" and actual == "integer")


def _go_float(value: float) -> str:
    """Go's `%v` of a float64 limit (`0`, `1`, `2.5`), as kube-openapi prints it."""
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e21 else repr(value)


@lru_cache(maxsize=64)
def _pattern(source: str) -> re.Pattern[str]:
    return re.compile(source)


def _value_errors(value: Any, node: Mapping[str, Any], path: str) -> list[FieldError]:
    """The rules of one node on its own value (not its children)."""
    errs: list[FieldError] = []
    if isinstance(value, str):
        if "maxLength" in node and len(value) > node["maxLength"]:
            errs.append(too_long(path, int(node["maxLength"])))
        if "minLength" in node and len(value) < node["minLength"]:
            limit = node["minLength"]
            errs.append(
                invalid(path, value, f"{path} in body should be at least {limit} chars long")
            )
        if "pattern" in node and _pattern(str(node["pattern"])).search(value) is None:
            errs.append(invalid(path, value, f"{path} in body should match '{node['pattern']}'"))
    elif isinstance(value, int | float) and not isinstance(value, bool):
        if "maximum" in node and value > node["maximum"]:
            limit = _go_float(node["maximum"])
            errs.append(
                invalid(path, value, f"{path} in body should be less than or equal to {limit}")
            )
        if "minimum" in node and value < node["minimum"]:
            limit = _go_float(node["minimum"])
            errs.append(
                invalid(path, value, f"{path} in body should be greater than or equal to {limit}")
            )
    elif isinstance(value, list):
        if "maxItems" in node and len(value) > node["maxItems"]:
            limit = int(node["maxItems"])
            unit = "item" if limit == 1 else "items"
            errs.append(
                FieldError(
                    path, ErrorType.TOO_MANY, f"must have at most {limit} {unit}", len(value)
                )
            )
        if "minItems" in node and len(value) < node["minItems"]:
            limit = node["minItems"]
            errs.append(
                invalid(path, len(value), f"{path} in body should have at least {limit} items")
            )
    elif isinstance(value, dict):
        for req in node.get("required") or ():
            if req not in value:
                errs.append(FieldError(_join(path, str(req)), ErrorType.REQUIRED, "", ""))
    enum = node.get("enum")
    if enum is not None and value not in enum:
        supported = ", ".join(go_quote(e) if isinstance(e, str) else str(e) for e in enum)
        errs.append(
            FieldError(path, ErrorType.NOT_SUPPORTED, f"supported values: {supported}", value)
        )
    return errs  # fmt: skip


def _walk(value: Any, node: Mapping[str, Any], path: str, errs: list[FieldError]) -> None:
    if value is None:
        if not node.get("nullable") and (
            node.get("type") or node.get("x-kubernetes-int-or-string")
        ):
            expected = "integer,string" if node.get("x-kubernetes-int-or-string") else node["type"]
            errs.append(_type_error(path, "null", expected))
        return  # fmt: skip
    if not _type_ok(value, node):
        expected = "integer,string" if node.get("x-kubernetes-int-or-string") else node["type"]
        errs.append(_type_error(path, _json_type(value), expected))
        return
    errs.extend(_value_errors(value, node, path))
    if isinstance(value, dict):
        props = node.get("properties")
        addl = node.get("additionalProperties")
        for key, child in value.items():
            sub = props.get(key) if isinstance(props, Mapping) else None
            if sub is None and isinstance(addl, Mapping):
                sub = addl
            if sub is not None:
                _walk(child, sub, _join(path, str(key)), errs)
    elif isinstance(value, list) and isinstance(node.get("items"), Mapping):
        for i, item in enumerate(value):
            _walk(item, node["items"], f"{path}[{i}]", errs)


def _type_error(path: str, actual: str, expected: str) -> FieldError:
    where = f"{path} in body" if path else "in body"
    return FieldError(
        path,
        ErrorType.TYPE_INVALID,
        f"{where} must be of type {expected}: {go_quote(actual)}",
        actual,
    )


def schema_errors(obj: Mapping[str, Any], schema: Mapping[str, Any]) -> list[FieldError]:
    """Every rule of `schema` (a CRD version's `openAPIV3Schema`) that `obj` breaks, in
    document order; `metadata`, `apiVersion` and `kind` are the API server's own business."""
    errs: list[FieldError] = []
    props = schema.get("properties") or {}
    for key, value in obj.items():
        if key in _OBJECT_META_KEYS or key not in props:
            continue
        _walk(value, props[key], key, errs)
    return errs


def _unknown(value: Any, node: Mapping[str, Any], path: str, out: list[str]) -> None:
    if isinstance(value, dict):
        if node.get("x-kubernetes-preserve-unknown-fields"):
            return
        props = node.get("properties")
        addl = node.get("additionalProperties")
        if props is None and addl is None:
            return  # an untyped map or object: nothing to compare with
        embedded = bool(node.get("x-kubernetes-embedded-resource"))
        for key, child in value.items():
            if embedded and key in _OBJECT_META_KEYS:
                continue
            sub = props.get(key) if isinstance(props, Mapping) else None
            if sub is None and isinstance(addl, Mapping):
                sub = addl
            if sub is None and addl is not True:
                out.append(_join(path, str(key)))
            elif sub is not None:
                _unknown(child, sub, _join(path, str(key)), out)
    elif isinstance(value, list) and isinstance(node.get("items"), Mapping):
        for i, item in enumerate(value):
            _unknown(item, node["items"], f"{path}[{i}]", out)


def unknown_fields(obj: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """The paths of the fields of `obj` that `schema` does not declare, as the API server
    names them under `fieldValidation=Strict` (`spec.replicatedJobs[0].replcas`). The root's
    `metadata` is ObjectMeta, which the API server checks itself: not looked into here."""
    out: list[str] = []
    props = schema.get("properties") or {}
    for key, value in obj.items():
        if key in _OBJECT_META_KEYS:
            continue
        if key not in props:
            out.append(key)
        else:
            _unknown(value, props[key], key, out)
    return out


def strict_decoding_message(paths: list[str]) -> str:
    """The API server's answer (400 BadRequest) to unknown fields under `fieldValidation=Strict`."""
    return "strict decoding error: " + ", ".join(f"unknown field {go_quote(p)}" for p in paths)
