"""RBAC authorization as kube-apiserver's RBAC authorizer evaluates it, as pure functions.

A request's attributes (`Attributes`: user, verb, API group, resource, subresource, name,
namespace - or a non-resource path) are allowed when some rule bound to the user allows
them:

- ClusterRoleBindings grant their ClusterRole's rules everywhere (every namespace, the
  cluster scope, non-resource URLs);
- RoleBindings grant their Role's (same namespace) or ClusterRole's rules in their own
  namespace only, resource rules only;
- a subject matches by `User` name, `Group` (one of the user's groups) or `ServiceAccount`
  (the user `system:serviceaccount:<namespace>:<name>`);
- a rule matches when its verbs hold the verb (or `*`), its apiGroups the group (or `*`),
  its resources `resource`, `resource/subresource`, `*` or `*/subresource` (as upstream's
  `ResourceMatches`; `pods/*` is not a wildcard there either), and its resourceNames are
  empty or hold the name; non-resource rules match `nonResourceURLs` exactly, `*`, or by a
  prefix ending in `*`.

Members of `system:masters` are allowed everything (upstream's superuser short-circuit).
The bootstrap policy every cluster has - discovery, `/version`, self reviews for
authenticated users - is built in (`BOOTSTRAP`), not stored as objects.

Not implemented: ClusterRole aggregation (`aggregationRule`: the aggregated role's own
rules are used as stored), the escalation checks on writing Roles and bindings, and
impersonation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "BOOTSTRAP",
    "MASTERS",
    "Attributes",
    "Policy",
    "UserInfo",
    "authorize",
    "decide",
    "forbidden_message",
    "rule_allows",
    "service_account_user",
]

MASTERS: Final = "system:masters"
AUTHENTICATED: Final = "system:authenticated"

Object = Mapping[str, Any]


@dataclass(frozen=True)
class UserInfo:
    name: str
    groups: tuple[str, ...] = ()
    # userInfo.extra, as (key, values) pairs: a token bound to a pod names it here.
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


def service_account_user(namespace: str, name: str, pod: tuple[str, str] | None = None) -> UserInfo:
    """The identity a ServiceAccount token authenticates as; a token bound to a pod (name,
    uid) carries them in `extra`, as kube-apiserver's service account authenticator does."""
    extra = (
        (
            ("authentication.kubernetes.io/pod-name", (pod[0],)),
            ("authentication.kubernetes.io/pod-uid", (pod[1],)),
        )
        if pod is not None
        else ()
    )
    return UserInfo(
        f"system:serviceaccount:{namespace}:{name}",
        ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", AUTHENTICATED),
        extra,
    )


@dataclass(frozen=True)
class Attributes:
    user: UserInfo
    verb: str
    resource_request: bool = True
    api_group: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    namespace: str = ""
    path: str = ""  # non-resource requests


@dataclass
class Policy:
    """The RBAC objects of a cluster."""

    roles: dict[tuple[str, str], Object] = field(default_factory=dict)  # (ns, name)
    cluster_roles: dict[str, Object] = field(default_factory=dict)
    role_bindings: list[Object] = field(default_factory=list)
    cluster_role_bindings: list[Object] = field(default_factory=list)

    @classmethod
    def of(
        cls,
        roles: Iterable[Object] = (),
        cluster_roles: Iterable[Object] = (),
        role_bindings: Iterable[Object] = (),
        cluster_role_bindings: Iterable[Object] = (),
    ) -> Policy:
        return cls(
            {(r["metadata"].get("namespace", ""), r["metadata"]["name"]): r for r in roles},
            {r["metadata"]["name"]: r for r in cluster_roles},
            list(role_bindings),
            list(cluster_role_bindings),
        )


# What every cluster grants (upstream's bootstrap policy, the parts a client meets).
BOOTSTRAP: Final[tuple[Object, ...]] = (
    {  # system:discovery + system:public-info-viewer, bound to system:authenticated
        "nonResourceURLs": [
            "/api",
            "/api/*",
            "/apis",
            "/apis/*",
            "/openapi",
            "/openapi/*",
            "/version",
            "/version/",
            "/healthz",
            "/livez",
            "/readyz",
        ],
        "verbs": ["get"],
    },
    {  # system:basic-user
        "apiGroups": ["authorization.k8s.io"],
        "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
        "verbs": ["create"],
    },
    {
        "apiGroups": ["authentication.k8s.io"],
        "resources": ["selfsubjectreviews"],
        "verbs": ["create"],
    },
)


def _has(values: Iterable[str] | None, value: str, wildcard: str = "*") -> bool:
    vals = list(values or ())
    return wildcard in vals or value in vals


