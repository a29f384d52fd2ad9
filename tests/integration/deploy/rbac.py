"""Kubernetes RBAC, evaluated: which requests a set of rendered objects allows a subject.

`grants(objects, namespace, service_account)` flattens every Role/ClusterRole bound to the
service account into `Grant` atoms (scope, group, resource, verb, names), the way the
RBAC authorizer reads them; `allowing(grants, request)` finds the atom that authorizes one
recorded request. Comparing rendered installs (Helm against kustomize) compares these sets.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tests.integration.deploy.apirecorder import RequestAttributes

__all__ = ["Grant", "allowing", "grants", "rules_of"]

CLUSTER = ""  # scope of a grant that applies in every namespace and to cluster-scoped objects


@dataclass(frozen=True, order=True)
class Grant:
    scope: str  # CLUSTER, or the namespace a RoleBinding gives it in
    group: str
    resource: str  # "jobs", "jobs/status"
    verb: str
    names: tuple[str, ...] = ()  # resourceNames; empty: any name

    def __str__(self) -> str:
        names = f" names={list(self.names)}" if self.names else ""
        where = f" in {self.scope}" if self.scope else " cluster-wide"
        return f"{self.verb} {self.group or 'core'}/{self.resource}{names}{where}"


def rules_of(role: Mapping[str, Any], scope: str) -> set[Grant]:
    out: set[Grant] = set()
    for rule in role.get("rules") or []:
        names = tuple(sorted(rule.get("resourceNames") or []))
        for group in rule.get("apiGroups") or []:
            for resource in rule.get("resources") or []:
                for verb in rule.get("verbs") or []:
                    out.add(Grant(scope, group, resource, verb, names))
    return out


def _binds(binding: Mapping[str, Any], namespace: str, account: str) -> bool:
    for subject in binding.get("subjects") or []:
        if (
            subject.get("kind") == "ServiceAccount"
            and subject.get("name") == account
            and subject.get("namespace", binding["metadata"].get("namespace")) == namespace
        ):
            return True
    return False


def grants(objects: Iterable[Mapping[str, Any]], namespace: str, account: str) -> set[Grant]:
    """Every grant the bindings among `objects` give ServiceAccount `namespace/account`."""
    objs = list(objects)
    roles = {
        (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o
        for o in objs
        if o["kind"] in ("Role", "ClusterRole")
    }
    out: set[Grant] = set()
    for binding in objs:
        if binding["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        if not _binds(binding, namespace, account):
            continue
        ref = binding["roleRef"]
        bound_ns = binding["metadata"].get("namespace", "")
        role_ns = bound_ns if ref["kind"] == "Role" else ""
        role = roles.get((ref["kind"], role_ns, ref["name"]))
        if role is None:
            raise AssertionError(
                f"{binding['kind']} {binding['metadata']['name']} binds a missing "
                f"{ref['kind']} {ref['name']}"
            )
        scope = CLUSTER if binding["kind"] == "ClusterRoleBinding" else bound_ns
        out |= rules_of(role, scope)
    return out


def _matches(grant: Grant, group: str, resource: str, verb: str, namespace: str, name: str) -> bool:
    if grant.scope != CLUSTER and grant.scope != namespace:
        return False
    if grant.group not in (group, "*") or grant.verb not in (verb, "*"):
        return False
    if grant.resource not in (resource, "*"):
        return False
    return not grant.names or name in grant.names


def allowing(all_grants: Iterable[Grant], request: RequestAttributes) -> list[Grant]:
    """The grants that authorize `request` (empty: the authorizer would answer 403)."""
    return [
        g
        for g in all_grants
        if _matches(
            g, request.group, request.resource_key, request.verb, request.namespace, request.name
        )
    ]


def allowing_attrs(
    all_grants: Iterable[Grant],
    group: str,
    resource: str,
    verb: str,
    namespace: str,
    name: str = "",
) -> list[Grant]:
    return [g for g in all_grants if _matches(g, group, resource, verb, namespace, name)]
