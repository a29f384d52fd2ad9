"""AdmissionReview v1: decoding what the API server sends and encoding what we answer.

The API server treats anything but a well-formed AdmissionReview with the request's uid as
a failure to call the webhook (and, with `failurePolicy: Fail`, fails the user's request
with an opaque "failed calling webhook" text). So every answer - including the answer to a
request we cannot make sense of - is an HTTP 200 AdmissionReview whose `response` carries
`allowed` and, when denying, a `Status` with a code and a message a person can act on.
That is what controller-runtime's webhook server does (`admission.Errored(400, ...)` for a
body it cannot read), and it is what keeps malformed input from ever becoming a 500.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any, Final

import jsonpatch
import orjson

from jobset.runtime.reviews import User

__all__ = [
    "ADMISSION_API_VERSION",
    "MAX_REQUEST_BYTES",
    "AdmissionRequest",
    "AdmissionResponse",
    "ReviewError",
    "decode_review",
    "encode_review",
]

ADMISSION_API_VERSION: Final = "admission.k8s.io/v1"
_ACCEPTED_VERSIONS: Final = frozenset({ADMISSION_API_VERSION, "admission.k8s.io/v1beta1"})
# controller-runtime's limit: kube-apiserver sends at most ~3 MiB objects, twice for updates.
MAX_REQUEST_BYTES: Final = 7 * 1024 * 1024
_OPERATIONS: Final = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})


class ReviewError(Exception):
    """The request cannot be handled; answered as a denial with `code` (400 by default)."""

    def __init__(self, message: str, code: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


@dataclass(frozen=True)
class AdmissionRequest:
    """The fields of an AdmissionRequest the handlers read."""

    uid: str
    operation: str
    kind: dict[str, str]
    namespace: str
    name: str
    object: dict[str, Any] | None
    old_object: dict[str, Any] | None
    dry_run: bool
    api_version: str = ADMISSION_API_VERSION
    # `request.userInfo`: who asked the API server (None: the review named nobody). Only as
    # trustworthy as the caller: the API server when `--webhook-client-ca-file` (or
    # `--webhook-client-ca-from-cluster`) makes the server verify it, anyone otherwise.
    user: User | None = None


@dataclass
class AdmissionResponse:
    """What a handler decides: allow (with an optional JSON patch) or deny with a Status."""

    allowed: bool
    status: dict[str, Any] | None = None
    patch: list[dict[str, Any]] | None = None
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def allow(cls, *warnings: str) -> AdmissionResponse:
        return cls(True, warnings=list(warnings))

    @classmethod
    def deny(cls, message: str, code: int = 403, reason: str = "Forbidden") -> AdmissionResponse:
        """A denial with a plain message (controller-runtime's `admission.Denied`)."""
        return cls(
            False,
            {
                "metadata": {},
                "status": "Failure",
                "message": message,
                "reason": reason,
                "code": code,
            },
        )

    @classmethod
    def errored(cls, code: int, message: str) -> AdmissionResponse:
        """The request could not be processed (controller-runtime's `admission.Errored`)."""
        return cls(False, {"metadata": {}, "status": "Failure", "message": message, "code": code})

    @classmethod
    def with_status(cls, status: dict[str, Any]) -> AdmissionResponse:
        """A denial carrying a full `Status` (e.g. a 422 Invalid with field causes)."""
        return cls(False, status)

    @classmethod
    def patched(cls, original: Any, mutated: Any) -> AdmissionResponse:
        """Allow, with the JSON patch turning `original` into `mutated` (none if equal)."""
        ops = jsonpatch.make_patch(original, mutated).patch
        return cls(True, patch=list(ops) if ops else None)


def _str(value: Any, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ReviewError(f"couldn't decode AdmissionReview: {what} must be a string")
    return value


def _obj(value: Any, what: str) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ReviewError(f"couldn't decode AdmissionReview: {what} must be an object")
    return value


def _user(value: Any) -> User | None:
    info = _obj(value, "request.userInfo")
    if info is None:
        return None
    name = _str(info.get("username"), "request.userInfo.username")
    uid = _str(info.get("uid"), "request.userInfo.uid")
    groups = info.get("groups") or []
    extra = info.get("extra") or {}
    if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
        raise ReviewError(
            "couldn't decode AdmissionReview: request.userInfo.groups must be strings"
        )
    if not isinstance(extra, dict) or not all(
        isinstance(v, list) and all(isinstance(x, str) for x in v) for v in extra.values()
    ):
        raise ReviewError(
            "couldn't decode AdmissionReview: request.userInfo.extra must map to string lists"
        )
    if not name:
        return None
    return User(
        name,
        uid,
        tuple(groups),
        tuple(sorted((str(k), tuple(v)) for k, v in extra.items())),
    )


def decode_review(body: bytes, content_type: str) -> AdmissionRequest:
    """Parse and check an AdmissionReview; raise `ReviewError` with the reason otherwise."""
    if content_type.split(";")[0].strip().lower() != "application/json":
        raise ReviewError(f"contentType={content_type or '<none>'}, expected application/json")
    if not body:
        raise ReviewError("request body is empty")
    if len(body) > MAX_REQUEST_BYTES:
        raise ReviewError(f"request entity is too large; limit is {MAX_REQUEST_BYTES} bytes", 413)
    try:
        review = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ReviewError(f"couldn't decode AdmissionReview: {exc}") from None
    if not isinstance(review, dict):
        raise ReviewError("couldn't decode AdmissionReview: not a JSON object")
    api_version = review.get("apiVersion")
    if (
        review.get("kind") != "AdmissionReview"
        or not isinstance(api_version, str)
        or api_version not in _ACCEPTED_VERSIONS
    ):
        raise ReviewError(
            f"unsupported review kind {review.get('kind')!r} of apiVersion {api_version!r}, "
            f"expected AdmissionReview of {ADMISSION_API_VERSION}"
        )
    request = _obj(review.get("request"), "request")
    if request is None:
        raise ReviewError("got an empty AdmissionRequest")
    uid = _str(request.get("uid"), "request.uid")
    if not uid:
        raise ReviewError("AdmissionRequest has no uid")
    operation = _str(request.get("operation"), "request.operation")
    if operation not in _OPERATIONS:
        raise ReviewError(f"unsupported operation {operation!r}")
    kind = _obj(request.get("kind"), "request.kind") or {}
    if not all(isinstance(v, str) for v in kind.values()):
        raise ReviewError("couldn't decode AdmissionReview: request.kind fields must be strings")
    dry_run = request.get("dryRun")
    if dry_run is not None and not isinstance(dry_run, bool):
        raise ReviewError("couldn't decode AdmissionReview: request.dryRun must be a boolean")
    return AdmissionRequest(
        uid=uid,
        operation=operation,
        kind={str(k): str(v) for k, v in kind.items()},
        namespace=_str(request.get("namespace"), "request.namespace"),
        name=_str(request.get("name"), "request.name"),
        object=_obj(request.get("object"), "request.object"),
        old_object=_obj(request.get("oldObject"), "request.oldObject"),
        dry_run=bool(dry_run),
        api_version=str(api_version),
        user=_user(request.get("userInfo")),
    )


def encode_review(
    response: AdmissionResponse, uid: str, api_version: str = ADMISSION_API_VERSION
) -> bytes:
    """The AdmissionReview answering request `uid` (uid may be "" for unreadable requests)."""
    out: dict[str, Any] = {"uid": uid, "allowed": response.allowed}
    if response.status is not None:
        out["status"] = response.status
    if response.patch:
        out["patchType"] = "JSONPatch"
        out["patch"] = base64.b64encode(orjson.dumps(response.patch)).decode()
    if response.warnings:
        out["warnings"] = response.warnings
    return orjson.dumps({"apiVersion": api_version, "kind": "AdmissionReview", "response": out})
