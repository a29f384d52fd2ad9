"""Field errors worded as `k8s.io/apimachinery/pkg/util/validation/field` words them.

Every validator of the simulated API server (object metadata, built-in strategies, CRD
registration and structural schemas, selectors, the review APIs) reports its findings as
`Status.details.causes`, and clients print those texts verbatim - so they must read exactly
like kube-apiserver's `field.Invalid(...)`, `field.Required(...)` and friends. Each function
here builds one `Cause` the way the Go constructor of the same name builds a `field.Error`,
and `error_text` gives `field.Error.Error()` (`path: body`) for messages that embed one.

Values are printed as Go prints them: strings `%q`-quoted, numbers and booleans bare,
JSON objects and arrays as `%#v` of their decoded Go values. A caller that already has the
Go rendering (a type name such as `"object"`, a `[]string{...}`) passes it as `Shown(...)`;
`OMIT` leaves the value out (Go's `field.OmitValueType{}`).
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from typing import Any, Final

from kubesim.machinery.errors import Cause
from kubeutil.gofmt import go_quote  # shared with the controller; validators use fe.go_quote

__all__ = [
    "OMIT",
    "Shown",
    "duplicate",
    "error_text",
    "forbidden",
    "go_float",
    "go_quote",
    "go_sharp",
    "go_value",
    "invalid",
    "not_found",
    "not_supported",
    "required",
    "too_long",
    "too_many",
    "type_invalid",
]


class Shown(str):
    """A value already rendered the way Go would print it; printed as is."""

    __slots__ = ()


class _Omit:
    def __repr__(self) -> str:
        return "OMIT"


OMIT: Final = _Omit()


def go_float(f: float) -> str:
    """Go's `%v` (strconv 'g', shortest) for a float64, as kube-apiserver and cel-go print them.

    Exponent notation is used when the decimal exponent is below -4 or at least 6, so 3.0
    prints as `3` and 2147483647.0 as `2.147483647e+09`.
    """
    if f != f:
        return "NaN"
    if f in (float("inf"), float("-inf")):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "0"
    sign = "-" if f < 0 else ""
    parsed = Decimal(repr(abs(f))).as_tuple()
    digits = list(parsed.digits)
    exponent = int(parsed.exponent)
    while len(digits) > 1 and digits[-1] == 0:
        digits.pop()
        exponent += 1
    text = "".join(str(d) for d in digits)
    point = len(digits) + exponent
    x = point - 1
    if x < -4 or x >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{sign}{mantissa}e{'-' if x < 0 else '+'}{abs(x):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{text}"
    if point >= len(text):
        return sign + text + "0" * (point - len(text))
    return f"{sign}{text[:point]}.{text[point:]}"


def go_sharp(v: Any) -> str:
    """Go's `%#v` of a decoded JSON value (what `map[string]interface {}` values print as)."""
    if isinstance(v, Shown):
        return str(v)
    if v is None:
        return "interface {}(nil)"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return go_quote(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return go_float(v)
    if isinstance(v, list):
        return "[]interface {}{" + ", ".join(go_sharp(x) for x in v) + "}"
    if isinstance(v, dict):
        items = ", ".join(f"{go_quote(k)}:{go_sharp(v[k])}" for k in sorted(v))
        return "map[string]interface {}{" + items + "}"
    return str(v)


def go_value(v: Any) -> str:
    """How `field.Error` prints a bad value: strings quoted, numbers and bools bare."""
    if isinstance(v, Shown):
        return str(v)
    if v is None:
        return '"null"'
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return go_quote(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return go_float(v)
    return go_sharp(v)


def _with_detail(body: str, detail: str) -> str:
    return f"{body}: {detail}" if detail else body


def invalid(path: str, value: Any, detail: str = "") -> Cause:
    """`field.Invalid`: `Invalid value: <value>: <detail>`."""
    body = "Invalid value" if value is OMIT else f"Invalid value: {go_value(value)}"
    return Cause("FieldValueInvalid", _with_detail(body, detail), path)


def type_invalid(path: str, value: Any, detail: str) -> Cause:
    """`field.TypeInvalid`: worded as Invalid, with reason `FieldValueTypeInvalid`."""
    return Cause(
        "FieldValueTypeInvalid", _with_detail(f"Invalid value: {go_value(value)}", detail), path
    )


def required(path: str, detail: str = "") -> Cause:
    """`field.Required`: `Required value[: <detail>]`."""
    return Cause("FieldValueRequired", _with_detail("Required value", detail), path)


def forbidden(path: str, detail: str) -> Cause:
    """`field.Forbidden`: `Forbidden: <detail>`."""
    return Cause("FieldValueForbidden", _with_detail("Forbidden", detail), path)


def duplicate(path: str, value: Any) -> Cause:
    """`field.Duplicate`: `Duplicate value: <value>`."""
    return Cause("FieldValueDuplicate", f"Duplicate value: {go_value(value)}", path)


def not_found(path: str, value: Any) -> Cause:
    """`field.NotFound`: `Not found: <value>`."""
    return Cause("FieldValueNotFound", f"Not found: {go_value(value)}", path)


def not_supported(path: str, value: Any, supported: Iterable[str] | None = None) -> Cause:
    """`field.NotSupported`: `Unsupported value: <value>[: supported values: "a", "b"]`."""
    body = f"Unsupported value: {go_value(value)}"
    if supported is not None:
        body += ": supported values: " + ", ".join(go_quote(s) for s in supported)
    return Cause("FieldValueNotSupported", body, path)


def too_long(path: str, max_length: int, unit: str = "bytes") -> Cause:
    """`field.TooLong` (value omitted): `Too long: may not be more than <n> <unit>`."""
    return Cause("FieldValueTooLong", f"Too long: may not be more than {max_length} {unit}", path)


def too_many(path: str, actual: int, max_items: int, unit: str = "items") -> Cause:
    """`field.TooMany`: `Too many: <n>: must have at most <max> <unit>`."""
    return Cause(
        "FieldValueTooMany", f"Too many: {actual}: must have at most {max_items} {unit}", path
    )


def error_text(cause: Cause) -> str:
    """`field.Error.Error()`: the path, then the body (the path alone when there is none)."""
    return f"{cause.field}: {cause.message}" if cause.field else cause.message
