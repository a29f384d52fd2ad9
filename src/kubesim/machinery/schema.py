"""What kube-apiserver does with a CRD's structural schema when a custom object is written.

The simulated API server calls, for every create and update of a custom resource:

    compiled = compile_schema(version["schema"]["openAPIV3Schema"])   # once per CRD version
    obj = prune(obj, compiled)                                         # drop unknown fields
    obj = apply_defaults(obj, compiled)                                # `default` values
    causes = validate(obj, compiled, old)                              # [] when valid

The behaviour and the error texts follow kube-apiserver (apiextensions-apiserver with its
kube-openapi validator and CEL), because clients and tests compare against a real cluster:

* `compile_schema` rejects schemas a real server rejects (not structural, bad regex, CEL that
  does not compile, `oldSelf` below a non-map list, `uniqueItems: true`, ...) with
  `SchemaError`, a ValueError carrying `Cause`s the server can put in its 422 response.
* `prune` keeps only the fields the schema declares, except under
  `x-kubernetes-preserve-unknown-fields`, and always keeps `apiVersion`/`kind`/`metadata` of
  the object and of `x-kubernetes-embedded-resource` objects.
* `apply_defaults` applies `default`s top-down, only where the parent exists; a defaulted
  object then receives its own children's defaults. As in the real server, a `null` for a
  non-nullable field is replaced by the default, or dropped when there is none.
* `validate` reports OpenAPI errors first, then `x-kubernetes-list-type` errors, then CEL rule
  errors. Like kube-apiserver, it skips the CEL rules entirely when an error that could make
  them expensive or meaningless (wrong type, unsupported enum value, missing required field,
  too long, too many) was found, and says so with a final `<nil>` cause. On update it
  implements validation ratcheting (on by default since Kubernetes 1.30): errors in a part of
  the object that is unchanged from the old object are not reported, except for transition
  rules, which are always evaluated where an old value exists.

Simplifications: string formats are checked loosely (date-time, date, duration, byte, uuid,
ipv4, ipv6, cidr, mac, hostname, email, hexcolor, rgbcolor, bsonobjectid) and others are
accepted; as in the real server `int32`/`int64`/`float`/`double` are not range-checked.
`pattern` uses Python's `re` (RE2 only when `re` rejects the pattern). Embedded resources get
their `apiVersion`/`kind` checked but not their metadata. CEL cost limits are not enforced.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import re
import uuid
from collections.abc import Callable
from typing import Any, Final

from celpy import celtypes
from celpy.adapter import json_to_cel

from kubesim.machinery import field as fe
from kubesim.machinery.cel import (
    CelError,
    CelProgram,
    MapList,
    Optional,
    SetList,
    compile_expression,
    re2_compile,
)
from kubesim.machinery.errors import Cause
from kubesim.machinery.field import go_float

__all__ = [
    "CompiledSchema",
    "SchemaError",
    "apply_defaults",
    "compile_schema",
    "prune",
    "validate",
]

_MISSING: Final[Any] = object()

_TYPES = ("array", "boolean", "integer", "number", "object", "string")
_RULE_REASONS = (
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
)
# CEL keywords that kube-apiserver escapes as `__{keyword}__` when they are property names.
_CEL_RESERVED = frozenset(
    {
        "true", "false", "null", "in", "as", "break", "const", "continue", "else", "for",
        "function", "if", "import", "let", "loop", "package", "namespace", "return", "var",
        "void", "while",
    }
)  # fmt: skip
_CEL_PROPERTY_NAME = re.compile(r"^[a-zA-Z_.\-/][a-zA-Z0-9_.\-/]*$")
_BLOCKING_REASONS = frozenset(
    {
        "FieldValueNotSupported",
        "FieldValueRequired",
        "FieldValueTooLong",
        "FieldValueTooMany",
        "FieldValueTypeInvalid",
    }
)
_SKIPPED_CEL = fe.invalid(
    "<nil>",
    None,
    "some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation",
)
# Keys that value-validation subschemas (allOf/anyOf/oneOf/not) may not use: only the
# structural part of a schema may say what the object looks like.
_FORBIDDEN_IN_JUNCTORS = (
    "default",
    "nullable",
    "additionalProperties",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
    "x-kubernetes-validations",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
)


class SchemaError(ValueError):
    """A schema the API server would refuse in a CRD; `causes` are ready for a 422 Status."""

    def __init__(self, causes: list[Cause]) -> None:
        self.causes = causes
        parts = [f"{c.field}: {c.message}" if c.field else c.message for c in causes]
        super().__init__(parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]")


# ------------------------------------------------------------------------------------------------
# Go-style rendering of values in messages


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return type(v).__name__


def _same(a: Any, b: Any) -> bool:
    """JSON equality that does not confuse `true` with `1` at the top level."""
    return type(a) is type(b) and a == b


def _copy(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _copy(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_copy(x) for x in v]
    return v


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


# ------------------------------------------------------------------------------------------------
# String formats


_DATE_TIME = re.compile(
    r"^\d{4}-\d{2}-\d{2}([Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}(:?\d{2})?)?)?$"
)
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_GO_DURATION = re.compile(r"^[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h|d|w))+$|^[-+]?0$")
_HOSTNAME = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$"
)
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")
_MAC = re.compile(r"^([0-9A-Fa-f]{2}[:-]){5,19}[0-9A-Fa-f]{2}$")
_HEXCOLOR = re.compile(r"^#([0-9A-Fa-f]{3}|[0-9A-Fa-f]{6})$")
_RGBCOLOR = re.compile(r"^rgb\(\s*\d{1,3}%?\s*,\s*\d{1,3}%?\s*,\s*\d{1,3}%?\s*\)$")
_BSON = re.compile(r"^[0-9a-fA-F]{24}$")
_UUID = re.compile(
    r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$"
)


def _is_ip(s: str, version: int) -> bool:
    try:
        return ipaddress.ip_address(s).version == version
    except ValueError:
        return False


def _is_cidr(s: str) -> bool:
    try:
        ipaddress.ip_network(s, strict=False)
    except ValueError:
        return False
    return "/" in s


def _is_byte(s: str) -> bool:
    try:
        base64.b64decode(s, validate=True)
    except ValueError:
        return False
    return True


def _is_uuid_version(version: int) -> Callable[[str], bool]:
    def check(s: str) -> bool:
        try:
            return _UUID.match(s) is not None and uuid.UUID(s).version == version
        except ValueError:
            return False

    return check


# The formats kube-apiserver validates for strings; every other format is stripped from the
# schema before validation and so accepted.
_FORMATS: dict[str, Callable[[str], bool]] = {
    "date-time": lambda s: _DATE_TIME.match(s) is not None and "T" in s.upper(),
    "datetime": lambda s: _DATE_TIME.match(s) is not None and "T" in s.upper(),
    "date": lambda s: _DATE.match(s) is not None,
    "duration": lambda s: _GO_DURATION.match(s) is not None,
    "byte": _is_byte,
    "uuid": lambda s: _UUID.match(s) is not None,
    "uuid3": _is_uuid_version(3),
    "uuid4": _is_uuid_version(4),
    "uuid5": _is_uuid_version(5),
    "ipv4": lambda s: _is_ip(s, 4),
    "ipv6": lambda s: _is_ip(s, 6),
    "cidr": _is_cidr,
    "mac": lambda s: _MAC.match(s) is not None,
    "hostname": lambda s: _HOSTNAME.match(s) is not None,
    "email": lambda s: _EMAIL.match(s) is not None,
    "hexcolor": lambda s: _HEXCOLOR.match(s) is not None,
    "rgbcolor": lambda s: _RGBCOLOR.match(s) is not None,
    "bsonobjectid": lambda s: _BSON.match(s) is not None,
}


# ------------------------------------------------------------------------------------------------
# Compiled form


class _Rule:
    """One `x-kubernetes-validations` entry, compiled."""

    __slots__ = (
        "error_string",
        "field_suffix",
        "message",
        "message_program",
        "optional_old_self",
        "program",
        "reason",
        "self_eq_old",
        "transition",
    )

    def __init__(
        self,
        program: CelProgram,
        message: str,
        error_string: str,
        message_program: CelProgram | None,
        reason: str,
        field_suffix: str,
        optional_old_self: bool,
    ) -> None:
        self.program = program
        self.message = message
        self.error_string = error_string
        self.message_program = message_program
        self.reason = reason
        self.field_suffix = field_suffix
        self.transition = program.uses_old_self
        self.optional_old_self = optional_old_self and self.transition
        compact = "".join(program.source.split())
        self.self_eq_old = compact in ("self==oldSelf", "oldSelf==self") and not optional_old_self


class _Node:
    """One schema node, with everything the walks need precomputed."""

    __slots__ = (
        "additional",
        "additional_any",
        "all_of",
        "any_of",
        "cel_keys",
        "default",
        "embedded",
        "enum",
        "exclusive_max",
        "exclusive_min",
        "format_check",
        "format_name",
        "int_or_string",
        "items",
        "list_type",
        "map_keys",
        "max_items",
        "max_length",
        "max_props",
        "maximum",
        "min_items",
        "min_length",
        "min_props",
        "minimum",
        "multiple_of",
        "not_",
        "nullable",
        "one_of",
        "pattern",
        "pattern_src",
        "preserve_unknown",
        "properties",
        "required",
        "root_like",
        "rules",
        "transition_below",
        "type",
        "unique_items",
        "value_checks",
    )

    def __init__(self) -> None:
        self.type: str | None = None
        self.nullable = False
        self.int_or_string = False
        self.preserve_unknown = False
        self.embedded = False
        self.root_like = False
        self.properties: dict[str, _Node] | None = None
        self.cel_keys: dict[str, str | None] = {}
        self.additional: _Node | None = None
        self.additional_any = False
        self.items: _Node | None = None
        self.required: tuple[str, ...] = ()
        self.enum: tuple[Any, ...] | None = None
        self.default: Any = _MISSING
        self.maximum: int | float | None = None
        self.minimum: int | float | None = None
        self.exclusive_max = False
        self.exclusive_min = False
        self.multiple_of: int | float | None = None
        self.max_length: int | None = None
        self.min_length: int | None = None
        self.pattern: Callable[[str], Any] | None = None
        self.pattern_src = ""
        self.format_name = ""
        self.format_check: Callable[[str], bool] | None = None
        self.max_items: int | None = None
        self.min_items: int | None = None
        self.unique_items = False
        self.max_props: int | None = None
        self.min_props: int | None = None
        self.list_type: str | None = None
        self.map_keys: tuple[str, ...] = ()
        self.all_of: tuple[_Node, ...] = ()
        self.any_of: tuple[_Node, ...] = ()
        self.one_of: tuple[_Node, ...] = ()
        self.not_: _Node | None = None
        self.rules: tuple[_Rule, ...] = ()
        self.transition_below = False
        self.value_checks = False

    @property
    def type_name(self) -> str:
        """The schema type as kube-apiserver prints it in CEL errors (`Invalid value: "object"`)."""
        return self.type or ""


class CompiledSchema:
    """A CRD version's `openAPIV3Schema`, compiled once: node tree, regexes and CEL programs."""

    __slots__ = ("raw", "root")

    def __init__(self, raw: dict[str, Any], root: _Node) -> None:
        self.raw = raw
        self.root = root


