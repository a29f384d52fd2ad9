"""The review helper both the secure metrics endpoint and the webhook's PVC guard use: the
SubjectAccessReview spec for either kind of attributes, the answer's reading (an explicit
deny wins), the TokenReview answer's user, and the bound on reviews in flight.

The API server is a stand-in here (its recorded bodies are what is checked);
tests/integration/runtime/test_metrics_auth.py runs the same reviews against `jobset sim`."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from jobset.runtime.reviews import (
    Overloaded,
    Reviewer,
    User,
    access_spec,
    allowed_by,
    reviewed_user,
)

BOB = User("bob", uid="u1", groups=("g1", "g2"), extra=(("scopes", ("a", "b")),))


def test_access_spec_for_resource_and_non_resource_attributes() -> None:
    assert access_spec(BOB, non_resource={"path": "/metrics", "verb": "get"}) == {
        "user": "bob",
        "uid": "u1",
        "groups": ["g1", "g2"],
        "extra": {"scopes": ["a", "b"]},
        "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
    }
    spec = access_spec(User("alice"), resource={"verb": "get", "resource": "pods"})
    assert spec == {
        "user": "alice",
        "groups": [],
        "resourceAttributes": {"verb": "get", "resource": "pods"},
    }
    with pytest.raises(ValueError, match="resource or non-resource"):
        access_spec(BOB)
    with pytest.raises(ValueError, match="resource or non-resource"):
        access_spec(BOB, resource={}, non_resource={})


@pytest.mark.parametrize(
    ("status", "allowed"),
    [
        ({"allowed": True}, True),
        ({"allowed": False}, False),
        ({"allowed": True, "denied": True}, False),  # an explicit deny wins
        ({}, False),
        (None, False),
    ],
    ids=["allowed", "not allowed", "an explicit deny wins", "empty status", "no status"],
)
def test_allowed_by(status: dict[str, Any] | None, allowed: bool) -> None:
    assert allowed_by({"status": status}) is allowed


def test_reviewed_user() -> None:
    answer = {
        "status": {
            "authenticated": True,
            "user": {
                "username": "bob",
                "uid": "u1",
                "groups": ["g1", "g2"],
                "extra": {"scopes": ["a", "b"]},
            },
        }
    }
    assert reviewed_user(answer) == BOB
    assert reviewed_user({"status": {"authenticated": False}}) is None
    assert reviewed_user(None) is None


class SlowApi:
    """Answers every review after `release` is set, recording what it was sent."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def request(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        self.calls.append((path, kwargs["body"]))
        await self.release.wait()
        return {"status": {"allowed": True, "authenticated": True, "user": {"username": "x"}}}


async def test_at_most_max_in_flight_reviews_then_overloaded_without_a_call() -> None:
    api = SlowApi()
    reviewer = Reviewer(api, timeout=5, max_in_flight=2)  # type: ignore[arg-type]
    first = asyncio.create_task(reviewer.authenticate("t1"))
    second = asyncio.create_task(reviewer.access(BOB, non_resource={"path": "/m", "verb": "get"}))
    await asyncio.sleep(0)
    assert reviewer.in_flight == 2
    with pytest.raises(Overloaded):
        await reviewer.authenticate("t3")
    assert len(api.calls) == 2
    api.release.set()
    assert await first == User("x")
    assert await second is True
    assert reviewer.in_flight == 0 and reviewer.sent == 2
    (tr_path, tr), (sar_path, sar) = api.calls
    assert tr_path == "/apis/authentication.k8s.io/v1/tokenreviews"
    assert tr == {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                  "spec": {"token": "t1"}}  # fmt: skip
    assert sar_path == "/apis/authorization.k8s.io/v1/subjectaccessreviews"
    assert sar["kind"] == "SubjectAccessReview"
    assert sar["spec"]["nonResourceAttributes"] == {"path": "/m", "verb": "get"}
