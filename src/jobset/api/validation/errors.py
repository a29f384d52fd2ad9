"""Field errors as Kubernetes renders `field.Error`s, and the 422 `Invalid` Status that
carries them (apimachinery's `field` package and `apierrors.NewInvalid`)."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from jobset.api import constants as c
from kubeutil.gofmt import go_quote  # shared with the simulator; re-exported for validators

__all__ = [
    "MAX_REPORTED_ERRORS",
    "MAX_VALUE_CHARS",
    "NO_VALUE",
    "ErrorType",
    "FieldError",
    "forbidden",
    "format_invalid_message",
    "go_quote",
    "internal",
    "invalid",
    "invalid_status",
    "render_value",
    "required",
    "too_long",
]


class ErrorType(enum.StrEnum):
    """Machine-readable error kinds: the `reason` of a Status cause."""

    NOT_FOUND = "FieldValueNotFound"
    REQUIRED = "FieldValueRequired"
    DUPLICATE = "FieldValueDuplicate"
    INVALID = "FieldValueInvalid"
    NOT_SUPPORTED = "FieldValueNotSupported"
    FORBIDDEN = "FieldValueForbidden"
    TOO_LONG = "FieldValueTooLong"
    TOO_MANY = "FieldValueTooMany"
    INTERNAL = "InternalError"
    TYPE_INVALID = "FieldValueTypeInvalid"

    @property
    def label(self) -> str:
        """The human text Kubernetes prints for this kind."""
        return _TYPE_LABELS[self]


_TYPE_LABELS: Final[dict[ErrorType, str]] = {
    ErrorType.NOT_FOUND: "Not found",
    ErrorType.REQUIRED: "Required value",
    ErrorType.DUPLICATE: "Duplicate value",
    ErrorType.INVALID: "Invalid value",
    ErrorType.NOT_SUPPORTED: "Unsupported value",
    ErrorType.FORBIDDEN: "Forbidden",
    ErrorType.TOO_LONG: "Too long",
    ErrorType.TOO_MANY: "Too many",
    ErrorType.INTERNAL: "Internal error",
    ErrorType.TYPE_INVALID: "Invalid value",
}
# Kinds whose rendering never shows the offending value.
_VALUELESS: Final = frozenset(
    {ErrorType.REQUIRED, ErrorType.FORBIDDEN, ErrorType.TOO_LONG, ErrorType.INTERNAL}
)


class _NoValue:
    def __repr__(self) -> str:
        return "NO_VALUE"


NO_VALUE: Final = _NoValue()


# A string value longer than this is cut in messages (a 256 KiB annotation must not be
# echoed back whole, once per error).
MAX_VALUE_CHARS: Final = 256


def render_value(value: Any) -> str | None:
    """The offending value as Kubernetes prints it: numbers and booleans bare, strings
    quoted (cut after `MAX_VALUE_CHARS`), null for an absent value, and None - omitted -
    for objects and lists, as apimachinery omits values of complex types: an error about
    `spec.replicatedJobs` must not repeat the whole list once per error."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        if len(value) > MAX_VALUE_CHARS:
            return go_quote(value[:MAX_VALUE_CHARS]) + f"... ({len(value)} characters)"
        return go_quote(value)
    if value is None:
        return "null"
    return None


@dataclass(frozen=True)
class FieldError:
    """One validation failure: where (`path`), what kind (`type`), and why (`message`).

    `path` None is Go's nil field path, printed `<nil>`. `value` is the offending value
    (`NO_VALUE` to omit it). `origin` names the field a path-less error is about; it is
    informational and never rendered.
    """

    path: str | None
    type: ErrorType
    message: str = ""
    value: Any = NO_VALUE
    origin: str | None = None

    @property
    def field(self) -> str:
        """The field as it appears in a Status cause."""
        return "<nil>" if self.path is None else self.path

    def body(self) -> str:
        """The error without its field: `Invalid value: "x": detail`."""
        shown = (
            None if self.type in _VALUELESS or self.value is NO_VALUE else render_value(self.value)
        )
        text = self.type.label if shown is None else f"{self.type.label}: {shown}"
        if self.message:
            text += f": {self.message}"
        return text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"

    def to_cause(self) -> dict[str, str]:
        """This error as an entry of `Status.details.causes`."""
        return {"reason": str(self.type), "message": self.body(), "field": self.field}


def invalid(path: str, value: Any, message: str) -> FieldError:
    """field.Invalid."""
    return FieldError(path, ErrorType.INVALID, message, value)


def forbidden(path: str, message: str) -> FieldError:
    """field.Forbidden."""
    return FieldError(path, ErrorType.FORBIDDEN, message, "")


def required(path: str, message: str = "") -> FieldError:
    """field.Required."""
    return FieldError(path, ErrorType.REQUIRED, message, "")


def too_long(path: str, max_length: int) -> FieldError:
    """field.TooLong (the value is never shown)."""
    unit = "byte" if max_length == 1 else "bytes"
    return FieldError(path, ErrorType.TOO_LONG, f"may not be more than {max_length} {unit}")


def internal(message: str, origin: str | None = None, path: str | None = None) -> FieldError:
    """A plain error, as upstream reports its path-less rule violations."""
    return FieldError(path, ErrorType.INTERNAL, message, NO_VALUE, origin)


def format_invalid_message(name: str, errors: Sequence[FieldError]) -> str:
    """`JobSet.jobset.x-k8s.io "<name>" is invalid: ...`, as apierrors.NewInvalid words it.

    Several errors are bracketed and comma-separated; repeated texts are shown once.
    """
    head = f"{c.KIND}.{c.GROUP} {go_quote(name)} is invalid"
    texts = list(dict.fromkeys(str(err) for err in errors))  # linear, keeps the order
    if not texts:
        return head
    if len(texts) == 1:
        return f"{head}: {texts[0]}"
    shown = texts[:MAX_REPORTED_ERRORS]
    more = len(texts) - len(shown)
    if more:
        shown.append(f"and {more} more errors")
    return f"{head}: [{', '.join(shown)}]"


# Errors shown in one answer; beyond it the message says how many more (the causes stop
# there too), so the size of a denial is bounded whatever a JobSet holds.
MAX_REPORTED_ERRORS: Final = 50


def invalid_status(name: str, errors: Sequence[FieldError]) -> dict[str, Any]:
    """The 422 `Status` object an admission webhook returns for these errors."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": format_invalid_message(name, errors),
        "reason": "Invalid",
        "details": {
            "name": name,
            "group": c.GROUP,
            "kind": c.KIND,
            "causes": [err.to_cause() for err in errors[:MAX_REPORTED_ERRORS]],
        },
        "code": 422,
    }