# ------------------------------------------------------------------------------------------------
# Compilation


class _Compiler:
    def __init__(self, allow_unique_items: bool) -> None:
        self.errors: list[Cause] = []
        self.allow_unique_items = allow_unique_items
        self.defaulted: list[tuple[_Node, str]] = []

    def fail(self, cause: Cause) -> None:
        self.errors.append(cause)

    def invalid(self, path: str, value: Any, detail: str) -> None:
        self.fail(fe.invalid(path, value, detail))

    def node(
        self,
        raw: Any,
        path: str,
        *,
        junctor: bool = False,
        parent_int_or_string: bool = False,
        uncorrelatable: str | None = None,
        root: bool = False,
        what: str = "",
    ) -> _Node:
        n = _Node()
        if not isinstance(raw, dict):
            self.invalid(path, raw, "must be an object")
            return n
        if "$ref" in raw:
            self.fail(fe.forbidden(f"{path}.$ref", "$ref is not supported"))
        if junctor:
            for key in _FORBIDDEN_IN_JUNCTORS:
                if key in raw:
                    self.fail(fe.forbidden(f"{path}.{key}", "must be empty to be structural"))

        n.int_or_string = raw.get("x-kubernetes-int-or-string") is True
        preserve = raw.get("x-kubernetes-preserve-unknown-fields")
        if preserve is not None and preserve is not True:
            self.invalid(
                f"{path}.x-kubernetes-preserve-unknown-fields",
                preserve,
                "must be true or undefined",
            )
        n.preserve_unknown = preserve is True
        n.embedded = raw.get("x-kubernetes-embedded-resource") is True
        n.root_like = root or n.embedded
        n.nullable = raw.get("nullable") is True

        t = raw.get("type")
        if t is not None:
            if t not in _TYPES:
                self.fail(fe.not_supported(f"{path}.type", t, _TYPES))
            elif junctor and parent_int_or_string:
                pass  # the `anyOf: [{type: integer}, {type: string}]` idiom of int-or-string
            elif junctor:
                self.fail(fe.forbidden(f"{path}.type", "must be empty to be structural"))
            elif n.int_or_string:
                self.fail(
                    fe.invalid(
                        f"{path}.type",
                        t,
                        "must be empty if x-kubernetes-int-or-string is true",
                    )
                )
            else:
                n.type = t
        elif not junctor and not n.int_or_string and not n.preserve_unknown:
            detail = {
                "root": "must not be empty at the root",
                "property": "must not be empty for specified object fields",
                "items": "must not be empty for specified array items",
                "additional": "must not be empty for specified object fields",
            }.get(what or ("root" if root else "property"), "must not be empty")
            self.fail(fe.required(f"{path}.type", detail))
        if root and t not in (None, "object"):
            self.invalid(f"{path}.type", t, "must be object at the root")
        if n.embedded and t != "object":
            self.fail(
                fe.required(
                    f"{path}.type", "must be object if x-kubernetes-embedded-resource is true"
                )
            )

        self._value_validations(n, raw, path)

        props = raw.get("properties")
        if props is not None:
            if not isinstance(props, dict):
                self.invalid(f"{path}.properties", "", "must be an object")
            else:
                n.properties = {}
                for name, sub in props.items():
                    child = self.node(
                        sub,
                        f"{path}.properties[{name}]",
                        junctor=junctor,
                        parent_int_or_string=False,
                        uncorrelatable=uncorrelatable,
                        what="property",
                    )
                    n.properties[name] = child
                    n.cel_keys[name] = _cel_escape(name)
        addl = raw.get("additionalProperties")
        if addl is not None:
            if props:
                self.fail(
                    fe.forbidden(
                        f"{path}.additionalProperties",
                        "additionalProperties and properties are mutual exclusive",
                    )
                )
            if isinstance(addl, dict):
                n.additional = self.node(
                    addl,
                    f"{path}.additionalProperties",
                    uncorrelatable=uncorrelatable,
                    what="additional",
                )
            elif addl is True:
                n.additional_any = True
            elif addl is False:
                self.fail(
                    fe.forbidden(
                        f"{path}.additionalProperties",
                        "additionalProperties cannot be set to false",
                    )
                )
            else:
                self.invalid(f"{path}.additionalProperties", addl, "must be a schema or a boolean")

        items = raw.get("items")
        if items is not None:
            if isinstance(items, list):
                self.fail(
                    fe.forbidden(f"{path}.items", "items must be a schema object and not an array")
                )
            else:
                list_type = raw.get("x-kubernetes-list-type")
                below = uncorrelatable
                if below is None and list_type != "map":
                    below = f"{path}.items"
                n.items = self.node(
                    items, f"{path}.items", junctor=junctor, uncorrelatable=below, what="items"
                )
        elif n.type == "array" and not junctor:
            self.fail(fe.required(f"{path}.items", "must be specified"))

        self._list_type(n, raw, path)
        self._junctors(
            n, raw, path, uncorrelatable, n.int_or_string or (junctor and parent_int_or_string)
        )

        if "default" in raw and not junctor:
            if root:
                self.fail(fe.forbidden(f"{path}.default", "must not be set at the root"))
            else:
                n.default = raw["default"]
                self.defaulted.append((n, f"{path}.default"))

        rules = raw.get("x-kubernetes-validations")
        if rules is not None and not junctor:
            n.rules = self._rules(rules, f"{path}.x-kubernetes-validations", n, uncorrelatable)

        n.transition_below = any(r.transition for r in n.rules) or any(
            c.transition_below
            for c in (
                *(n.properties.values() if n.properties else ()),
                *((n.additional,) if n.additional else ()),
                *((n.items,) if n.items else ()),
            )
        )
        n.value_checks = bool(
            n.enum is not None
            or n.maximum is not None
            or n.minimum is not None
            or n.multiple_of is not None
            or n.max_length is not None
            or n.min_length is not None
            or n.pattern is not None
            or n.format_check is not None
            or n.max_items is not None
            or n.min_items is not None
            or n.unique_items
            or n.max_props is not None
            or n.min_props is not None
            or n.required
            or n.all_of
            or n.any_of
            or n.one_of
            or n.not_ is not None
        )
        return n

    def _value_validations(self, n: _Node, raw: dict[str, Any], path: str) -> None:
        def number(key: str) -> int | float | None:
            v = raw.get(key)
            if v is None:
                return None
            if isinstance(v, bool) or not isinstance(v, int | float):
                self.invalid(f"{path}.{key}", v, "must be a number")
                return None
            return v

        def count(key: str) -> int | None:
            v = raw.get(key)
            if v is None:
                return None
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                self.invalid(f"{path}.{key}", v, "must be a non-negative integer")
                return None
            return v

        n.maximum = number("maximum")
        n.minimum = number("minimum")
        n.exclusive_max = raw.get("exclusiveMaximum") is True
        n.exclusive_min = raw.get("exclusiveMinimum") is True
        n.multiple_of = number("multipleOf")
        if n.multiple_of is not None and n.multiple_of <= 0:
            self.invalid(f"{path}.multipleOf", n.multiple_of, "must be greater than zero")
            n.multiple_of = None
        n.max_length = count("maxLength")
        n.min_length = count("minLength")
        n.max_items = count("maxItems")
        n.min_items = count("minItems")
        n.max_props = count("maxProperties")
        n.min_props = count("minProperties")
        required = raw.get("required")
        if required is not None:
            if isinstance(required, list) and all(isinstance(r, str) for r in required):
                n.required = tuple(required)
            else:
                self.invalid(f"{path}.required", required, "must be a list of strings")
        if raw.get("uniqueItems") is True:
            if self.allow_unique_items:
                n.unique_items = True
            else:
                self.fail(
                    fe.forbidden(
                        f"{path}.uniqueItems",
                        "uniqueItems cannot be set to true since the runtime complexity "
                        "becomes quadratic",
                    )
                )
        enum = raw.get("enum")
        if enum is not None:
            if isinstance(enum, list):
                n.enum = tuple(enum)
            else:
                self.invalid(f"{path}.enum", enum, "must be an array")
        pattern = raw.get("pattern")
        if pattern is not None:
            if not isinstance(pattern, str):
                self.invalid(f"{path}.pattern", pattern, "must be a string")
            else:
                # RE2 only, as kube-apiserver (Go's regexp): matching is linear in the input,
                # so a pattern like `(a+)+$` cannot stall the event loop the way Python's
                # backtracking `re` would, and the accepted syntax is Go's.
                try:
                    n.pattern = re2_compile(pattern).search
                except ValueError as ex:
                    self.invalid(
                        f"{path}.pattern",
                        pattern,
                        f"must be a valid regular expression, but isn't: {ex}",
                    )
                n.pattern_src = pattern
        fmt = raw.get("format")
        if isinstance(fmt, str) and fmt:
            n.format_name = fmt
            if raw.get("type") == "string":
                n.format_check = _FORMATS.get(fmt)

    def _list_type(self, n: _Node, raw: dict[str, Any], path: str) -> None:
        list_type = raw.get("x-kubernetes-list-type")
        keys = raw.get("x-kubernetes-list-map-keys")
        if list_type is not None:
            if list_type not in ("atomic", "set", "map"):
                self.fail(
                    fe.not_supported(
                        f"{path}.x-kubernetes-list-type", list_type, ("atomic", "set", "map")
                    )
                )
            elif n.type != "array":
                self.invalid(
                    f"{path}.type",
                    n.type or "",
                    "must be array if x-kubernetes-list-type is specified",
                )
            else:
                n.list_type = list_type
        if list_type == "map":
            if not isinstance(keys, list) or not keys:
                self.fail(
                    fe.required(
                        f"{path}.x-kubernetes-list-map-keys",
                        "must not be empty if x-kubernetes-list-type is map",
                    )
                )
            else:
                n.map_keys = tuple(str(k) for k in keys)
                item_props = n.items.properties if n.items is not None else None
                if n.items is not None and n.items.type != "object":
                    self.invalid(
                        f"{path}.items.type",
                        n.items.type or "",
                        "must be object if parent array's x-kubernetes-list-type is map",
                    )
                for k in n.map_keys:
                    if item_props is None or k not in item_props:
                        self.invalid(
                            f"{path}.x-kubernetes-list-map-keys",
                            keys,
                            "entries must all be names of item properties",
                        )
                        break
                    if item_props[k].type in ("object", "array"):
                        self.invalid(
                            f"{path}.items.properties[{k}].type",
                            item_props[k].type,
                            "must be a scalar type if parent array's x-kubernetes-list-type is map",
                        )
        elif keys is not None:
            self.invalid(
                f"{path}.x-kubernetes-list-type",
                list_type or "",
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )

    def _junctors(
        self,
        n: _Node,
        raw: dict[str, Any],
        path: str,
        uncorrelatable: str | None,
        int_or_string: bool,
    ) -> None:
        """Compile allOf/anyOf/oneOf/not; `int_or_string` allows their `type: integer|string`."""

        def subs(key: str) -> tuple[_Node, ...]:
            v = raw.get(key)
            if v is None:
                return ()
            if not isinstance(v, list):
                self.invalid(f"{path}.{key}", v, "must be an array")
                return ()
            return tuple(
                self.node(
                    s,
                    f"{path}.{key}[{i}]",
                    junctor=True,
                    parent_int_or_string=int_or_string,
                    uncorrelatable=uncorrelatable,
                )
                for i, s in enumerate(v)
            )

        n.all_of = subs("allOf")
        n.any_of = subs("anyOf")
        n.one_of = subs("oneOf")
        if raw.get("not") is not None:
            n.not_ = self.node(
                raw["not"], f"{path}.not", junctor=True, uncorrelatable=uncorrelatable
            )
        if int_or_string and any(_trivial(s) for s in n.any_of):
            # `anyOf: [{type: integer}, {type: string}]` only restates the int-or-string type,
            # which the type check already enforces: a branch without checks always passes.
            n.any_of = ()

    def _rules(
        self, rules: Any, path: str, n: _Node, uncorrelatable: str | None
    ) -> tuple[_Rule, ...]:
        if not isinstance(rules, list):
            self.invalid(path, rules, "must be an array")
            return ()
        out: list[_Rule] = []
        for i, raw in enumerate(rules):
            rpath = f"{path}[{i}]"
            if not isinstance(raw, dict):
                self.invalid(rpath, raw, "must be an object")
                continue
            source = raw.get("rule")
            if not isinstance(source, str) or not source.strip():
                self.fail(fe.required(f"{rpath}.rule", "rule is not specified"))
                continue
            try:
                program = compile_expression(source)
            except ValueError as ex:
                self.invalid(f"{rpath}.rule", source, str(ex))
                continue
            if program.uses_old_self and uncorrelatable is not None:
                self.invalid(
                    f"{rpath}.rule",
                    source,
                    "oldSelf cannot be used on the uncorrelatable portion of the schema "
                    f"within {uncorrelatable}",
                )
                continue
            message = raw.get("message")
            if message is not None and not isinstance(message, str):
                self.invalid(f"{rpath}.message", message, "must be a string")
                message = None
            if message and ("\n" in message.strip() or "\r" in message.strip()):
                self.invalid(f"{rpath}.message", message, "message must not contain line breaks")
            message_program: CelProgram | None = None
            message_expression = raw.get("messageExpression")
            if message_expression is not None:
                if not isinstance(message_expression, str) or not message_expression.strip():
                    self.fail(
                        fe.required(
                            f"{rpath}.messageExpression",
                            "messageExpression must be non-empty if specified",
                        )
                    )
                else:
                    try:
                        message_program = compile_expression(message_expression)
                    except ValueError as ex:
                        self.invalid(f"{rpath}.messageExpression", message_expression, str(ex))
            reason = raw.get("reason") or "FieldValueInvalid"
            if reason not in _RULE_REASONS:
                self.fail(fe.not_supported(f"{rpath}.reason", reason, _RULE_REASONS))
                reason = "FieldValueInvalid"
            suffix = ""
            field_path = raw.get("fieldPath")
            if field_path:
                try:
                    suffix = _field_path_suffix(str(field_path), n)
                except ValueError as ex:
                    self.invalid(f"{rpath}.fieldPath", field_path, str(ex))
            optional_old_self = raw.get("optionalOldSelf") is True
            if optional_old_self and not program.uses_old_self:
                self.invalid(
                    f"{rpath}.optionalOldSelf",
                    True,
                    "may not be set if oldSelf is not used in rule",
                )
            text = message.strip() if message else ""
            out.append(
                _Rule(
                    program=program,
                    message=text or f"failed rule: {source.strip()}",
                    error_string=text or source.strip(),
                    message_program=message_program,
                    reason=reason,
                    field_suffix=suffix,
                    optional_old_self=optional_old_self,
                )
            )
        return tuple(out)


