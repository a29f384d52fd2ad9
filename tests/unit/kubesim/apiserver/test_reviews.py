"""The review APIs' pure logic: RBAC's reasons and TokenReview audiences."""

from __future__ import annotations

import pytest

from kubesim.apiserver import rbac, reviews
from kubesim.machinery.errors import ApiError

SA = rbac.service_account_user("monitoring", "prometheus")
READER = {"metadata": {"name": "reader"}, "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]}  # fmt: skip
POLICY = rbac.Policy.of(
    cluster_roles=[READER],
    cluster_role_bindings=[
        {
            "metadata": {"name": "prom-metrics"},
            "roleRef": {"kind": "ClusterRole", "name": "reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "prometheus", "namespace": "monitoring"}],
        }
    ],
)  # fmt: skip


def test_decide_says_which_binding_allowed() -> None:
    allowed, reason = rbac.decide(POLICY, rbac.Attributes(SA, "get", False, path="/metrics"))
    assert allowed
    assert reason == ('RBAC: allowed by ClusterRoleBinding "prom-metrics" of ClusterRole '
                      '"reader" to ServiceAccount "prometheus/monitoring"')  # fmt: skip
    assert rbac.decide(POLICY, rbac.Attributes(SA, "get", False, path="/debug")) == (False, "")


def test_token_review_audiences() -> None:
    who = reviews.Identity(SA, "uid-1", ("a", "b"))

    def lookup(token: str) -> reviews.Identity | None:
        return who if token == "t" else None

    def review(spec: dict[str, object]) -> dict[str, object]:
        return reviews.token_review({"kind": "TokenReview", "spec": spec}, lookup)["status"]  # type: ignore[no-any-return]

    assert review({"token": "t", "audiences": ["b", "c"]})["audiences"] == ["b"]
    assert review({"token": "t"})["authenticated"] is False  # not for the API server
    assert review({"token": "x", "audiences": ["a"]})["error"] == "invalid bearer token"
    with pytest.raises(ApiError) as err:
        review({"token": ""})
    assert err.value.code == 400
    with pytest.raises(ApiError) as err:
        reviews.token_review({"kind": "Pod", "spec": {"token": "t"}}, lookup)
    assert err.value.code == 400 and "must be of type TokenReview" in err.value.message
