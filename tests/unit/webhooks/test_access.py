"""AccessReviewer: one SubjectAccessReview per user, namespace and question, cached briefly;
no review for requests naming no user; a review that fails is Unreviewable, not a denial."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from jobset.runtime.client import ApiError
from jobset.runtime.reviews import User
from jobset.webhooks.access import AccessReviewer, Unreviewable
from jobset.webhooks.review import ReviewError, decode_review
from tests.clock import FakeClock

ALICE = User("alice", groups=("system:authenticated",))


class FakeClient:
    def __init__(self, allowed: bool = True, fail: bool = False) -> None:
        self.allowed = allowed
        self.fail = fail
        self.bodies: list[dict[str, Any]] = []

    async def request(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        assert (method, path) == ("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews")
        self.bodies.append(kwargs["body"])
        if self.fail:
            raise ApiError(403, "Forbidden", "no")
        return {"status": {"allowed": self.allowed}}


async def test_decisions_are_cached_per_user_and_namespace() -> None:
    clock = FakeClock()
    client = FakeClient()
    access = AccessReviewer(client, allow_ttl=10, clock=clock)  # type: ignore[arg-type]
    for _ in range(3):
        assert await access.allowed(ALICE, "get", "", "persistentvolumeclaims", "a")
    assert len(client.bodies) == 1
    assert client.bodies[0]["spec"] == {
        "user": "alice",
        "groups": ["system:authenticated"],
        "resourceAttributes": {
            "namespace": "a",
            "verb": "get",
            "group": "",
            "resource": "persistentvolumeclaims",
        },
    }
    await access.allowed(ALICE, "get", "", "persistentvolumeclaims", "b")
    assert len(client.bodies) == 2
    clock.now += 11
    await access.allowed(ALICE, "get", "", "persistentvolumeclaims", "a")
    assert len(client.bodies) == 3


async def test_no_user_is_never_allowed_and_costs_nothing() -> None:
    client = FakeClient()
    access = AccessReviewer(client)  # type: ignore[arg-type]
    assert not await access.allowed(None, "get", "", "persistentvolumeclaims", "a")
    assert client.bodies == []


async def test_a_failed_review_is_unreviewable_and_not_cached() -> None:
    client = FakeClient(fail=True)
    access = AccessReviewer(client)  # type: ignore[arg-type]
    for _ in range(2):
        with pytest.raises(Unreviewable):
            await access.allowed(ALICE, "get", "", "persistentvolumeclaims", "a")
    assert len(client.bodies) == 2


def test_user_info_is_decoded() -> None:
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u",
            "operation": "CREATE",
            "userInfo": {
                "username": "alice",
                "uid": "1",
                "groups": ["g"],
                "extra": {"k": ["v"]},
            },
        },
    }
    req = decode_review(orjson.dumps(review), "application/json")
    assert req.user == User("alice", "1", ("g",), (("k", ("v",)),))
    review["request"]["userInfo"] = {"username": "x", "groups": "g"}  # type: ignore[index]
    with pytest.raises(ReviewError, match=r"userInfo\.groups"):
        decode_review(orjson.dumps(review), "application/json")
