"""`DelegatingAuth` (the secure metrics endpoint's TokenReview + SubjectAccessReview) against
a real `jobset sim`, with a fake clock for its caches.

- the HTTP answers: no/malformed token 401 without any API call, unknown token 401, a
  ServiceAccount without RBAC for `/metrics` 403, with it 200;
- cached as upstream caches: token reviews 60 s (rejections too), allowed decisions 5 min,
  denied ones 30 s - counted in the requests the API server served;
- a review that fails (the controller's own RBAC lacks the review APIs) is 401 / 500 and is
  not cached: once the rule is there, the next request goes through.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from jobset.runtime.authn import DelegatingAuth
from jobset.runtime.client import NAMESPACES, ApiError, Client, Resource
from kubesim.process import SimProcess
from tests.clock import FakeClock

NS = "monitoring"
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
CLUSTER_ROLES = Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False)
BINDINGS = Resource(
    "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False
)


async def ensure(client: Client, res: Resource, obj: dict[str, Any]) -> None:
    try:
        await client.create(res, obj)
    except ApiError as err:
        if not err.already_exists:
            raise


async def account(client: Client, name: str) -> str:
    """A ServiceAccount in NS and a token for it."""
    await ensure(client, NAMESPACES, {"metadata": {"name": NS}})
    await ensure(client, SERVICE_ACCOUNTS, {"metadata": {"name": name, "namespace": NS}})
    answer = await client.request(
        "POST",
        SERVICE_ACCOUNTS.path(NS, name, "token"),
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
    )
    return str(answer["status"]["token"])


async def grant(client: Client, name: str, rules: list[dict[str, Any]], sa: str) -> None:
    await ensure(client, CLUSTER_ROLES, {"metadata": {"name": name}, "rules": rules})
    await ensure(
        client,
        BINDINGS,
        {
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": NS}],
        },
    )  # fmt: skip


async def reviews(client: Client) -> tuple[int, int]:
    """TokenReviews and SubjectAccessReviews the API server has answered so far."""
    counts = (await client.request("GET", "/debug/requests"))["requests"]
    by = {(r["verb"], r["resource"]): r["count"] for r in counts}
    return by.get(("create", "tokenreviews"), 0), by.get(("create", "subjectaccessreviews"), 0)


READER = [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
REVIEWS = [
    {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
    {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"],
     "verbs": ["create"]},
]  # fmt: skip


@pytest.fixture
async def admin(sim_none: SimProcess) -> AsyncIterator[Client]:
    async with await Client.connect(str(sim_none.kubeconfig), qps=0, burst=0) as c:
        yield c


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_answers_and_caches_like_upstream(admin: Client) -> None:
    clock = FakeClock(10_000.0)
    auth = DelegatingAuth(admin, clock=clock)
    base = await reviews(admin)

    async def calls() -> tuple[int, int]:
        tr, sar = await reviews(admin)
        return tr - base[0], sar - base[1]

    for header in ({}, {"Authorization": "Basic dTpw"}, {"Authorization": "Bearer "}):
        assert (await auth.check(header, "GET", "/metrics")).status == 401
    assert await calls() == (0, 0)  # nothing worth asking the API server about

    bad = await auth.check(bearer("not-a-token"), "GET", "/metrics")
    assert (bad.status, bad.message) == (401, "Unauthorized")
    assert await calls() == (1, 0)
    await auth.check(bearer("not-a-token"), "GET", "/metrics")
    assert await calls() == (1, 0)  # the rejection is cached too

    token = await account(admin, "scraper")
    denied = await auth.check(bearer(token), "GET", "/metrics")
    assert denied.status == 403
    assert denied.message == f"Authorization denied for user system:serviceaccount:{NS}:scraper"
    assert await calls() == (2, 1)

    await grant(admin, "test-scraper-metrics", READER, "scraper")
    clock.now += 29
    assert (await auth.check(bearer(token), "GET", "/metrics")).status == 403  # cached denial
    assert await calls() == (2, 1)
    clock.now += 2  # the denial expired (30 s); the token review has not (60 s)
    ok = await auth.check(bearer(token), "GET", "/metrics")
    assert ok.status == 200 and ok.user is not None
    assert ok.user.name == f"system:serviceaccount:{NS}:scraper"
    assert "system:serviceaccounts" in ok.user.groups
    assert await calls() == (2, 2)
    for _ in range(20):  # a scrape every 15 s for 5 minutes costs one more token review a minute
        clock.now += 14
        assert (await auth.check(bearer(token), "GET", "/metrics")).status == 200
    assert await calls() == (2 + 4, 2)  # 280 s: 4 token reviews, the allowed decision still cached
    # Another path or verb is another question.
    assert (await auth.check(bearer(token), "GET", "/debug/pprof/")).status == 403
    assert (await auth.check(bearer(token), "POST", "/metrics")).status == 403
    assert await calls() == (6, 4)
    clock.now += 61
    assert (await auth.check(bearer("not-a-token"), "GET", "/metrics")).status == 401
    assert await calls() == (7, 4)  # the cached rejection expired after 60 s


async def test_failed_reviews_are_errors_and_not_cached(
    sim_none: SimProcess, admin: Client, tmp_path: Path
) -> None:
    # The controller's own identity, with no rights on the review APIs yet.
    controller_token = await account(admin, "controller")
    scraper_token = await account(admin, "scraper2")
    await grant(admin, "test-scraper2-metrics", READER, "scraper2")
    config = yaml.safe_load(sim_none.kubeconfig.read_text())
    config["users"][0]["user"] = {"token": controller_token}
    kubeconfig = tmp_path / "controller.kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    async with await Client.connect(str(kubeconfig), qps=0, burst=0) as client:
        auth = DelegatingAuth(client)
        failed = await auth.check(bearer(scraper_token), "GET", "/metrics")
        assert (failed.status, failed.message) == (401, "Authentication failed")
        await grant(admin, "test-controller-tokenreviews", REVIEWS[:1], "controller")
        failed = await auth.check(bearer(scraper_token), "GET", "/metrics")
        assert failed.status == 500
        assert (
            failed.message == f"Authorization for user system:serviceaccount:{NS}:scraper2 failed"
        )
        await grant(admin, "test-controller-sars", REVIEWS[1:], "controller")
        assert (await auth.check(bearer(scraper_token), "GET", "/metrics")).status == 200
