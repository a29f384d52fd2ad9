"""Kubernetes API errors, raised anywhere in the simulated API server and rendered as `Status`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Cause:
    """One entry of `Status.details.causes`: what is wrong, and where (a field path like `spec.replicas`)."""

    reason: str  # FieldValueInvalid, FieldValueRequired, FieldValueNotSupported, FieldValueDuplicate, ...
    message: str
    field: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"reason": self.reason, "message": self.message}
        if self.field:
            out["field"] = self.field
        return out


@dataclass
class ApiError(Exception):
    """An API failure that becomes a `Status` object with this HTTP code and reason."""

    code: int
    reason: str
    message: str
    group: str = ""
    kind: str = ""
    name: str = ""
    causes: list[Cause] = field(default_factory=list)
    retry_after: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    empty_details: bool = False

    def __str__(self) -> str:
        return self.message

    def to_status(self) -> dict[str, Any]:
        """The `Status`, its fields in the order kube-apiserver encodes them (`details`
        before `code`; present when any detail is, or when `empty_details` says so)."""
        status: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        details: dict[str, Any] = {}
        if self.name:
            details["name"] = self.name
        if self.group:
            details["group"] = self.group
        if self.kind:
            details["kind"] = self.kind
        if self.causes:
            details["causes"] = [c.to_dict() for c in self.causes]
        if self.retry_after is not None:
            details["retryAfterSeconds"] = self.retry_after
        if details or self.empty_details:
            status["details"] = details
        status["code"] = self.code
        return status


def unknown_path() -> ApiError:
    """The 404 of a path nothing serves: kube-apiserver's NotFound handler builds it from an
    empty resource and name, so its `details` is there and empty."""
    return ApiError(
        404, "NotFound", "the server could not find the requested resource", empty_details=True
    )


def not_found(group: str, plural: str, name: str) -> ApiError:
    res = f"{plural}.{group}" if group else plural
    return ApiError(
        404, "NotFound", f'{res} "{name}" not found', group=group, kind=plural, name=name
    )


def already_exists(group: str, plural: str, name: str) -> ApiError:
    res = f"{plural}.{group}" if group else plural
    return ApiError(
        409, "AlreadyExists", f'{res} "{name}" already exists', group=group, kind=plural, name=name
    )


def conflict(group: str, plural: str, name: str, why: str) -> ApiError:
    res = f"{plural}.{group}" if group else plural
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {res} "{name}": {why}',
        group=group,
        kind=plural,
        name=name,
    )


def invalid(group: str, kind: str, name: str, causes: list[Cause]) -> ApiError:
    """422 Invalid, with the message format of the real API server: `Kind "name" is invalid: [a, b]`."""
    parts = [f"{c.field}: {c.message}" if c.field else c.message for c in causes]
    joined = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    qualified = f"{kind}.{group}" if group else kind
    return ApiError(
        422,
        "Invalid",
        f'{qualified} "{name}" is invalid: {joined}',
        group=group,
        kind=kind,
        name=name,
        causes=causes,
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)
