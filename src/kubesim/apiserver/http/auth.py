"""Authentication and authorization of HTTP requests.

Authentication: the admin bearer token (a member of `system:masters`, allowed everything),
or a token from a ServiceAccount's TokenRequest (`serviceaccounts/<name>/token`), which
authenticates as `system:serviceaccount:<ns>:<name>` until it expires, as long as that
ServiceAccount (the same object, by uid) exists and the token was issued for the API
server's audiences. Every request is then authorized by RBAC (`rbac.py`) against the Roles,
ClusterRoles and bindings in the store; a denial is kube-apiserver's 403 Forbidden Status.
Other components can ask the same questions through TokenReview and SubjectAccessReview
(`reviews.py`).
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from kubesim.apiserver import rbac, reviews
from kubesim.apiserver.core.apicore import ApiCore
from kubesim.apiserver.http.target import Target
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.clock import now_rfc3339
from kubesim.machinery.errors import ApiError

__all__ = ["Authenticator", "IssuedToken", "attributes"]


@dataclass(frozen=True)
class IssuedToken:
    """A ServiceAccount token from a TokenRequest: whose, for which audiences, until when."""

    namespace: str
    name: str
    uid: str  # of the ServiceAccount: a new one of the same name does not inherit its tokens
    audiences: tuple[str, ...]
    expires: float  # epoch seconds
    pod: tuple[str, str] | None = None  # spec.boundObjectRef of kind Pod: (name, uid)


class Authenticator:
    """Who a request is and what it may do: `token` is the admin's (None: no authentication),
    `sa_tokens` the ServiceAccount tokens issued so far (shared with whoever else issues
    them, the runtime of real pods)."""

    def __init__(self, core: ApiCore, token: str | None, sa_tokens: dict[str, IssuedToken]) -> None:
        self.core = core
        self.token = token
        self.sa_tokens = sa_tokens

    def authenticate(self, request: web.Request) -> rbac.UserInfo | None:
        """The requesting user; None when the server runs without authentication."""
        if self.token is None:
            return None
        header = request.headers.get("Authorization", "")
        token = header[7:] if header.startswith("Bearer ") else ""
        who = self.identity(token) if token else None
        if who is None or not set(who.audiences) & set(reviews.API_AUDIENCES):
            raise ApiError(401, "Unauthorized", "Unauthorized")
        return who.user

    def identity(self, token: str) -> reviews.Identity | None:
        """Who `token` authenticates as (None: nobody): the admin, or the ServiceAccount of a
        TokenRequest's token that has not expired and whose ServiceAccount still exists."""
        if self.token is not None and token == self.token:
            return reviews.Identity(rbac.UserInfo("admin", (rbac.MASTERS, rbac.AUTHENTICATED)))
        issued = self.sa_tokens.get(token)
        if issued is None:
            return None
        if time.time() >= issued.expires:
            del self.sa_tokens[token]
            return None
        rt = self.core.registry.get("", "v1", "serviceaccounts")
        assert rt is not None
        account = self.core.try_get(rt, issued.namespace, issued.name)
        if account is None or account["metadata"].get("uid") != issued.uid:
            return None
        return reviews.Identity(
            rbac.service_account_user(issued.namespace, issued.name, issued.pod),
            issued.uid,
            issued.audiences,
        )

    def policy(self) -> rbac.Policy:
        def objects(plural: str) -> list[dict[str, Any]]:
            rt = self.core.registry.get("rbac.authorization.k8s.io", "v1", plural)
            assert rt is not None
            return list(self.core.store.resource(rt.key).objects.values())

        return rbac.Policy.of(
            objects("roles"),
            objects("clusterroles"),
            objects("rolebindings"),
            objects("clusterrolebindings"),
        )

    def authorize(self, user: rbac.UserInfo | None, attrs: rbac.Attributes) -> None:
        if user is None or rbac.MASTERS in user.groups:
            return
        if not rbac.authorize(self.policy(), attrs):
            raise ApiError(
                403,
                "Forbidden",
                rbac.forbidden_message(attrs),
                group=attrs.api_group,
                kind=attrs.resource,
                name=attrs.name,
            )

    def issue_token(self, rt: ResourceType, namespace: str, name: str, body: Any) -> dict[str, Any]:
        """A TokenRequest for a ServiceAccount: the token is remembered until it expires."""
        # 404 for a ServiceAccount that does not exist
        account = self.core.get(rt, namespace, name)
        answer = _token_request(body)
        bound = answer["spec"].get("boundObjectRef") or {}
        pod = None
        if isinstance(bound, dict) and bound.get("kind") == "Pod":
            pod = (str(bound.get("name") or ""), str(bound.get("uid") or ""))
        self.sa_tokens[answer["status"]["token"]] = IssuedToken(
            namespace,
            name,
            str(account["metadata"].get("uid", "")),
            tuple(answer["spec"]["audiences"]),
            time.time() + int(answer["spec"]["expirationSeconds"]),
            pod,
        )
        return answer


def attributes(user: rbac.UserInfo, verb: str, t: Target, field_selector: str) -> rbac.Attributes:
    """The request's RBAC attributes, as kube-apiserver's RequestInfo resolves them."""
    name, namespace = t.name, t.namespace or ""
    if t.rt.group == "" and t.rt.plural == "namespaces" and name:
        namespace = name  # a namespace's own object is inside that namespace
    if not name and verb in ("list", "watch"):
        # A list/watch limited to one name by field selector is a request for that name.
        for term in field_selector.split(","):
            key, sep, value = term.partition("==") if "==" in term else term.partition("=")
            if sep and key.strip() == "metadata.name" and not key.endswith("!"):
                name = value.strip()
    return rbac.Attributes(
        user, verb, True, t.rt.group, t.rt.plural, t.subresource, name, namespace
    )


def _token_request(body: Any) -> dict[str, Any]:
    spec = dict((body or {}).get("spec") or {})
    spec["audiences"] = list(spec.get("audiences") or reviews.API_AUDIENCES)
    spec["expirationSeconds"] = int(spec.get("expirationSeconds") or 3600)
    return {
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"creationTimestamp": None},
        "spec": spec,
        "status": {
            "token": secrets.token_urlsafe(32),
            "expirationTimestamp": now_rfc3339(time.time() + spec["expirationSeconds"]),
        },
    }