def rule_allows(rule: Object, a: Attributes) -> bool:
    if not _has(rule.get("verbs"), a.verb):
        return False
    if not a.resource_request:
        for url in rule.get("nonResourceURLs") or ():
            if url == "*" or url == a.path:
                return True
            if url.endswith("*") and a.path.startswith(url[:-1]):
                return True
        return False
    if not _has(rule.get("apiGroups"), a.api_group):
        return False
    combined = f"{a.resource}/{a.subresource}" if a.subresource else a.resource
    resources = list(rule.get("resources") or ())
    if not any(
        r == "*" or r == combined or (a.subresource and r == f"*/{a.subresource}")
        for r in resources
    ):
        return False
    names = rule.get("resourceNames") or ()
    return not names or a.name in names


def _subject_matches(subject: Object, user: UserInfo, binding_ns: str) -> bool:
    kind = subject.get("kind")
    name = subject.get("name", "")
    if kind == "User":
        return bool(user.name == name)
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        ns = subject.get("namespace") or binding_ns
        return bool(user.name == f"system:serviceaccount:{ns}:{name}")
    return False


def _rules(policy: Policy, ref: Object, binding_ns: str) -> list[Object]:
    kind, name = ref.get("kind"), ref.get("name", "")
    role: Object | None = None
    if kind == "ClusterRole":
        role = policy.cluster_roles.get(name)
    elif kind == "Role" and binding_ns:
        role = policy.roles.get((binding_ns, name))
    return list((role or {}).get("rules") or ())


def authorize(policy: Policy, a: Attributes) -> bool:
    """True when RBAC (or the superuser group, or the bootstrap policy) allows `a`."""
    return decide(policy, a)[0]


def _describe_subject(subject: Object, binding_ns: str) -> str:
    kind, name = subject.get("kind", ""), subject.get("name", "")
    if kind == "ServiceAccount":
        return f'{kind} "{name}/{subject.get("namespace") or binding_ns}"'
    return f'{kind} "{name}"'


def decide(policy: Policy, a: Attributes) -> tuple[bool, str]:
    """Whether `a` is allowed, and why: the `reason` of a SubjectAccessReview, worded as
    upstream's RBAC authorizer words it (`RBAC: allowed by ClusterRoleBinding "b" of
    ClusterRole "r" to ServiceAccount "name/ns"`). A request no rule allows gets no reason,
    as RBAC has "no opinion" then."""
    if MASTERS in a.user.groups:
        return True, f'allowed by the "{MASTERS}" group'
    if AUTHENTICATED in a.user.groups and any(rule_allows(r, a) for r in BOOTSTRAP):
        return True, "RBAC: allowed by the bootstrap policy for authenticated users"
    for crb in policy.cluster_role_bindings:
        ref = crb.get("roleRef") or {}
        for subject in crb.get("subjects") or ():
            if not _subject_matches(subject, a.user, ""):
                continue
            if any(rule_allows(r, a) for r in _rules(policy, ref, "")):
                return True, (
                    f'RBAC: allowed by ClusterRoleBinding "{crb["metadata"]["name"]}" of '
                    f'{ref.get("kind")} "{ref.get("name")}" to {_describe_subject(subject, "")}'
                )
    if not a.resource_request or not a.namespace:
        return False, ""
    for rb in policy.role_bindings:
        ns = rb["metadata"].get("namespace", "")
        if ns != a.namespace:
            continue
        ref = rb.get("roleRef") or {}
        for subject in rb.get("subjects") or ():
            if not _subject_matches(subject, a.user, ns):
                continue
            if any(rule_allows(r, a) for r in _rules(policy, ref, ns)):
                return True, (
                    f'RBAC: allowed by RoleBinding "{rb["metadata"]["name"]}/{ns}" of '
                    f'{ref.get("kind")} "{ref.get("name")}" to {_describe_subject(subject, ns)}'
                )
    return False, ""


def forbidden_message(a: Attributes) -> str:
    """kube-apiserver's message for a denied request, word for word."""
    user = f'User "{a.user.name}"'
    if not a.resource_request:
        return f'forbidden: {user} cannot {a.verb} path "{a.path}"'
    what = f"{a.resource}.{a.api_group}" if a.api_group else a.resource
    if a.name:
        what += f' "{a.name}"'
    combined = f"{a.resource}/{a.subresource}" if a.subresource else a.resource
    scope = f'in the namespace "{a.namespace}"' if a.namespace else "at the cluster scope"
    return (
        f'{what} is forbidden: {user} cannot {a.verb} resource "{combined}" '
        f'in API group "{a.api_group}" {scope}'
    )
