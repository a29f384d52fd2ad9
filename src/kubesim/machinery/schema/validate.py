"""`validate`: OpenAPI value validations, then `x-kubernetes-list-type` errors, then CEL rules
(skipped, with a final `<nil>` cause, after an error that makes them meaningless), with
validation ratcheting on update, in kube-apiserver's words.
"""

from __future__ import annotations

import base64
import json
import math
from typing import Any

from celpy import celtypes
from celpy.adapter import json_to_cel

from kubesim.machinery import field as fe
from kubesim.machinery.cel import (
    PER_CALL_LIMIT,
    RUNTIME_COST_BUDGET,
    CelError,
    CostTracker,
    MapList,
    Optional,
    SetList,
)
from kubesim.machinery.errors import Cause
from kubesim.machinery.field import go_float
from kubesim.machinery.schema.nodes import (
    CEL_RESERVED,
    MISSING,
    CompiledSchema,
    Node,
    Rule,
    join_path,
    json_type,
    same_json,
)
from kubeutil.gofmt import go_quote

_BLOCKING_REASONS = frozenset(
    {
        "FieldValueNotSupported",
        "FieldValueRequired",
        "FieldValueTooLong",
        "FieldValueTooMany",
        "FieldValueTypeInvalid",
    }
)


# A rule whose cost the request's remaining budget does not cover (apiextensions-apiserver).
OUT_OF_BUDGET = (
    "validation failed due to running out of cost budget, no further validation rules will be run"
)
_SKIPPED_CEL = fe.invalid(
    "<nil>",
    None,
    "some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation",
)


# ------------------------------------------------------------------------------------------------
# Validation


def validate(
    obj: dict[str, Any], schema: CompiledSchema, old: dict[str, Any] | None = None
) -> list[Cause]:
    """Validate a pruned and defaulted object; `old` is the stored object on update.

    Returns the causes kube-apiserver would put in its 422 response, in its order: schema
    errors, then list-type errors, then CEL rule errors.
    """
    run = Run()
    run.walk(obj, schema.root, "", "", old if old is not None else MISSING, False)
    return run.finish()


_INT64 = (-(2**63), 2**63 - 1)
_JSON_INTEGER_FLOAT = 2**53