def _trivial(n: _Node) -> bool:
    """A subschema that accepts every value (no checks of its own or below)."""
    return not n.value_checks and n.properties is None and n.items is None and n.additional is None


def _cel_escape(name: str) -> str | None:
    """A property name as CEL sees it (kube-apiserver's escaping), or None if inaccessible.

    CEL keywords are escaped as `__{keyword}__`; since Kubernetes 1.32 they may also be
    selected directly (`self.metadata.namespace`), so `_Run.to_cel` binds both names.
    """
    if name in _CEL_RESERVED:
        return f"__{name}__"
    if not _CEL_PROPERTY_NAME.match(name):
        return None
    return (
        name.replace("__", "__underscores__")
        .replace(".", "__dot__")
        .replace("-", "__dash__")
        .replace("/", "__slash__")
    )


_FIELD_PATH_TOKEN = re.compile(r"\.([^.\[\]]+)|\['((?:[^'\\]|\\.)*)'\]|\[(\d+)\]")


def _field_path_suffix(field_path: str, node: _Node) -> str:
    """Check a rule's `fieldPath` against the schema and render it as a field-path suffix."""
    pos = 0
    out: list[str] = []
    current: _Node | None = node
    while pos < len(field_path):
        m = _FIELD_PATH_TOKEN.match(field_path, pos)
        if m is None:
            raise ValueError(f"fieldPath must be a valid path: unexpected {field_path[pos:]!r}")
        pos = m.end()
        if m.group(3) is not None:
            raise ValueError("fieldPath must not use numeric index")
        name = m.group(1) if m.group(1) is not None else m.group(2).replace("\\'", "'")
        if current is None:
            raise ValueError(f"fieldPath must refer to an existing field: {name} does not exist")
        if current.properties is not None and name in current.properties:
            out.append(f".{name}")
            current = current.properties[name]
        elif current.additional is not None:
            out.append(f"[{name}]")
            current = current.additional
        else:
            raise ValueError(f"fieldPath must refer to an existing field: {name} does not exist")
    return "".join(out)


