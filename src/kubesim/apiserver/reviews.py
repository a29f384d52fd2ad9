"""The review APIs: TokenReview, SubjectAccessReview and SelfSubjectAccessReview.

They are how a component that is not the API server authenticates and authorizes its own
callers by asking the API server (delegated authentication and authorization): a
controller's secure metrics endpoint (controller-runtime's
`filters.WithAuthenticationAndAuthorization`), kube-rbac-proxy, the kubelet. As in
kube-apiserver they are create-only, cluster-scoped, and nothing is stored: the created
object comes back with its `status` filled in.

- `authentication.k8s.io/v1 TokenReview`: is `spec.token` a token this server accepts, and
  for which audiences? A token is valid for the audiences it was issued for (a
  TokenRequest's `spec.audiences`, by default the API server's own, `API_AUDIENCES`); the
  review checks them against `spec.audiences`, or against the API server's audiences when
  that is empty, and answers the intersection in `status.audiences`. The answer for a bad
  token is `authenticated: false` with an `error`, not an HTTP error.
- `authorization.k8s.io/v1 SubjectAccessReview`: would RBAC (`rbac.py`) allow
  `spec.user`/`spec.groups` the `resourceAttributes` or `nonResourceAttributes`? Answers
  `allowed` and, when allowed, the authorizer's `reason`. RBAC never denies explicitly, so
  `denied` is never set.
- `SelfSubjectAccessReview`: the same question for the requesting user; `SelfSubjectReview`
  (`kubectl auth whoami`): who the requesting user is.

Bad specs get kube-apiserver's errors: 400 for a TokenReview without a token, 422 Invalid
naming the field for a SubjectAccessReview without a user/group or without exactly one kind
of attributes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from kubesim.apiserver import rbac
from kubesim.machinery import field as fe
from kubesim.machinery.errors import ApiError, Cause, bad_request, invalid

__all__ = [
    "API_AUDIENCES",
    "REVIEW_RESOURCES",
    "Identity",
    "method_not_allowed",
    "self_subject_access_review",
    "self_subject_review",
    "subject_access_review",
    "token_review",
]

# kube-apiserver's --api-audiences default (its service-account issuer), as kind sets it.
API_AUDIENCES: Final = ("https://kubernetes.default.svc.cluster.local",)
AUTHN_GROUP: Final = "authentication.k8s.io"
AUTHZ_GROUP: Final = "authorization.k8s.io"
REVIEW_RESOURCES: Final = frozenset(
    {"tokenreviews", "selfsubjectreviews", "subjectaccessreviews", "selfsubjectaccessreviews"}
)


@dataclass(frozen=True)
class Identity:
    """Who a token authenticates as, and for which audiences it was issued."""

    user: rbac.UserInfo
    uid: str = ""
    audiences: tuple[str, ...] = API_AUDIENCES


def _object(body: Any, kind: str, group: str) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise bad_request(f"the body of the request must be a {kind} object")
    if body.get("kind", kind) != kind:
        raise bad_request(
            f"the object provided is unrecognized (must be of type {kind}): "
            f"{body.get('kind')!r} is not {kind}.{group}"
        )
    spec = body.get("spec")
    if spec is None:
        spec = {}
    if not isinstance(spec, dict):
        raise bad_request(f"{kind}.spec must be an object")
    return spec


def _strings(value: Any, field: str, kind: str, group: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise invalid(
            group, kind, "", [Cause("FieldValueInvalid", "must be a list of strings", field)]
        )
    return value


def _answer(kind: str, group: str, body: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    meta = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
    return {
        "kind": kind,
        "apiVersion": f"{group}/v1",
        "metadata": {**(meta or {}), "creationTimestamp": None},
        "spec": body.get("spec") or {},
        "status": status,
    }


def token_review(body: Any, lookup: Callable[[str], Identity | None]) -> dict[str, Any]:
    """Answer a TokenReview; `lookup` resolves a token to its identity (None: unknown,
    expired, or its ServiceAccount is gone)."""
    spec = _object(body, "TokenReview", AUTHN_GROUP)
    token = spec.get("token")
    if not isinstance(token, str) or not token:
        raise bad_request("token is required for TokenReview in authentication")
    wanted = _strings(spec.get("audiences"), "spec.audiences", "TokenReview", AUTHN_GROUP)
    status: dict[str, Any]
    who = lookup(token)
    if who is None:
        status = {"authenticated": False, "user": {}, "error": "invalid bearer token"}
        return _answer("TokenReview", AUTHN_GROUP, body, status)
    targets = wanted or list(API_AUDIENCES)
    matched = [a for a in targets if a in who.audiences]
    if not matched:
        status = {
            "authenticated": False,
            "user": {},
            "error": f"token audiences {list(who.audiences)} is invalid for the target "
            f"audiences {targets}",
        }
        return _answer("TokenReview", AUTHN_GROUP, body, status)
    user: dict[str, Any] = {"username": who.user.name, "groups": list(who.user.groups)}
    if who.uid:
        user["uid"] = who.uid
    status = {"authenticated": True, "user": user, "audiences": matched}
    return _answer("TokenReview", AUTHN_GROUP, body, status)


def self_subject_review(body: Any, user: rbac.UserInfo | None) -> dict[str, Any]:
    """Answer a SelfSubjectReview: the requesting user's name and groups."""
    if not isinstance(body, dict):
        raise bad_request("the body of the request must be a SelfSubjectReview object")
    info: dict[str, Any] = {}
    if user is not None:
        info = {"username": user.name, "groups": list(user.groups)}
    return {
        "kind": "SelfSubjectReview",
        "apiVersion": f"{AUTHN_GROUP}/v1",
        "metadata": {"creationTimestamp": None},
        "status": {"userInfo": info},
    }


