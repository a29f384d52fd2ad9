"""Delegated authentication and authorization of HTTP callers, for the secure metrics endpoint.

What controller-runtime's `filters.WithAuthenticationAndAuthorization` (and kube-rbac-proxy
before it) does for a Go controller's `/metrics`, asking the API server rather than
keeping any credentials of its own:

1. the caller's bearer token is reviewed with an `authentication.k8s.io/v1` TokenReview:
   no token, a malformed `Authorization` header, or a token the API server does not accept
   → 401;
2. the user it names is checked with an `authorization.k8s.io/v1` SubjectAccessReview for
   the request's non-resource URL (its path) and verb (the lower-cased HTTP method, `get`
   for a scrape), which RBAC grants through `nonResourceURLs` (the `metrics-reader`
   ClusterRole) → 403 when not allowed;
3. only then is the handler run.

A review that fails (API server unreachable, the controller's own RBAC missing `create` on
tokenreviews / subjectaccessreviews) answers 401 for authentication and 500 for
authorization, as upstream does, and is not cached.

Decisions are cached, as upstream's delegating authenticator and authorizer cache them, so
that Prometheus scraping every 15 s does not cost two API calls per scrape: token reviews
for `AUTHN_TTL` (1 minute, controller-runtime's `CacheTTL`), allowed decisions for
`ALLOW_TTL` (5 minutes) and denied ones for `DENY_TTL` (30 s). A revoked token or binding
therefore keeps working for at most that long - the same trade-off every Kubernetes
component makes. The caches hold at most `max_entries` entries each (least recently used
evicted first), so a flood of random tokens cannot grow memory; tokens are kept as SHA-256
digests, never in clear.

Reviews cost API requests, and anyone who can reach the metrics port can make the
controller send them (one per random token). So the reviews go through their own client
budget (the manager gives this class a client with its own token bucket), and at most
`max_in_flight` reviews are outstanding at once: a request that would need another one is
answered 429 at once, without an API call, until some complete.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from jobset.runtime.client import ApiError, Client
from jobset.runtime.logging import get_logger
from jobset.runtime.reviews import (
    SUBJECT_ACCESS_REVIEWS,
    TOKEN_REVIEWS,
    Overloaded,
    Reviewer,
    TTLCache,
    User,
)

__all__ = [
    "ALLOW_TTL",
    "AUTHN_TTL",
    "DENY_TTL",
    "SUBJECT_ACCESS_REVIEWS",
    "TOKEN_REVIEWS",
    "AuthDecision",
    "DelegatingAuth",
    "TTLCache",
    "User",
    "bearer_token",
]

AUTHN_TTL: Final = 60.0
ALLOW_TTL: Final = 300.0
DENY_TTL: Final = 30.0
REVIEW_TIMEOUT: Final = 10.0  # controller-runtime's TokenAccessReviewTimeout
MAX_ENTRIES: Final = 1024
# Reviews outstanding at once; beyond it callers get a fast 429 (a flood of random tokens
# must not queue thousands of API calls).
MAX_IN_FLIGHT: Final = 16


def bearer_token(header: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, parsed as kube-apiserver's
    bearer-token authenticator parses it (None: no usable token).

    The scheme is case-insensitive; the header is trimmed; scheme and token are separated by
    exactly one space, so an empty token (`Bearer `, or two spaces) is no token; anything
    after a second space is ignored.
    """
    value = (header or "").strip()
    if not value:
        return None
    parts = value.split(" ", 2)
    if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
        return None
    return parts[1]


@dataclass(frozen=True)
class AuthDecision:
    """The outcome for one request: `status` 200 means go ahead; otherwise answer it."""

    status: int
    message: str = ""
    user: User | None = None

    @property
    def ok(self) -> bool:
        return self.status == 200


OVERLOADED: Final = AuthDecision(429, "Too many authentication requests in flight, retry later")


class DelegatingAuth:
    """TokenReview + SubjectAccessReview through `client`, with the caches described above."""

    def __init__(
        self,
        client: Client,
        *,
        authn_ttl: float = AUTHN_TTL,
        allow_ttl: float = ALLOW_TTL,
        deny_ttl: float = DENY_TTL,
        max_entries: int = MAX_ENTRIES,
        timeout: float = REVIEW_TIMEOUT,
        clock: Callable[[], float] = time.monotonic,
        max_in_flight: int = MAX_IN_FLIGHT,
    ) -> None:
        self.reviewer = Reviewer(client, timeout=timeout, max_in_flight=max_in_flight)
        self.authn_ttl = authn_ttl
        self.allow_ttl = allow_ttl
        self.deny_ttl = deny_ttl
        # sha256(token) -> (the user,) or (None,) for a token the API server rejected.
        self._tokens: TTLCache[bytes, tuple[User | None]] = TTLCache(max_entries, clock)
        self._decisions: TTLCache[tuple[User, str, str], bool] = TTLCache(max_entries, clock)
        self.log = get_logger("metrics-auth")

    @property
    def in_flight(self) -> int:
        return self.reviewer.in_flight

    async def authenticate(self, token: str) -> User | None:
        """The user `token` authenticates as (None: rejected). API failures raise."""
        key = hashlib.sha256(token.encode()).digest()
        cached = self._tokens.get(key)
        if cached is not None:
            return cached[0]
        user = await self.reviewer.authenticate(token)
        self._tokens.put(key, (user,), self.authn_ttl)
        return user

    async def authorize(self, user: User, verb: str, path: str) -> bool:
        """Whether RBAC lets `user` `verb` the non-resource URL `path`. API failures raise."""
        key = (user, verb, path)
        cached = self._decisions.get(key)
        if cached is not None:
            return cached
        allowed = await self.reviewer.access(user, non_resource={"path": path, "verb": verb})
        self._decisions.put(key, allowed, self.allow_ttl if allowed else self.deny_ttl)
        return allowed

    async def check(self, headers: Mapping[str, str], method: str, path: str) -> AuthDecision:
        """Authenticate and authorize one HTTP request (see the module docstring)."""
        token = bearer_token(headers.get("Authorization"))
        if token is None:
            return AuthDecision(401, "Unauthorized")
        try:
            user = await self.authenticate(token)
        except Overloaded:
            return OVERLOADED
        except (ApiError, OSError, TimeoutError) as exc:
            self.log.error("authentication failed", error=repr(exc))
            return AuthDecision(401, "Authentication failed")
        if user is None:
            return AuthDecision(401, "Unauthorized")
        verb = method.lower()
        try:
            allowed = await self.authorize(user, verb, path)
        except Overloaded:
            return OVERLOADED
        except (ApiError, OSError, TimeoutError) as exc:
            self.log.error("authorization failed", user=user.name, error=repr(exc))
            return AuthDecision(500, f"Authorization for user {user.name} failed", user)
        if not allowed:
            self.log.debug("authorization denied", user=user.name, verb=verb, path=path)
            return AuthDecision(403, f"Authorization denied for user {user.name}", user)
        return AuthDecision(200, "", user)