def compile_schema(
    openapi_v3_schema: dict[str, Any],
    *,
    field_path: str = "openAPIV3Schema",
    allow_unique_items: bool = False,
) -> CompiledSchema:
    """Compile a CRD version's `openAPIV3Schema`; raise SchemaError (a ValueError) if invalid.

    `field_path` prefixes the causes (a server passes `spec.versions[0].schema.openAPIV3Schema`).
    `allow_unique_items` accepts `uniqueItems: true`, which kube-apiserver forbids in CRDs.
    """
    compiler = _Compiler(allow_unique_items)
    root = compiler.node(openapi_v3_schema, field_path, root=True)
    if not compiler.errors:
        for node, path in compiler.defaulted:
            _check_default(node, path, compiler)
    if compiler.errors:
        raise SchemaError(compiler.errors)
    return CompiledSchema(openapi_v3_schema, root)


def _check_default(node: _Node, path: str, compiler: _Compiler) -> None:
    """Defaults must survive pruning and validate, as kube-apiserver requires of CRDs."""
    value = node.default
    if value is None and node.nullable:
        return
    pruned = _prune(value, node)
    if pruned != value:
        compiler.invalid(path, value, "must not have unknown fields")
        return
    defaulted = _default(pruned, node)
    run = _Run()
    run.walk(defaulted, node, "", "", _MISSING, False)
    for cause in run.finish():
        where = f"{path}.{cause.field}" if cause.field and cause.field != "<nil>" else path
        compiler.errors.append(Cause(cause.reason, cause.message, where))


