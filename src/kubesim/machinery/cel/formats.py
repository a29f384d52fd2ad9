"""Kubernetes' named-format library (`format.dns1123Label().validate(s)`, `format.named(n)`, ...)
and cel-go's `base64.encode/decode`.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from typing import Any

from celpy import celtypes

from kubesim.machinery.cel.network import parse_url
from kubesim.machinery.cel.standard import Optional
from kubesim.machinery.cel.values import Namespace, check_str, error_value
from kubeutil import names

# Named formats (Kubernetes' `format` library) ---------------------------------------------------

_UUID_RE = re.compile(
    r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
)


_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


_DATETIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def _format_errors(name: str, s: str) -> list[str]:
    if name.endswith("Prefix"):  # a generateName prefix: may end in '-'
        s = s[:-1] if s.endswith("-") else s
        name = name.removesuffix("Prefix")
    # The same checks as kube-apiserver's CEL format library: apimachinery's validation.
    checks = {
        "dns1123Label": names.is_dns1123_label,
        "dns1123Subdomain": names.is_dns1123_subdomain,
        "dns1035Label": names.is_dns1035_label,
        "qualifiedName": names.is_qualified_name,
        "labelValue": names.is_valid_label_value,
    }
    if name in checks:
        return checks[name](s)
    if name == "uri":
        parsed = parse_url(s)
        return [] if parsed is not None and parsed.parts.scheme else ["invalid URI"]
    if name == "uuid":
        return [] if _UUID_RE.match(s) else ["does not match the UUID format"]
    if name == "byte":
        try:
            base64.b64decode(s, validate=True)
        except ValueError:
            return ["invalid base64"]
        return []
    if name == "date":
        return [] if _DATE_RE.match(s) else ["invalid date"]
    if name == "datetime":
        return [] if _DATETIME_RE.match(s) else ["invalid datetime"]
    return [f"unknown format: {name}"]


_FORMAT_NAMES = (
    "dns1123Label",
    "dns1123Subdomain",
    "dns1035Label",
    "qualifiedName",
    "dns1123LabelPrefix",
    "dns1123SubdomainPrefix",
    "dns1035LabelPrefix",
    "labelValue",
    "uri",
    "uuid",
    "byte",
    "date",
    "datetime",
)


class _Format:
    """A named format from `format.<name>()`; `validate(s)` returns optional error messages."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, _Format) and other.name == self.name

    __hash__ = None  # type: ignore[assignment]


def _format_ctor(name: str) -> Callable[[Any], Any]:
    def make(ns: Any) -> Any:
        if not (isinstance(ns, Namespace) and ns.name == "format"):
            raise TypeError("no such overload")
        return _Format(name)

    return make


def _format_named(ns: Any, name: Any) -> Any:
    if not (isinstance(ns, Namespace) and ns.name == "format"):
        raise TypeError("no such overload")
    check_str(name)
    return Optional.of(_Format(name)) if name in _FORMAT_NAMES else Optional.none()


def _format_validate(fmt: Any, s: Any) -> Any:
    if not isinstance(fmt, _Format):
        raise TypeError("no such overload")
    check_str(s)
    errors = _format_errors(fmt.name, str(s))
    if not errors:
        return Optional.none()
    return Optional.of(celtypes.ListType(celtypes.StringType(e) for e in errors))


# base64 and math ---------------------------------------------------------------------------------


def _b64_encode(ns: Any, data: Any) -> Any:
    if not (isinstance(ns, Namespace) and ns.name == "base64") or not isinstance(data, bytes):
        raise TypeError("no such overload")
    return celtypes.StringType(base64.b64encode(data).decode())


def _b64_decode(ns: Any, text: Any) -> Any:
    if not (isinstance(ns, Namespace) and ns.name == "base64"):
        raise TypeError("no such overload")
    check_str(text)
    try:
        padded = text + "=" * (-len(text) % 4)
        return celtypes.BytesType(base64.b64decode(padded, validate=True))
    except ValueError:
        return error_value("illegal base64 data")


FUNCTIONS: dict[str, Any] = {
    **{name: _format_ctor(name) for name in _FORMAT_NAMES},
    "named": _format_named,
    "validate": _format_validate,
    "encode": _b64_encode,
    "decode": _b64_decode,
}
