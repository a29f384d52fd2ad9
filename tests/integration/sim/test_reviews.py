"""TokenReview, SubjectAccessReview and the self reviews on `jobset sim`, through kubectl and
kubernetes_asyncio: the delegated authentication and authorization a secure metrics endpoint
(or kube-rbac-proxy, or a kubelet) relies on.

- discovery lists them create-only and cluster-scoped; nothing is stored (a list is 405);
- a TokenReview authenticates ServiceAccount tokens from TokenRequest (name, groups, uid of
  the ServiceAccount, audiences) and refuses unknown, expired, wrong-audience tokens and
  tokens of a deleted (or deleted and re-created) ServiceAccount;
- a SubjectAccessReview answers RBAC's decision for a user and groups, for non-resource URLs
  and resources, with RBAC's reason;
- creating either needs RBAC `create` on it, like upstream; bad specs get the API server's
  400 / 422 naming the field;
- `kubectl auth can-i` / `whoami` (SelfSubjectAccessReview / SelfSubjectReview) answer for the
  requesting token.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config

from kubesim.process import SimProcess, start_sim

pytestmark = [pytest.mark.kubectl]

NS = "monitoring"
API_AUDIENCE = "https://kubernetes.default.svc.cluster.local"


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    s = start_sim(tmp_path_factory.mktemp("reviews"), "--sim-level", "none")
    try:
        s.kubectl("create", "namespace", NS)
        for sa in ("prometheus", "stranger", "reviewer"):
            s.kubectl("create", "serviceaccount", sa, "-n", NS)
        yield s
    finally:
        s.stop()


def token(sim: SimProcess, sa: str, *flags: str) -> str:
    """`kubectl create token` (a protobuf TokenRequest)."""
    return sim.kubectl("create", "token", sa, "-n", NS, *flags).stdout.strip()


def create(sim: SimProcess, obj: dict[str, Any], *flags: str) -> dict[str, Any]:
    out = sim.kubectl("create", "-f", "-", "-o", "json", *flags, input=json.dumps(obj))
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def token_review(sim: SimProcess, tok: str, audiences: list[str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"token": tok}
    if audiences is not None:
        spec["audiences"] = audiences
    obj = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}
    return create(sim, obj)["status"]  # type: ignore[no-any-return]


def sar(sim: SimProcess, spec: dict[str, Any], *flags: str) -> dict[str, Any]:
    obj = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
    return create(sim, obj, *flags)["status"]  # type: ignore[no-any-return]


def user(sa: str) -> str:
    return f"system:serviceaccount:{NS}:{sa}"


def groups() -> list[str]:
    return ["system:serviceaccounts", f"system:serviceaccounts:{NS}", "system:authenticated"]


def test_discovery_lists_them_create_only_and_nothing_is_stored(sim: SimProcess) -> None:
    for group, names in (
        ("authentication.k8s.io", {"tokenreviews", "selfsubjectreviews"}),
        ("authorization.k8s.io", {"subjectaccessreviews", "selfsubjectaccessreviews"}),
    ):
        doc = json.loads(sim.kubectl("get", "--raw", f"/apis/{group}/v1").stdout)
        found = {r["name"]: r for r in doc["resources"] if r["name"] in names}
        assert set(found) == names, doc
        for r in found.values():
            assert r["verbs"] == ["create"] and r["namespaced"] is False, r
    listed = sim.kubectl("get", "tokenreviews", check=False)
    assert listed.returncode != 0 and "MethodNotAllowed" in listed.stderr
    listed = sim.kubectl("get", "subjectaccessreviews", check=False)
    assert listed.returncode != 0 and "MethodNotAllowed" in listed.stderr


def test_token_review_authenticates_service_account_tokens(sim: SimProcess) -> None:
    status = token_review(sim, token(sim, "prometheus"))
    uid = json.loads(sim.kubectl("get", "sa", "prometheus", "-n", NS, "-o", "json").stdout)[
        "metadata"
    ]["uid"]
    assert status == {
        "authenticated": True,
        "user": {"username": user("prometheus"), "uid": uid, "groups": groups()},
        "audiences": [API_AUDIENCE],
    }
    bad = token_review(sim, "not-a-token")
    assert bad["authenticated"] is False and bad["error"] == "invalid bearer token"
    # The admin's token is a token like any other.
    admin = yaml.safe_load(sim.kubeconfig.read_text())["users"][0]["user"]["token"]
    assert token_review(sim, admin)["user"]["groups"] == ["system:masters", "system:authenticated"]


def test_token_review_checks_audiences(sim: SimProcess) -> None:
    scoped = token(sim, "prometheus", "--audience=metrics", "--audience=other")
    # Not for the API server: refused for its audiences, and by the API server itself.
    refused = token_review(sim, scoped)
    assert refused["authenticated"] is False and "audiences" in refused["error"]
    assert "Unauthorized" in sim.kubectl("get", "ns", "--token", scoped, check=False).stderr
    ok = token_review(sim, scoped, ["metrics", "elsewhere"])
    assert ok["authenticated"] is True and ok["audiences"] == ["metrics"]
    assert token_review(sim, token(sim, "prometheus"), ["metrics"])["authenticated"] is False


def test_tokens_die_with_their_service_account_and_expire(sim: SimProcess) -> None:
    sim.kubectl("create", "serviceaccount", "shortlived", "-n", NS)
    tok = sim.kubectl("create", "token", "shortlived", "-n", NS).stdout.strip()
    assert token_review(sim, tok)["authenticated"] is True
    sim.kubectl("delete", "serviceaccount", "shortlived", "-n", NS)
    assert token_review(sim, tok)["authenticated"] is False
    # A new ServiceAccount of the same name does not inherit the old one's tokens.
    sim.kubectl("create", "serviceaccount", "shortlived", "-n", NS)
    assert token_review(sim, tok)["authenticated"] is False
    # Expiry (JSON TokenRequest: kubectl would not ask for a 1 s token).
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
               "spec": {"expirationSeconds": 1}}  # fmt: skip
    out = sim.kubectl(
        "create", "--raw", f"/api/v1/namespaces/{NS}/serviceaccounts/shortlived/token",
        "-f", "-", input=json.dumps(request),
    )  # fmt: skip
    brief = json.loads(out.stdout)["status"]["token"]
    deadline = time.monotonic() + 30
    while token_review(sim, brief)["authenticated"]:
        assert time.monotonic() < deadline, "a 1 s token was still valid after 30 s"
        time.sleep(0.2)
    assert "Unauthorized" in sim.kubectl("get", "ns", "--token", brief, check=False).stderr


def test_subject_access_review_answers_rbac(sim: SimProcess) -> None:
    metrics = {"nonResourceAttributes": {"path": "/metrics", "verb": "get"}}
    spec = {"user": user("prometheus"), "groups": groups(), **metrics}
    assert sar(sim, spec) == {"allowed": False}
    sim.kubectl("create", "clusterrole", "test-metrics-reader", "--verb=get",
                "--non-resource-url=/metrics")  # fmt: skip
    sim.kubectl("create", "clusterrolebinding", "test-prometheus-metrics",
                "--clusterrole=test-metrics-reader", f"--serviceaccount={NS}:prometheus")  # fmt: skip
    assert sar(sim, spec) == {
        "allowed": True,
        "reason": 'RBAC: allowed by ClusterRoleBinding "test-prometheus-metrics" of ClusterRole '
        f'"test-metrics-reader" to ServiceAccount "prometheus/{NS}"',
    }
    # Another path, another verb, another user: no.
    assert not sar(sim, {**spec, "nonResourceAttributes": {"path": "/debug", "verb": "get"}})[
        "allowed"
    ]
    assert not sar(sim, {**spec, "nonResourceAttributes": {"path": "/metrics", "verb": "post"}})[
        "allowed"
    ]
    assert not sar(sim, {**spec, "user": user("stranger")})["allowed"]
    # Bootstrap policy for authenticated users; superusers by group.
    health = {"nonResourceAttributes": {"path": "/healthz", "verb": "get"}}
    assert sar(sim, {"user": "someone", "groups": ["system:authenticated"], **health})["allowed"]
    assert not sar(sim, {"user": "someone", **health})["allowed"]
    assert sar(sim, {"groups": ["system:masters"], **metrics})["allowed"]
    # Resource attributes: a RoleBinding counts in its namespace only.
    sim.kubectl("create", "role", "pod-reader", "-n", NS, "--verb=get", "--resource=pods")
    sim.kubectl("create", "rolebinding", "stranger-pods", "-n", NS, "--role=pod-reader",
                f"--serviceaccount={NS}:stranger")  # fmt: skip
    pods = {"verb": "get", "resource": "pods", "namespace": NS, "name": "p"}
    stranger = {"user": user("stranger"), "groups": groups()}
    decision = sar(sim, {**stranger, "resourceAttributes": pods})
    assert decision["allowed"] and f'RoleBinding "stranger-pods/{NS}"' in decision["reason"]
    assert not sar(sim, {**stranger, "resourceAttributes": {**pods, "namespace": "default"}})[
        "allowed"
    ]
    assert not sar(sim, {**stranger, "resourceAttributes": {**pods, "verb": "delete"}})["allowed"]


def test_creating_reviews_needs_rbac(sim: SimProcess) -> None:
    reviewer = token(sim, "reviewer")
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
              "spec": {"token": reviewer}}  # fmt: skip
    denied = sim.kubectl("create", "-f", "-", "--token", reviewer, input=json.dumps(review),
                         check=False)  # fmt: skip
    assert denied.returncode != 0
    assert (
        f'tokenreviews.authentication.k8s.io is forbidden: User "{user("reviewer")}" cannot '
        'create resource "tokenreviews" in API group "authentication.k8s.io" at the cluster scope'
    ) in denied.stderr
    spec = {"user": "x", "nonResourceAttributes": {"path": "/metrics", "verb": "get"}}
    denied = sim.kubectl(
        "create", "-f", "-", "--token", reviewer, check=False,
        input=json.dumps({"apiVersion": "authorization.k8s.io/v1",
                          "kind": "SubjectAccessReview", "spec": spec}),
    )  # fmt: skip
    assert "subjectaccessreviews.authorization.k8s.io is forbidden" in denied.stderr
    # upstream's metrics_auth_role
    sim.kubectl("create", "clusterrole", "test-metrics-auth", "--verb=create",
                "--resource=tokenreviews.authentication.k8s.io",
                "--resource=subjectaccessreviews.authorization.k8s.io")  # fmt: skip
    sim.kubectl("create", "clusterrolebinding", "test-reviewer", "--clusterrole=test-metrics-auth",
                f"--serviceaccount={NS}:reviewer")  # fmt: skip
    assert create(sim, review, "--token", reviewer)["status"]["user"]["username"] == user(
        "reviewer"
    )
    assert sar(sim, spec, "--token", reviewer) == {"allowed": False}


def test_bad_specs_are_refused_naming_the_field(sim: SimProcess) -> None:
    def refused(obj: dict[str, Any]) -> str:
        out = sim.kubectl("create", "-f", "-", input=json.dumps(obj), check=False)
        assert out.returncode != 0
        return out.stderr

    tr = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview"}
    assert "token is required for TokenReview in authentication" in refused({**tr, "spec": {}})
    sar_ = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview"}
    metrics = {"nonResourceAttributes": {"path": "/metrics", "verb": "get"}}
    assert 'spec.user: Invalid value: "": at least one of user or group must be specified' in (
        refused({**sar_, "spec": metrics})
    )
    both = {"user": "u", **metrics, "resourceAttributes": {"verb": "get", "resource": "pods"}}
    assert "spec.nonResourceAttributes: cannot be specified in combination with " in refused(
        {**sar_, "spec": both}
    )
    assert (
        "spec.resourceAttributes: exactly one of nonResourceAttributes or resourceAttributes"
        in (refused({**sar_, "spec": {"user": "u"}}))
    )
    assert "spec.groups: must be a list of strings" in refused(
        {**sar_, "spec": {"user": "u", "groups": "g", **metrics}}
    )


def test_kubectl_auth_can_i_and_whoami_answer_for_the_token(sim: SimProcess) -> None:
    sim.kubectl("create", "serviceaccount", "canary", "-n", NS)
    tok = token(sim, "canary")
    as_canary = ("--token", tok)
    can = sim.kubectl("auth", "can-i", "get", "/metrics", *as_canary, check=False)
    assert can.returncode == 1 and can.stdout.strip() == "no"
    assert sim.kubectl("auth", "can-i", "get", "/healthz", *as_canary).stdout.strip() == "yes"
    sim.kubectl("create", "clusterrolebinding", "test-canary-metrics",
                "--clusterrole=test-metrics-reader", f"--serviceaccount={NS}:canary")  # fmt: skip
    assert sim.kubectl("auth", "can-i", "get", "/metrics", *as_canary).stdout.strip() == "yes"
    listing = sim.kubectl("auth", "can-i", "list", "pods", "-n", NS, *as_canary, check=False)
    assert listing.stdout.strip() == "no"
    whoami = json.loads(sim.kubectl("auth", "whoami", "-o", "json", *as_canary).stdout)
    assert whoami["status"]["userInfo"]["username"] == user("canary")


@pytest.fixture
async def api(sim: SimProcess) -> AsyncIterator[k8s.ApiClient]:
    cfg = k8s.Configuration()
    await k8s_config.load_kube_config(config_file=str(sim.kubeconfig), client_configuration=cfg)
    async with k8s.ApiClient(cfg) as client:
        yield client


async def test_kubernetes_asyncio_typed_clients(sim: SimProcess, api: k8s.ApiClient) -> None:
    tok = token(sim, "prometheus")
    review = await k8s.AuthenticationV1Api(api).create_token_review(
        k8s.V1TokenReview(spec=k8s.V1TokenReviewSpec(token=tok))
    )
    assert review.status.authenticated is True
    assert review.status.user.username == user("prometheus")
    assert review.status.user.groups == groups()
    assert review.status.audiences == [API_AUDIENCE]

    async def allowed(username: str, user_groups: list[str]) -> bool:
        access = await k8s.AuthorizationV1Api(api).create_subject_access_review(
            k8s.V1SubjectAccessReview(
                spec=k8s.V1SubjectAccessReviewSpec(
                    user=username,
                    groups=user_groups,
                    non_resource_attributes=k8s.V1NonResourceAttributes(
                        path="/debug/pprof/", verb="get"
                    ),
                )
            )
        )
        return bool(access.status.allowed)

    assert not await allowed(review.status.user.username, review.status.user.groups)
    assert await allowed("root", ["system:masters"])
    self_review = await k8s.AuthorizationV1Api(api).create_self_subject_access_review(
        k8s.V1SelfSubjectAccessReview(
            spec=k8s.V1SelfSubjectAccessReviewSpec(
                resource_attributes=k8s.V1ResourceAttributes(verb="delete", resource="nodes")
            )
        )
    )
    assert self_review.status.allowed is True  # the admin is in system:masters


def test_review_requests_are_counted(sim: SimProcess) -> None:
    counts = json.loads(sim.kubectl("get", "--raw", "/debug/requests").stdout)["requests"]
    by = {(r["verb"], r["resource"]): r["count"] for r in counts}
    assert by[("create", "tokenreviews")] >= 1 and by[("create", "subjectaccessreviews")] >= 1
