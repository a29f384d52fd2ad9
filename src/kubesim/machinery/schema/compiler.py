"""`compile_schema`: a CRD version's `openAPIV3Schema` to a `CompiledSchema`, refusing what
kube-apiserver refuses (not structural, bad regex, CEL that does not compile, `oldSelf` below a
non-map list, `uniqueItems: true`, defaults that do not validate, ...) with `SchemaError`.
"""

from __future__ import annotations

import re
from typing import Any

from kubesim.machinery import field as fe
from kubesim.machinery.cel import (
    CelProgram,
    compile_expression,
    re2_compile,
)
from kubesim.machinery.errors import Cause
from kubesim.machinery.schema.defaults import default_value
from kubesim.machinery.schema.formats import FORMATS
from kubesim.machinery.schema.nodes import (
    CEL_RESERVED,
    MISSING,
    TYPES,
    CompiledSchema,
    Node,
    Rule,
    SchemaError,
    rule_fields,
)
from kubesim.machinery.schema.prune import prune_value
from kubesim.machinery.schema.validate import Run

_RULE_REASONS = (
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
)


_CEL_PROPERTY_NAME = re.compile(r"^[a-zA-Z_.\-/][a-zA-Z0-9_.\-/]*$")


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


# ------------------------------------------------------------------------------------------------
# Compilation


class _Compiler:
    def __init__(self, allow_unique_items: bool) -> None:
        self.errors: list[Cause] = []
        self.allow_unique_items = allow_unique_items
        self.defaulted: list[tuple[Node, str]] = []

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
    ) -> Node:
        """Compile one schema object; its keywords in the order kube-apiserver reports errors."""
        n = Node()
        if not isinstance(raw, dict):
            self.invalid(path, raw, "must be an object")
            return n
        self._structural(n, raw, path, junctor, root)
        self._type(n, raw, path, junctor, parent_int_or_string, root, what)
        self._value_validations(n, raw, path)
        self._properties(n, raw, path, junctor, uncorrelatable)
        self._additional_properties(n, raw, path, uncorrelatable)
        self._items(n, raw, path, junctor, uncorrelatable)
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
            n.rule_fields = rule_fields(n.rules)
        n.transition_below = _transition_below(n)
        n.value_checks = _has_value_checks(n)
        return n

    def _structural(
        self, n: Node, raw: dict[str, Any], path: str, junctor: bool, root: bool
    ) -> None:
        """`$ref`, what junctors may not say, and the `x-kubernetes-*` / `nullable` flags."""
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

    def _type(
        self,
        n: Node,
        raw: dict[str, Any],
        path: str,
        junctor: bool,
        parent_int_or_string: bool,
        root: bool,
        what: str,
    ) -> None:
        t = raw.get("type")
        if t is not None:
            if t not in TYPES:
                self.fail(fe.not_supported(f"{path}.type", t, TYPES))
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

    def _properties(
        self, n: Node, raw: dict[str, Any], path: str, junctor: bool, uncorrelatable: str | None
    ) -> None:
        props = raw.get("properties")
        if props is None:
            return
        if not isinstance(props, dict):
            self.invalid(f"{path}.properties", "", "must be an object")
            return
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

    def _additional_properties(
        self, n: Node, raw: dict[str, Any], path: str, uncorrelatable: str | None
    ) -> None:
        addl = raw.get("additionalProperties")
        if addl is None:
            return
        if raw.get("properties"):
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

    def _items(
        self, n: Node, raw: dict[str, Any], path: str, junctor: bool, uncorrelatable: str | None
    ) -> None:
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

    def _value_validations(self, n: Node, raw: dict[str, Any], path: str) -> None:
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
                n.format_check = FORMATS.get(fmt)

    def _list_type(self, n: Node, raw: dict[str, Any], path: str) -> None:
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
        n: Node,
        raw: dict[str, Any],
        path: str,
        uncorrelatable: str | None,
        int_or_string: bool,
    ) -> None:
        """Compile allOf/anyOf/oneOf/not; `int_or_string` allows their `type: integer|string`."""

        def subs(key: str) -> tuple[Node, ...]:
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
        self, rules: Any, path: str, n: Node, uncorrelatable: str | None
    ) -> tuple[Rule, ...]:
        if not isinstance(rules, list):
            self.invalid(path, rules, "must be an array")
            return ()
        out: list[Rule] = []
        for i, raw in enumerate(rules):
            rule = self._rule(raw, f"{path}[{i}]", n, uncorrelatable)
            if rule is not None:
                out.append(rule)
        return tuple(out)

    def _rule(self, raw: Any, rpath: str, n: Node, uncorrelatable: str | None) -> Rule | None:
        """One `x-kubernetes-validations` entry; None when its rule cannot be used at all."""
        if not isinstance(raw, dict):
            self.invalid(rpath, raw, "must be an object")
            return None
        source = raw.get("rule")
        if not isinstance(source, str) or not source.strip():
            self.fail(fe.required(f"{rpath}.rule", "rule is not specified"))
            return None
        try:
            program = compile_expression(source)
        except ValueError as ex:
            self.invalid(f"{rpath}.rule", source, str(ex))
            return None
        if program.uses_old_self and uncorrelatable is not None:
            self.invalid(
                f"{rpath}.rule",
                source,
                "oldSelf cannot be used on the uncorrelatable portion of the schema "
                f"within {uncorrelatable}",
            )
            return None
        message = self._rule_message(raw, rpath)
        message_program = self._message_expression(raw, rpath)
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
        return Rule(
            program=program,
            message=text or f"failed rule: {source.strip()}",
            error_string=text or source.strip(),
            message_program=message_program,
            reason=reason,
            field_suffix=suffix,
            optional_old_self=optional_old_self,
        )

    def _rule_message(self, raw: dict[str, Any], rpath: str) -> str | None:
        message = raw.get("message")
        if message is not None and not isinstance(message, str):
            self.invalid(f"{rpath}.message", message, "must be a string")
            message = None
        if message and ("\n" in message.strip() or "\r" in message.strip()):
            self.invalid(f"{rpath}.message", message, "message must not contain line breaks")
        return message

    def _message_expression(self, raw: dict[str, Any], rpath: str) -> CelProgram | None:
        message_expression = raw.get("messageExpression")
        if message_expression is None:
            return None
        if not isinstance(message_expression, str) or not message_expression.strip():
            self.fail(
                fe.required(
                    f"{rpath}.messageExpression",
                    "messageExpression must be non-empty if specified",
                )
            )
            return None
        try:
            return compile_expression(message_expression)
        except ValueError as ex:
            self.invalid(f"{rpath}.messageExpression", message_expression, str(ex))
            return None