def _attributes(spec: dict[str, Any], user: rbac.UserInfo, kind: str) -> rbac.Attributes:
    res = spec.get("resourceAttributes")
    nonres = spec.get("nonResourceAttributes")
    causes: list[Cause] = []
    if res is not None and nonres is not None:
        causes.append(
            Cause(
                "FieldValueInvalid",
                "cannot be specified in combination with resourceAttributes",
                "spec.nonResourceAttributes",
            )
        )
    if res is None and nonres is None:
        causes.append(
            Cause(
                "FieldValueInvalid",
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
                "spec.resourceAttributes",
            )
        )
    for name, value in (("resourceAttributes", res), ("nonResourceAttributes", nonres)):
        if value is not None and not isinstance(value, dict):
            causes.append(Cause("FieldValueInvalid", "must be an object", f"spec.{name}"))
    if causes:
        raise invalid(AUTHZ_GROUP, kind, "", causes)
    if isinstance(nonres, dict):
        return rbac.Attributes(
            user, str(nonres.get("verb") or ""), False, path=str(nonres.get("path") or "")
        )
    assert isinstance(res, dict)
    return rbac.Attributes(
        user,
        str(res.get("verb") or ""),
        True,
        str(res.get("group") or ""),
        str(res.get("resource") or ""),
        str(res.get("subresource") or ""),
        str(res.get("name") or ""),
        str(res.get("namespace") or ""),
    )


def _decision(policy: rbac.Policy, attrs: rbac.Attributes) -> dict[str, Any]:
    allowed, reason = rbac.decide(policy, attrs)
    status: dict[str, Any] = {"allowed": allowed}
    if reason:
        status["reason"] = reason
    return status


def subject_access_review(body: Any, policy: rbac.Policy) -> dict[str, Any]:
    """Answer a SubjectAccessReview for `spec.user`/`spec.groups` under `policy`."""
    kind = "SubjectAccessReview"
    spec = _object(body, kind, AUTHZ_GROUP)
    user = spec.get("user") or ""
    if not isinstance(user, str):
        raise invalid(
            AUTHZ_GROUP, kind, "", [Cause("FieldValueInvalid", "must be a string", "spec.user")]
        )
    groups = _strings(spec.get("groups"), "spec.groups", kind, AUTHZ_GROUP)
    if not user and not groups:
        raise invalid(
            AUTHZ_GROUP,
            kind,
            "",
            [fe.invalid("spec.user", "", "at least one of user or group must be specified")],
        )
    attrs = _attributes(spec, rbac.UserInfo(user, tuple(groups)), kind)
    return _answer(kind, AUTHZ_GROUP, body, _decision(policy, attrs))


def self_subject_access_review(
    body: Any, user: rbac.UserInfo | None, policy: rbac.Policy
) -> dict[str, Any]:
    """Answer a SelfSubjectAccessReview for the requesting `user` (None: the server runs
    without authentication, and everything is allowed)."""
    kind = "SelfSubjectAccessReview"
    spec = _object(body, kind, AUTHZ_GROUP)
    if user is None:
        _attributes(spec, rbac.UserInfo(""), kind)  # a malformed spec is still rejected
        status = {"allowed": True, "reason": "authentication is off"}
        return _answer(kind, AUTHZ_GROUP, body, status)
    return _answer(kind, AUTHZ_GROUP, body, _decision(policy, _attributes(spec, user, kind)))


def method_not_allowed() -> ApiError:
    """What kube-apiserver answers for anything but create on a review resource."""
    return ApiError(
        405, "MethodNotAllowed", "the server does not allow this method on the requested resource"
    )
