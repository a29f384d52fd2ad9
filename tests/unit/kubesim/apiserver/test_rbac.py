"""RBAC evaluation (src/kubesim/apiserver/rbac.py) against the rules kube-apiserver applies."""

from __future__ import annotations

from typing import Any

from kubesim.apiserver import rbac
from kubesim.apiserver.rbac import Attributes, Policy, UserInfo, authorize, forbidden_message

SA = rbac.service_account_user("jobset-system", "ctrl")
OTHER = rbac.service_account_user("jobset-system", "other")
ALICE = UserInfo("alice", ("devs", rbac.AUTHENTICATED))


def _meta(name: str, ns: str = "") -> dict[str, Any]:
    return {"name": name, "namespace": ns} if ns else {"name": name}


def role(name: str, *rules: dict[str, Any], ns: str = "") -> dict[str, Any]:
    return {"metadata": _meta(name, ns), "rules": list(rules)}


def binding(
    name: str, ref_kind: str, ref: str, *subjects: dict[str, Any], ns: str = ""
) -> dict[str, Any]:
    return {
        "metadata": _meta(name, ns),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": ref_kind, "name": ref},
        "subjects": list(subjects),
    }


def sa(name: str = "ctrl", ns: str = "jobset-system") -> dict[str, Any]:
    return {"kind": "ServiceAccount", "name": name, "namespace": ns}


def res(
    user: UserInfo, verb: str, group: str, resource: str, ns: str = "", **kw: str
) -> Attributes:
    return Attributes(user, verb, True, group, resource, kw.get("sub", ""), kw.get("name", ""), ns)


def cluster_policy(*rules: dict[str, Any], subject: dict[str, Any] | None = None) -> Policy:
    return Policy.of(
        cluster_roles=[role("r", *rules)],
        cluster_role_bindings=[binding("b", "ClusterRole", "r", subject or sa())],
    )


def test_service_account_identity() -> None:
    assert SA.name == "system:serviceaccount:jobset-system:ctrl"
    assert SA.groups == (
        "system:serviceaccounts",
        "system:serviceaccounts:jobset-system",
        "system:authenticated",
    )


def test_verbs_groups_and_wildcards() -> None:
    p = cluster_policy({"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create", "get"]})
    assert authorize(p, res(SA, "create", "batch", "jobs", "team-a"))
    assert authorize(p, res(SA, "get", "batch", "jobs"))
    assert not authorize(p, res(SA, "delete", "batch", "jobs", "team-a"))
    assert not authorize(p, res(SA, "create", "", "jobs", "team-a"))  # other group
    assert not authorize(p, res(SA, "create", "batch", "cronjobs", "team-a"))
    assert not authorize(p, res(OTHER, "create", "batch", "jobs", "team-a"))  # not bound
    star = cluster_policy({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]})
    assert authorize(star, res(SA, "deletecollection", "apps", "deployments", "x"))
    assert authorize(star, res(SA, "patch", "", "pods", "x", sub="status"))


def test_subresources() -> None:
    p = cluster_policy({"apiGroups": [""], "resources": ["pods"], "verbs": ["patch"]})
    assert authorize(p, res(SA, "patch", "", "pods", "ns"))
    assert not authorize(p, res(SA, "patch", "", "pods", "ns", sub="status"))  # not implied
    p = cluster_policy({"apiGroups": [""], "resources": ["pods/status"], "verbs": ["patch"]})
    assert authorize(p, res(SA, "patch", "", "pods", "ns", sub="status", name="p"))
    assert not authorize(p, res(SA, "patch", "", "pods", "ns", name="p"))
    p = cluster_policy({"apiGroups": ["*"], "resources": ["*/status"], "verbs": ["update"]})
    assert authorize(p, res(SA, "update", "batch", "jobs", "ns", sub="status"))
    assert not authorize(p, res(SA, "update", "batch", "jobs", "ns", sub="scale"))
    # "pods/*" is no wildcard in upstream's ResourceMatches either.
    p = cluster_policy({"apiGroups": [""], "resources": ["pods/*"], "verbs": ["get"]})
    assert not authorize(p, res(SA, "get", "", "pods", "ns", sub="log"))