# ------------------------------------------------------------------------------------------------
# Pruning


def prune(obj: dict[str, Any], schema: CompiledSchema) -> dict[str, Any]:
    """A copy of `obj` without the fields its schema does not declare (structural pruning)."""
    out = _prune(obj, schema.root)
    return out if isinstance(out, dict) else {}


def _prune(value: Any, node: _Node | None) -> Any:
    if node is None:
        return _copy(value)
    if isinstance(value, dict):
        props = node.properties
        if (
            props is None
            and node.additional is None
            and (node.preserve_unknown or node.type is None)
        ):
            return _copy(value)
        out: dict[str, Any] = {}
        keep_unknown = node.preserve_unknown or node.additional_any
        for k, v in value.items():
            if node.root_like and k in ("apiVersion", "kind", "metadata"):
                out[k] = _copy(v)
                continue
            child = props.get(k) if props is not None else None
            if child is not None:
                out[k] = _prune(v, child)
            elif node.additional is not None:
                out[k] = _prune(v, node.additional)
            elif keep_unknown:
                out[k] = _copy(v)
        return out
    if isinstance(value, list):
        items = node.items
        return [_prune(v, items) for v in value]
    return value


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


# ------------------------------------------------------------------------------------------------
# Validation


def validate(
    obj: dict[str, Any], schema: CompiledSchema, old: dict[str, Any] | None = None
) -> list[Cause]:
    """Validate a pruned and defaulted object; `old` is the stored object on update.

    Returns the causes kube-apiserver would put in its 422 response, in its order: schema
    errors, then list-type errors, then CEL rule errors.
    """
    run = _Run()
    run.walk(obj, schema.root, "", "", old if old is not None else _MISSING, False)
    return run.finish()