def _transition_below(n: Node) -> bool:
    """Whether a transition rule (one using `oldSelf`) is on `n` or anywhere below it."""
    return any(r.transition for r in n.rules) or any(
        c.transition_below
        for c in (
            *(n.properties.values() if n.properties else ()),
            *((n.additional,) if n.additional else ()),
            *((n.items,) if n.items else ()),
        )
    )


def _has_value_checks(n: Node) -> bool:
    """Whether `n` has any OpenAPI value validation, so that validation must visit it."""
    return bool(
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


def _trivial(n: Node) -> bool:
    """A subschema that accepts every value (no checks of its own or below)."""
    return not n.value_checks and n.properties is None and n.items is None and n.additional is None


def _cel_escape(name: str) -> str | None:
    """A property name as CEL sees it (kube-apiserver's escaping), or None if inaccessible.

    CEL keywords are escaped as `__{keyword}__`; since Kubernetes 1.32 they may also be
    selected directly (`self.metadata.namespace`), so `Run.to_cel` binds both names.
    """
    if name in CEL_RESERVED:
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


def _field_path_suffix(field_path: str, node: Node) -> str:
    """Check a rule's `fieldPath` against the schema and render it as a field-path suffix."""
    pos = 0
    out: list[str] = []
    current: Node | None = node
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


def _check_default(node: Node, path: str, compiler: _Compiler) -> None:
    """Defaults must survive pruning and validate, as kube-apiserver requires of CRDs."""
    value = node.default
    if value is None and node.nullable:
        return
    pruned = prune_value(value, node)
    if pruned != value:
        compiler.invalid(path, value, "must not have unknown fields")
        return
    defaulted = default_value(pruned, node)
    run = Run()
    run.walk(defaulted, node, "", "", MISSING, False)
    for cause in run.finish():
        where = f"{path}.{cause.field}" if cause.field and cause.field != "<nil>" else path
        compiler.errors.append(Cause(cause.reason, cause.message, where))