def _is_integer(value: Any) -> bool:
    """An integer as kube-apiserver decodes one: an int64 (a larger JSON integer decodes as a
    float64), or a float64 holding an integer no larger than 2^53 (go-openapi's
    IsFloat64AJSONInteger)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return _INT64[0] <= value <= _INT64[1]
    return (
        isinstance(value, float)
        and value.is_integer()
        and -_JSON_INTEGER_FLOAT <= value <= _JSON_INTEGER_FLOAT
    )


def _double(value: int) -> Any:
    try:
        return celtypes.DoubleType(float(value))
    except OverflowError:  # past float64 (from a YAML body): Go's decoder refuses it too
        return celtypes.DoubleType(math.inf if value > 0 else -math.inf)


def _type_ok(value: Any, node: Node) -> bool:
    t = node.type
    if t is None:
        if node.int_or_string:
            return _is_integer(value) or isinstance(value, str)
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
        return _is_integer(value)
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


class Run:
    """The state of one validation: the causes found so far and converted CEL values."""

    __slots__ = (
        "blocking",
        "budget",
        "cel_errors",
        "list_errors",
        "memo",
        "schema_errors",
        "stopped",
    )

    def __init__(self) -> None:
        self.schema_errors: list[Cause] = []
        self.list_errors: list[Cause] = []
        self.cel_errors: list[Cause] = []
        self.blocking = False
        self.memo: dict[int, tuple[Any, Any]] = {}
        # What the object's rules may still cost together (kube-apiserver's per-request
        # budget); `stopped` once a rule ran out of it or passed the per-call limit.
        self.budget = RUNTIME_COST_BUDGET
        self.stopped = False

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

    def add(self, cause: Cause, out: list[Cause] | None) -> None:
        """Report `cause` to `out` when given (a junctor branch), else as a schema error."""
        if out is not None:
            out.append(cause)
        else:
            self.schema_error(cause)

    def value_checks(
        self, value: Any, node: Node, path: str, out: list[Cause] | None = None
    ) -> None:
        """OpenAPI value validations of one node (not its children), in kube-openapi's words."""
        if isinstance(value, str):
            self.string_checks(value, node, path, out)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            self.number_checks(value, node, path, out)
        elif isinstance(value, list):
            self.array_checks(value, node, path, out)
        elif isinstance(value, dict):
            self.object_checks(value, node, path, out)
        if node.enum is not None and not any(_enum_equal(value, e) for e in node.enum):
            supported = [e if isinstance(e, str) else json.dumps(e) for e in node.enum]
            self.add(fe.not_supported(path, value, supported), out)
        if node.all_of or node.any_of or node.one_of or node.not_ is not None:
            self.junctors(value, node, path, out)

    def string_checks(self, value: str, node: Node, path: str, out: list[Cause] | None) -> None:
        name = path
        if node.max_length is not None and len(value) > node.max_length:
            unit = "byte" if node.max_length == 1 else "bytes"
            self.add(fe.too_long(path, node.max_length, unit), out)
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
            self.add(
                fe.type_invalid(
                    path,
                    value,
                    f"{name} in body must be of type {node.format_name}: {fe.go_quote(value)}",
                ),
                out,
            )

    def number_checks(self, value: float, node: Node, path: str, out: list[Cause] | None) -> None:
        name = path
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
                    f"{name} in body should be a multiple of " + go_float(float(node.multiple_of)),
                    out,
                )

    def array_checks(
        self, value: list[Any], node: Node, path: str, out: list[Cause] | None
    ) -> None:
        name = path
        if node.max_items is not None and len(value) > node.max_items:
            unit = "item" if node.max_items == 1 else "items"
            self.add(fe.too_many(path, len(value), node.max_items, unit), out)
        if node.min_items is not None and len(value) < node.min_items:
            self.invalid(
                path,
                len(value),
                f"{name} in body should have at least {node.min_items} items",
                out,
            )
        if node.unique_items and len({_unique_key(v) for v in value}) != len(value):
            self.invalid(path, "", f"{name} in body shouldn't contain duplicates", out)

    def object_checks(
        self, value: dict[str, Any], node: Node, path: str, out: list[Cause] | None
    ) -> None:
        name = path
        if node.max_props is not None and len(value) > node.max_props:
            unit = "item" if node.max_props == 1 else "items"
            self.add(fe.too_many(path, len(value), node.max_props, unit), out)
        if node.min_props is not None and len(value) < node.min_props:
            self.invalid(
                path,
                len(value),
                f"{name} in body should have at least {node.min_props} properties",
                out,
            )
        for req in node.required:
            if req not in value:
                self.add(fe.required(join_path(path, req)), out)

    def junctors(self, value: Any, node: Node, path: str, out: list[Cause] | None) -> None:
        """allOf / anyOf / oneOf / not, with their sub-errors and kube-openapi's summary line."""
        target = out if out is not None else self.schema_errors

        def sub(s: Node) -> list[Cause]:
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

    def subschema(self, value: Any, s: Node, path: str, out: list[Cause]) -> None:
        """Validate against a value-only subschema (a junctor branch) and its children."""
        self.value_checks(value, s, path, out)
        if isinstance(value, dict):
            if s.properties:
                for k, child in s.properties.items():
                    if k in value:
                        self.subschema(value[k], child, join_path(path, k), out)
        elif isinstance(value, list) and s.items is not None:
            for i, v in enumerate(value):
                self.subschema(v, s.items, f"{path}[{i}]", out)

    # -- the walk ------------------------------------------------------------------------------

    def walk(
        self, value: Any, node: Node, path: str, cpath: str, old: Any, unchanged: bool
    ) -> None:
        """Validate `value` against `node`.

        `path` is the field path in kube-openapi's style (map keys as `.key`), `cpath` the one
        CEL errors use (`[key]`); `old` is the correlated old value or MISSING; `unchanged`
        says an ancestor is already known to be equal to its old value (ratcheting).
        """
        if not unchanged and old is not MISSING and same_json(value, old):
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
                self.type_error(path, json_type(value), node)
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
                    child_path = join_path(path, k)
                    child_cpath = child_path if cpath is path else join_path(cpath, k)
                elif addl is not None:
                    child = addl
                    child_path = join_path(path, k)
                    child_cpath = f"{cpath}[{k}]"
                else:
                    continue
                child_old = old_dict.get(k, MISSING) if old_dict is not None else MISSING
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
                child_old = MISSING
                if old_items is not None and isinstance(v, dict):
                    child_old = old_items.get(self.map_key(v, node), MISSING)
                child_path = f"{path}[{i}]"
                child_cpath = child_path if cpath is path else f"{cpath}[{i}]"
                self.walk(v, items, child_path, child_cpath, child_old, unchanged)

    def type_error(self, path: str, actual: str, node: Node) -> None:
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
            v = value.get(key, MISSING)
            field = join_path(path, key)
            if v is MISSING:
                self.schema_error(fe.required(field, "must not be empty"))
            elif not isinstance(v, str):
                self.invalid(field, v, "must be a string")
            elif not v:
                self.invalid(field, v, "must not be empty")

    @staticmethod
    def map_key(item: dict[str, Any], node: Node) -> tuple[Any, ...]:
        items = node.items
        key: list[Any] = []
        for k in node.map_keys:
            v = item.get(k, MISSING)
            if v is MISSING and items is not None and items.properties is not None:
                prop = items.properties.get(k)
                v = prop.default if prop is not None and prop.default is not MISSING else None
            key.append(_unique_key(v))
        return tuple(key)

    def list_checks(self, value: list[Any], node: Node, path: str) -> None:
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
                        if d is not MISSING:
                            shown[k] = d
                errors.append(fe.duplicate(f"{path}[{i}]", fe.Shown(fe.go_sharp(shown))))
            seen_keys.add(key)

    # -- CEL -----------------------------------------------------------------------------------

    def rules(self, value: Any, node: Node, cpath: str, old: Any, unchanged: bool) -> None:
        self_value: Any = MISSING
        old_value: Any = MISSING
        for rule in node.rules:
            if self.stopped:
                return  # no further validation rules are run
            if rule.transition:
                if old is MISSING and not rule.optional_old_self:
                    continue
            elif unchanged:
                continue  # ratcheting: errors on unchanged values are not reported
            if rule.self_eq_old and (unchanged or same_json(value, old)):
                continue
            if self_value is MISSING:
                self_value = self.to_cel_fields(value, node)
            variables: dict[str, Any] = {"self": self_value}
            if rule.transition:
                if old_value is MISSING and old is not MISSING:
                    old_value = self.to_cel_fields(old, node)
                if rule.optional_old_self:
                    variables["oldSelf"] = (
                        Optional.none() if old is MISSING else Optional.of(old_value)
                    )
                else:
                    variables["oldSelf"] = old_value
            self.evaluate(rule, variables, node, cpath)

    def charge(self, tracker: CostTracker) -> bool:
        """Take an evaluation's cost from the request's budget; False (and validation
        stops) when the budget does not cover it, as kube-apiserver reports it."""
        if tracker.cost > self.budget:
            self.stopped = True
            return False
        self.budget -= tracker.cost
        return True

    def evaluate(self, rule: Rule, variables: dict[str, Any], node: Node, cpath: str) -> None:
        field = cpath or "<nil>"
        type_name = node.type_name
        tracker = CostTracker(PER_CALL_LIMIT)
        try:
            result = rule.program.evaluate(variables, tracker)
        except CelError as ex:
            if ex.cost_limit:
                self.stopped = True
                detail = (
                    f"'{ex.message}': no further validation rules will be run due to call cost "
                    f"exceeds limit for rule: {rule.error_string}"
                )
            elif ex.overload:
                detail = (
                    f"'{ex.message}': call arguments did not match a supported operator, function "
                    f"or macro signature for rule: {rule.error_string}"
                )
            else:
                detail = f"{ex.message} evaluating rule: {rule.error_string}"
            if not self.stopped and not self.charge(tracker):
                detail = OUT_OF_BUDGET
            self.cel_errors.append(fe.invalid(field, type_name, detail))
            return
        if not self.charge(tracker):
            self.cel_errors.append(fe.invalid(field, type_name, OUT_OF_BUDGET))
            return
        if isinstance(result, bool | celtypes.BoolType):
            if result:
                return
        else:
            detail = f"rule did not evaluate to a bool: {rule.error_string}"
            self.cel_errors.append(fe.invalid(field, type_name, detail))
            return
        message, problem = self.message(rule, variables)
        if problem:
            self.cel_errors.append(fe.invalid(field, type_name, problem))
            return
        self.rule_failed(rule, message, field, cpath, type_name)

    def message(self, rule: Rule, variables: dict[str, Any]) -> tuple[str, str]:
        """The failed rule's message, its messageExpression's when it has one; and the
        problem with that expression that replaces the message, if any."""
        if rule.message_program is None:
            return rule.message, ""
        tracker = CostTracker(PER_CALL_LIMIT)
        try:
            evaluated = rule.message_program.evaluate(variables, tracker)
        except CelError as ex:
            if ex.cost_limit:
                self.stopped = True
                source = go_quote(rule.message_program.source)
                return "", (
                    "no further validation rules will be run due to call cost exceeds limit "
                    f"for messageExpression: {source}"
                )
            if not self.charge(tracker):
                return "", f"messageExpression {OUT_OF_BUDGET}"
            return "", f"messageExpression evaluation failed due to: {ex.message}"
        if not self.charge(tracker):
            return "", f"messageExpression {OUT_OF_BUDGET}"
        if not isinstance(evaluated, str):
            return "", "messageExpression failed to convert to string"
        text = evaluated.strip()
        if "\n" in text or "\r" in text:
            return "", "messageExpression should not contain line breaks"
        if not text:
            return "", "messageExpression should evaluate to a non-empty string"
        return text, ""

    def rule_failed(self, rule: Rule, message: str, field: str, cpath: str, type_name: str) -> None:
        """A rule evaluated to false: its cause, typed by the rule's `reason`."""
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

    def to_cel(self, value: Any, node: Node | None) -> Any:
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
            if node.type == "number" or not _INT64[0] <= value <= _INT64[1]:
                return _double(value)  # beyond int64 kube-apiserver has decoded a float64
            return celtypes.IntType(value)
        if isinstance(value, float):
            if node.type == "integer" and _is_integer(value):
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

    def to_cel_fields(self, value: Any, node: Node) -> Any:
        """`value` as its node's rules see it: an object whose rules only select some of its
        fields (`node.rule_fields`) has only those converted - a rule on a large JobSet
        `spec` that reads two fields converts those two, not the whole spec. The rules never
        see the difference: they select nothing else. Not memoized (a whole conversion of
        the same object must not find it); the fields' own values are."""
        only = node.rule_fields
        if only is None or not isinstance(value, dict) or node.type != "object":
            return self.to_cel(value, node)
        return self._convert_container(value, node, only)

    def _convert_container(
        self,
        value: dict[str, Any] | list[Any],
        node: Node,
        only: frozenset[str] | None = None,
    ) -> Any:
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
                    if name is not None and (only is None or name in only or k in only):
                        converted = self.to_cel(v, child)
                        out[celtypes.StringType(name)] = converted
                        if k in CEL_RESERVED:
                            out[celtypes.StringType(k)] = converted
        elif node.additional is not None:
            for k, v in value.items():
                if only is None or k in only:
                    out[celtypes.StringType(k)] = self.to_cel(v, node.additional)
        elif node.additional_any:
            for k, v in value.items():
                if only is None or k in only:
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