def _type_ok(value: Any, node: _Node) -> bool:
    t = node.type
    if t is None:
        if node.int_or_string:
            return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(
                value, str
            )
        return True
    if t == "object":
        return isinstance(value, dict)
    if t == "array":
        return isinstance(value, list)
    if t == "string":
        return isinstance(value, str)
    if t == "boolean":
        return isinstance(value, bool)
    if t == "integer":
        if isinstance(value, bool):
            return False
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if t == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return True


def _enum_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and a == b


def _unique_key(v: Any) -> str:
    return json.dumps(v, sort_keys=True, separators=(",", ":"))


class _Run:
    """The state of one validation: the causes found so far and converted CEL values."""

    __slots__ = ("blocking", "cel_errors", "list_errors", "memo", "schema_errors")

    def __init__(self) -> None:
        self.schema_errors: list[Cause] = []
        self.list_errors: list[Cause] = []
        self.cel_errors: list[Cause] = []
        self.blocking = False
        self.memo: dict[int, tuple[Any, Any]] = {}

    def finish(self) -> list[Cause]:
        errors = self.schema_errors + self.list_errors
        if self.blocking:
            errors.append(_SKIPPED_CEL)
        else:
            errors.extend(self.cel_errors)
        return errors

    # -- schema errors -------------------------------------------------------------------------

    def schema_error(self, cause: Cause) -> None:
        if cause.reason in _BLOCKING_REASONS:
            self.blocking = True
        self.schema_errors.append(cause)

    def invalid(self, path: str, value: Any, detail: str, out: list[Cause] | None = None) -> None:
        cause = fe.invalid(path, value, detail)
        if out is not None:
            out.append(cause)
        else:
            self.schema_errors.append(cause)

    def value_checks(
        self, value: Any, node: _Node, path: str, out: list[Cause] | None = None
    ) -> None:
        """OpenAPI value validations of one node (not its children), in kube-openapi's words."""
        name = path

        def add(cause: Cause) -> None:
            if out is not None:
                out.append(cause)
            else:
                self.schema_error(cause)

        if isinstance(value, str):
            if node.max_length is not None and len(value) > node.max_length:
                unit = "byte" if node.max_length == 1 else "bytes"
                add(fe.too_long(path, node.max_length, unit))
            if node.min_length is not None and len(value) < node.min_length:
                self.invalid(
                    path,
                    value,
                    f"{name} in body should be at least {node.min_length} chars long",
                    out,
                )
            if node.pattern is not None and node.pattern(value) is None:
                self.invalid(path, value, f"{name} in body should match '{node.pattern_src}'", out)
            if node.format_check is not None and not node.format_check(value):
                add(
                    fe.type_invalid(
                        path,
                        value,
                        f"{name} in body must be of type {node.format_name}: {fe.go_quote(value)}",
                    )
                )
        elif isinstance(value, int | float) and not isinstance(value, bool):
            if node.maximum is not None:
                limit = node.maximum
                if value > limit or (node.exclusive_max and value == limit):
                    word = "less than" if node.exclusive_max else "less than or equal to"
                    self.invalid(
                        path,
                        value,
                        f"{name} in body should be {word} {go_float(float(limit))}",
                        out,
                    )
            if node.minimum is not None:
                limit = node.minimum
                if value < limit or (node.exclusive_min and value == limit):
                    word = "greater than" if node.exclusive_min else "greater than or equal to"
                    self.invalid(
                        path,
                        value,
                        f"{name} in body should be {word} {go_float(float(limit))}",
                        out,
                    )
            if node.multiple_of is not None:
                quotient = value / node.multiple_of
                if quotient != int(quotient):
                    self.invalid(
                        path,
                        value,
                        f"{name} in body should be a multiple of "
                        + go_float(float(node.multiple_of)),
                        out,
                    )
        elif isinstance(value, list):
            if node.max_items is not None and len(value) > node.max_items:
                unit = "item" if node.max_items == 1 else "items"
                add(fe.too_many(path, len(value), node.max_items, unit))
            if node.min_items is not None and len(value) < node.min_items:
                self.invalid(
                    path,
                    len(value),
                    f"{name} in body should have at least {node.min_items} items",
                    out,
                )
            if node.unique_items and len({_unique_key(v) for v in value}) != len(value):
                self.invalid(path, "", f"{name} in body shouldn't contain duplicates", out)
        elif isinstance(value, dict):
            if node.max_props is not None and len(value) > node.max_props:
                unit = "item" if node.max_props == 1 else "items"
                add(fe.too_many(path, len(value), node.max_props, unit))
            if node.min_props is not None and len(value) < node.min_props:
                self.invalid(
                    path,
                    len(value),
                    f"{name} in body should have at least {node.min_props} properties",
                    out,
                )
            for req in node.required:
                if req not in value:
                    add(fe.required(_join(path, req)))
        if node.enum is not None and not any(_enum_equal(value, e) for e in node.enum):
            supported = [e if isinstance(e, str) else json.dumps(e) for e in node.enum]
            add(fe.not_supported(path, value, supported))
        if node.all_of or node.any_of or node.one_of or node.not_ is not None:
            self.junctors(value, node, path, out)

    def junctors(self, value: Any, node: _Node, path: str, out: list[Cause] | None) -> None:
        """allOf / anyOf / oneOf / not, with their sub-errors and kube-openapi's summary line."""
        target = out if out is not None else self.schema_errors

        def sub(s: _Node) -> list[Cause]:
            errs: list[Cause] = []
            self.subschema(value, s, path, errs)
            return errs

        if node.all_of:
            failed = False
            for s in node.all_of:
                errs = sub(s)
                if errs:
                    failed = True
                    target.extend(errs)
            if failed:
                self.invalid(path, "", f"{path} in body must validate all the schemas (allOf)", out)
        if node.any_of:
            best: list[Cause] | None = None
            for s in node.any_of:
                errs = sub(s)
                if not errs:
                    best = None
                    break
                if best is None:
                    best = errs
            else:
                self.invalid(
                    path, "", f"{path} in body must validate at least one schema (anyOf)", out
                )
                target.extend(best or [])
        if node.one_of:
            passing = sum(1 for s in node.one_of if not sub(s))
            if passing != 1:
                self.invalid(
                    path, "", f"{path} in body must validate one and only one schema (oneOf)", out
                )
        if node.not_ is not None and not sub(node.not_):
            self.invalid(path, "", f"{path} in body must not validate the schema (not)", out)
        if target is self.schema_errors:
            self.blocking = self.blocking or any(c.reason in _BLOCKING_REASONS for c in target)

    def subschema(self, value: Any, s: _Node, path: str, out: list[Cause]) -> None:
        """Validate against a value-only subschema (a junctor branch) and its children."""
        self.value_checks(value, s, path, out)
        if isinstance(value, dict):
            if s.properties:
                for k, child in s.properties.items():
                    if k in value:
                        self.subschema(value[k], child, _join(path, k), out)
        elif isinstance(value, list) and s.items is not None:
            for i, v in enumerate(value):
                self.subschema(v, s.items, f"{path}[{i}]", out)

    # -- the walk ------------------------------------------------------------------------------

    def walk(
        self, value: Any, node: _Node, path: str, cpath: str, old: Any, unchanged: bool
    ) -> None:
        """Validate `value` against `node`.

        `path` is the field path in kube-openapi's style (map keys as `.key`), `cpath` the one
        CEL errors use (`[key]`); `old` is the correlated old value or _MISSING; `unchanged`
        says an ancestor is already known to be equal to its old value (ratcheting).
        """
        if not unchanged and old is not _MISSING and _same(value, old):
            unchanged = True
        if unchanged and not node.transition_below:
            return
        if value is None:
            if (
                not unchanged
                and not node.nullable
                and (node.type is not None or node.int_or_string)
            ):
                self.type_error(path, "null", node)
            return
        if not unchanged:
            if not _type_ok(value, node):
                self.type_error(path, _json_type(value), node)
                return
            if node.value_checks:
                self.value_checks(value, node, path)
            if node.embedded and isinstance(value, dict):
                self.embedded_checks(value, path)
            if node.list_type in ("set", "map") and isinstance(value, list):
                self.list_checks(value, node, path)
        if node.rules and not self.blocking:
            self.rules(value, node, cpath, old, unchanged)

        if isinstance(value, dict):
            props = node.properties
            addl = node.additional
            old_dict = old if isinstance(old, dict) else None
            for k, v in value.items():
                child = props.get(k) if props is not None else None
                if child is not None:
                    child_path = _join(path, k)
                    child_cpath = child_path if cpath is path else _join(cpath, k)
                elif addl is not None:
                    child = addl
                    child_path = _join(path, k)
                    child_cpath = f"{cpath}[{k}]"
                else:
                    continue
                child_old = old_dict.get(k, _MISSING) if old_dict is not None else _MISSING
                self.walk(v, child, child_path, child_cpath, child_old, unchanged)
        elif isinstance(value, list):
            items = node.items
            if items is None:
                return
            old_items: dict[tuple[Any, ...], Any] | None = None
            if node.list_type == "map" and isinstance(old, list):
                old_items = {}
                for o in old:
                    if isinstance(o, dict):
                        old_items.setdefault(self.map_key(o, node), o)
            for i, v in enumerate(value):
                child_old = _MISSING
                if old_items is not None and isinstance(v, dict):
                    child_old = old_items.get(self.map_key(v, node), _MISSING)
                child_path = f"{path}[{i}]"
                child_cpath = child_path if cpath is path else f"{cpath}[{i}]"
                self.walk(v, items, child_path, child_cpath, child_old, unchanged)

    def type_error(self, path: str, actual: str, node: _Node) -> None:
        expected = "integer,string" if node.int_or_string else (node.type or "")
        where = path if path else ""
        prefix = f"{where} in body" if where else "in body"
        self.schema_error(
            fe.type_invalid(
                path,
                actual,
                f"{prefix} must be of type {expected}: {fe.go_quote(actual)}",
            )
        )

    def embedded_checks(self, value: dict[str, Any], path: str) -> None:
        for key in ("apiVersion", "kind"):
            v = value.get(key, _MISSING)
            field = _join(path, key)
            if v is _MISSING:
                self.schema_error(fe.required(field, "must not be empty"))
            elif not isinstance(v, str):
                self.invalid(field, v, "must be a string")
            elif not v:
                self.invalid(field, v, "must not be empty")

    @staticmethod
    def map_key(item: dict[str, Any], node: _Node) -> tuple[Any, ...]:
        items = node.items
        key: list[Any] = []
        for k in node.map_keys:
            v = item.get(k, _MISSING)
            if v is _MISSING and items is not None and items.properties is not None:
                prop = items.properties.get(k)
                v = prop.default if prop is not None and prop.default is not _MISSING else None
            key.append(_unique_key(v))
        return tuple(key)

    def list_checks(self, value: list[Any], node: _Node, path: str) -> None:
        """`x-kubernetes-list-type: set|map` uniqueness, reported like kube-apiserver does."""
        errors = self.list_errors
        if node.list_type == "set":
            seen: set[str] = set()
            for i, v in enumerate(value):
                encoded = _unique_key(v)
                if encoded in seen:
                    errors.append(fe.duplicate(f"{path}[{i}]", v))
                seen.add(encoded)
            return
        seen_keys: set[tuple[Any, ...]] = set()
        items = node.items
        for i, v in enumerate(value):
            if not isinstance(v, dict):
                errors.append(
                    fe.invalid(f"{path}[{i}]", v, "must be an object for an array of list-type map")
                )
                continue
            if not v:
                self.blocking = True
                errors.append(
                    fe.required(f"{path}[{i}]", "must not be empty for an array of list-type map")
                )
                continue
            key = self.map_key(v, node)
            if key in seen_keys:
                shown: dict[str, Any] = {}
                for k in node.map_keys:
                    if k in v:
                        shown[k] = v[k]
                    elif items is not None and items.properties and k in items.properties:
                        d = items.properties[k].default
                        if d is not _MISSING:
                            shown[k] = d
                errors.append(fe.duplicate(f"{path}[{i}]", fe.Shown(fe.go_sharp(shown))))
            seen_keys.add(key)

    # -- CEL -----------------------------------------------------------------------------------

    def rules(self, value: Any, node: _Node, cpath: str, old: Any, unchanged: bool) -> None:
        self_value: Any = _MISSING
        old_value: Any = _MISSING
        for rule in node.rules:
            if rule.transition:
                if old is _MISSING and not rule.optional_old_self:
                    continue
            elif unchanged:
                continue  # ratcheting: errors on unchanged values are not reported
            if rule.self_eq_old and (unchanged or _same(value, old)):
                continue
            if self_value is _MISSING:
                self_value = self.to_cel(value, node)
            variables: dict[str, Any] = {"self": self_value}
            if rule.transition:
                if old_value is _MISSING and old is not _MISSING:
                    old_value = self.to_cel(old, node)
                if rule.optional_old_self:
                    variables["oldSelf"] = (
                        Optional.none() if old is _MISSING else Optional.of(old_value)
                    )
                else:
                    variables["oldSelf"] = old_value
            self.evaluate(rule, variables, node, cpath)

    def evaluate(self, rule: _Rule, variables: dict[str, Any], node: _Node, cpath: str) -> None:
        field = cpath or "<nil>"
        type_name = node.type_name
        try:
            result = rule.program.evaluate(variables)
        except CelError as ex:
            if ex.overload:
                detail = (
                    f"'{ex.message}': call arguments did not match a supported operator, function "
                    f"or macro signature for rule: {rule.error_string}"
                )
            else:
                detail = f"{ex.message} evaluating rule: {rule.error_string}"
            self.cel_errors.append(fe.invalid(field, type_name, detail))
            return
        if isinstance(result, bool | celtypes.BoolType):
            if result:
                return
        else:
            detail = f"rule did not evaluate to a bool: {rule.error_string}"
            self.cel_errors.append(fe.invalid(field, type_name, detail))
            return

        message = rule.message
        if rule.message_program is not None:
            problem = ""
            try:
                evaluated = rule.message_program.evaluate(variables)
            except CelError as ex:
                problem = f"messageExpression evaluation failed due to: {ex.message}"
            else:
                if not isinstance(evaluated, str):
                    problem = "messageExpression failed to convert to string"
                else:
                    text = evaluated.strip()
                    if "\n" in text or "\r" in text:
                        problem = "messageExpression should not contain line breaks"
                    elif not text:
                        problem = "messageExpression should evaluate to a non-empty string"
                    else:
                        message = text
            if problem:
                self.cel_errors.append(fe.invalid(field, type_name, problem))
                return
        if rule.field_suffix:
            field = (cpath + rule.field_suffix).lstrip(".")
        # The rule's `reason` picks the error type, as in apiextensions-apiserver.
        reason = rule.reason
        if reason == "FieldValueForbidden":
            cause = fe.forbidden(field, message)
        elif reason == "FieldValueRequired":
            cause = fe.required(field, message)
        elif reason == "FieldValueDuplicate":
            cause = fe.duplicate(field, type_name)
        else:
            cause = fe.invalid(field, type_name, message)
        self.cel_errors.append(Cause(reason, cause.message, field))

    def to_cel(self, value: Any, node: _Node | None) -> Any:
        """Convert JSON to CEL values the way kube-apiserver types them from the schema."""
        if node is None or (node.type is None and not node.int_or_string):
            return json_to_cel(value)
        if value is None:
            return None
        if isinstance(value, dict | list):
            entry = self.memo.get(id(value))
            if entry is not None and entry[0] is value:
                return entry[1]
            converted = self._convert_container(value, node)
            self.memo[id(value)] = (value, converted)
            return converted
        if isinstance(value, bool):
            return celtypes.BoolType(value)
        if isinstance(value, int):
            return celtypes.DoubleType(value) if node.type == "number" else celtypes.IntType(value)
        if isinstance(value, float):
            if node.type == "integer" and value.is_integer():
                return celtypes.IntType(int(value))
            return celtypes.DoubleType(value)
        if isinstance(value, str):
            fmt = node.format_name
            if fmt and node.type == "string":
                try:
                    if fmt in ("date-time", "datetime"):
                        return celtypes.TimestampType(value)
                    if fmt == "duration":
                        return celtypes.DurationType(value)
                    if fmt == "byte":
                        return celtypes.BytesType(base64.b64decode(value))
                except (ValueError, TypeError, OverflowError):
                    pass
            return celtypes.StringType(value)
        return json_to_cel(value)

    def _convert_container(self, value: dict[str, Any] | list[Any], node: _Node) -> Any:
        if isinstance(value, list):
            items = node.items
            converted = [self.to_cel(v, items) for v in value]
            if node.list_type == "set":
                return SetList(converted)
            if node.list_type == "map":
                return MapList(converted, node.map_keys)
            return celtypes.ListType(converted)
        out = celtypes.MapType()
        props = node.properties
        if props is not None:
            keys = node.cel_keys
            for k, v in value.items():
                child = props.get(k)
                if child is not None:
                    name = keys[k]
                    if name is not None:
                        converted = self.to_cel(v, child)
                        out[celtypes.StringType(name)] = converted
                        if k in _CEL_RESERVED:
                            out[celtypes.StringType(k)] = converted
        elif node.additional is not None:
            for k, v in value.items():
                out[celtypes.StringType(k)] = self.to_cel(v, node.additional)
        elif node.additional_any:
            for k, v in value.items():
                out[celtypes.StringType(k)] = json_to_cel(v)
        if node.root_like:
            for k in ("apiVersion", "kind"):
                if isinstance(value.get(k), str) and (props is None or k not in props):
                    out[celtypes.StringType(k)] = celtypes.StringType(value[k])
            meta = value.get("metadata")
            if isinstance(meta, dict):
                visible = celtypes.MapType()
                for k in ("name", "generateName"):
                    if isinstance(meta.get(k), str):
                        visible[celtypes.StringType(k)] = celtypes.StringType(meta[k])
                out[celtypes.StringType("metadata")] = visible
        return out