def test_resource_names() -> None:
    p = cluster_policy(
        {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"], "verbs": ["*"]}
    )
    assert authorize(p, res(SA, "get", "", "secrets", "ns", name="a"))
    assert not authorize(p, res(SA, "get", "", "secrets", "ns", name="b"))
    assert not authorize(p, res(SA, "list", "", "secrets", "ns"))  # no name: not allowed
    assert not authorize(p, res(SA, "create", "", "secrets", "ns"))


def test_non_resource_urls() -> None:
    p = cluster_policy({"nonResourceURLs": ["/metrics", "/debug/*"], "verbs": ["get"]})
    nr = lambda path, verb="get": Attributes(SA, verb, False, path=path)  # noqa: E731
    assert authorize(p, nr("/metrics"))
    assert authorize(p, nr("/debug/pprof/heap"))
    assert not authorize(p, nr("/metrics/extra"))
    assert not authorize(p, nr("/metrics", "post"))
    assert not authorize(p, nr("/logs"))
    # Discovery is granted to every authenticated user by the bootstrap policy.
    assert authorize(Policy(), nr("/apis"))
    assert authorize(Policy(), nr("/api/v1"))
    assert not authorize(Policy(), Attributes(UserInfo("anon"), "get", False, path="/apis"))
    # A RoleBinding never grants non-resource URLs.
    p = Policy.of(
        cluster_roles=[role("m", {"nonResourceURLs": ["*"], "verbs": ["*"]})],
        role_bindings=[binding("b", "ClusterRole", "m", sa(), ns="jobset-system")],
    )
    assert not authorize(p, nr("/metrics"))


def test_role_bindings_are_namespaced() -> None:
    lease = {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get"]}
    p = Policy.of(
        roles=[role("leader", lease, ns="jobset-system")],
        cluster_roles=[role("view-jobs", {"apiGroups": ["batch"], "resources": ["jobs"],
                                          "verbs": ["list"]})],
        role_bindings=[
            binding("b1", "Role", "leader", sa(), ns="jobset-system"),
            binding("b2", "ClusterRole", "view-jobs", sa(), ns="team-a"),
            # A Role is looked up in the binding's own namespace only.
            binding("b3", "Role", "leader", sa(), ns="team-b"),
        ],
    )  # fmt: skip
    assert authorize(p, res(SA, "get", "coordination.k8s.io", "leases", "jobset-system"))
    assert not authorize(p, res(SA, "get", "coordination.k8s.io", "leases", "team-b"))
    assert not authorize(p, res(SA, "get", "coordination.k8s.io", "leases"))  # all namespaces
    assert authorize(p, res(SA, "list", "batch", "jobs", "team-a"))
    assert not authorize(p, res(SA, "list", "batch", "jobs", "team-c"))
    assert not authorize(p, res(SA, "list", "batch", "jobs"))  # cluster-wide list


def test_subjects_users_groups_and_masters() -> None:
    rule = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}
    by_group = cluster_policy(rule, subject={"kind": "Group", "name": "devs"})
    assert authorize(by_group, res(ALICE, "get", "", "pods", "x"))
    by_sa_group = cluster_policy(
        rule, subject={"kind": "Group", "name": "system:serviceaccounts:jobset-system"}
    )
    assert authorize(by_sa_group, res(OTHER, "get", "", "pods", "x"))
    assert not authorize(by_sa_group, res(ALICE, "get", "", "pods", "x"))
    by_user = cluster_policy(rule, subject={"kind": "User", "name": "alice"})
    assert authorize(by_user, res(ALICE, "get", "", "pods", "x"))
    assert not authorize(by_user, res(SA, "get", "", "pods", "x"))
    # A ServiceAccount subject of a RoleBinding defaults to the binding's namespace.
    p = Policy.of(
        cluster_roles=[role("r", rule)],
        role_bindings=[binding("b", "ClusterRole", "r", {"kind": "ServiceAccount",
                                                           "name": "ctrl"}, ns="jobset-system")],
    )  # fmt: skip
    assert authorize(p, res(SA, "get", "", "pods", "jobset-system"))
    admin = UserInfo("admin", (rbac.MASTERS,))
    assert authorize(Policy(), res(admin, "delete", "", "nodes", name="n"))
    # A binding to a role that does not exist grants nothing.
    dangling = Policy.of(cluster_role_bindings=[binding("b", "ClusterRole", "gone", sa())])
    assert not authorize(dangling, res(SA, "get", "", "pods", "x"))


def test_forbidden_message_is_kube_apiservers() -> None:
    assert forbidden_message(res(SA, "create", "batch", "jobs", "team-a")) == (
        'jobs.batch is forbidden: User "system:serviceaccount:jobset-system:ctrl" cannot '
        'create resource "jobs" in API group "batch" in the namespace "team-a"'
    )
    assert forbidden_message(res(SA, "patch", "", "pods", "a", sub="status", name="p")) == (
        'pods "p" is forbidden: User "system:serviceaccount:jobset-system:ctrl" cannot '
        'patch resource "pods/status" in API group "" in the namespace "a"'
    )
    assert forbidden_message(res(SA, "list", "", "nodes")) == (
        'nodes is forbidden: User "system:serviceaccount:jobset-system:ctrl" cannot '
        'list resource "nodes" in API group "" at the cluster scope'
    )
    assert forbidden_message(Attributes(SA, "get", False, path="/metrics")) == (
        'forbidden: User "system:serviceaccount:jobset-system:ctrl" cannot get path "/metrics"'
    )
