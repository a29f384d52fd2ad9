"""Asking the API server about a caller: TokenReview and SubjectAccessReview, bounded.

Two places of the controller make these reviews: the secure metrics endpoint (`authn.py`:
who is this bearer token, may it GET /metrics) and the JobSet webhook's PVC oracle guard
(`jobset.webhooks.access`: may the requesting user read the claims the webhook would read).
Both need the same pieces, kept here once:

- `User`, the identity a TokenReview answers (or an admission request's `userInfo` names);
- `TTLCache`, the bounded, expiring decision cache every Kubernetes authorizer keeps;
- `Reviewer`, which POSTs one review with a timeout and at most `max_in_flight` outstanding
  (anyone who can reach the endpoint can make the controller send reviews, one per random
  token or user: beyond the bound `Overloaded` is raised at once, without an API call), and
  builds the SubjectAccessReview spec for a user and either resource attributes (a verb on
  a resource in a namespace) or non-resource attributes (a verb on a URL path).

The caller's token goes into the TokenReview body only; nothing here logs a token or keeps
it in clear.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

from jobset.runtime.client import Client, Resource

__all__ = [
    "SUBJECT_ACCESS_REVIEWS",
    "TOKEN_REVIEWS",
    "Overloaded",
    "Reviewer",
    "TTLCache",
    "User",
    "reviewed_user",
]

TOKEN_REVIEWS: Final = Resource(
    "authentication.k8s.io", "v1", "tokenreviews", "TokenReview", namespaced=False
)
SUBJECT_ACCESS_REVIEWS: Final = Resource(
    "authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", namespaced=False
)
MAX_ENTRIES: Final = 1024

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class TTLCache(Generic[K, V]):
    """A bounded map whose entries expire `ttl` seconds after they were put (each entry has
    its own ttl); least recently used entries are evicted beyond `max_entries`."""

    def __init__(
        self, max_entries: int = MAX_ENTRIES, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be at least 1, not {max_entries}")
        self.max_entries = max_entries
        self.clock = clock
        self._entries: OrderedDict[K, tuple[float, V]] = OrderedDict()

    def get(self, key: K) -> V | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires, value = entry
        if self.clock() >= expires:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return value

    def put(self, key: K, value: V, ttl: float) -> None:
        if ttl <= 0:
            return
        self._entries[key] = (self.clock() + ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


@dataclass(frozen=True)
class User:
    """Who a token belongs to, as the TokenReview answered (or `userInfo` said)."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


class Overloaded(Exception):
    """`max_in_flight` reviews are outstanding: refuse instead of queueing another."""


def reviewed_user(review: Any) -> User | None:
    """The user a TokenReview answer authenticated (None: not authenticated)."""
    status = (review or {}).get("status") or {}
    if not status.get("authenticated"):
        return None
    info = status.get("user") or {}
    extra = info.get("extra") or {}
    return User(
        str(info.get("username") or ""),
        str(info.get("uid") or ""),
        tuple(str(g) for g in info.get("groups") or ()),
        tuple(sorted((str(k), tuple(str(x) for x in v or ())) for k, v in extra.items())),
    )


def access_spec(
    user: User,
    *,
    resource: Mapping[str, str] | None = None,
    non_resource: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A SubjectAccessReview spec for `user` and exactly one kind of attributes."""
    if (resource is None) == (non_resource is None):
        raise ValueError("a SubjectAccessReview has resource or non-resource attributes")
    spec: dict[str, Any] = {"user": user.name, "groups": list(user.groups)}
    if resource is not None:
        spec["resourceAttributes"] = dict(resource)
    if non_resource is not None:
        spec["nonResourceAttributes"] = dict(non_resource)
    if user.uid:
        spec["uid"] = user.uid
    if user.extra:
        spec["extra"] = {k: list(v) for k, v in user.extra}
    return spec


def allowed_by(review: Any) -> bool:
    """Whether a SubjectAccessReview answer allows (an explicit deny wins)."""
    status = (review or {}).get("status") or {}
    return bool(status.get("allowed")) and not status.get("denied")


class Reviewer:
    """POSTs reviews through `client` (give it a client with its own budget), each with
    `timeout`, at most `max_in_flight` at once. API failures propagate (`ApiError`,
    `OSError`, `TimeoutError`); callers decide what a failed review means for them."""

    def __init__(self, client: Client, *, timeout: float, max_in_flight: int) -> None:
        self.client = client
        self.timeout = timeout
        self.max_in_flight = max_in_flight
        self.in_flight = 0
        self.sent = 0  # reviews sent (tests and debugging)

    async def post(self, resource: Resource, spec: Mapping[str, Any]) -> Any:
        """POST one review, unless `max_in_flight` are already outstanding (`Overloaded`)."""
        if self.in_flight >= self.max_in_flight:
            raise Overloaded
        self.in_flight += 1
        self.sent += 1
        try:
            return await self.client.request(
                "POST",
                resource.path(),
                body={"apiVersion": resource.api_version, "kind": resource.kind, "spec": spec},
                request_timeout=self.timeout,
            )
        finally:
            self.in_flight -= 1

    async def authenticate(self, token: str) -> User | None:
        """A TokenReview of `token` (not cached here)."""
        return reviewed_user(await self.post(TOKEN_REVIEWS, {"token": token}))

    async def access(
        self,
        user: User,
        *,
        resource: Mapping[str, str] | None = None,
        non_resource: Mapping[str, str] | None = None,
    ) -> bool:
        """A SubjectAccessReview (not cached here): may `user` do what the attributes say."""
        spec = access_spec(user, resource=resource, non_resource=non_resource)
        return allowed_by(await self.post(SUBJECT_ACCESS_REVIEWS, spec))
