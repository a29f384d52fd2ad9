"""Whether the user behind an admission request may read what the webhook would read for it.

The validating JobSet webhook compares the PVCs a JobSet's `volumeClaimPolicies` would
create with the claims that already exist, reading them with the controller's cluster-wide
permission. Its answer ("spec does not match existing PVC ...", "retentionPolicy must be
retain when PVC exists") tells the requester whether a claim exists and whether its spec
matches a guess - an oracle for anyone who may create JobSets in a namespace but not read
its claims (docs/reliability.md, "Threat model"). So the webhook first asks the API server,
with a `SubjectAccessReview` for the request's `userInfo`, whether that user may `get`
`persistentvolumeclaims` in the namespace; only then does it look. Otherwise validation runs
as if no claim existed, so the answer is the same whether or not one does, and costs the
same time (no lookup at all).

Decisions are cached briefly (`ALLOW_TTL`/`DENY_TTL`, bounded entries), as the API server's
own webhook authorizer caches them: a burst of dry-runs by one user costs one review, and a
revoked binding is honoured within seconds. Reviews go through the webhook's own client
budget (`manager.client_for("webhooks")`), at most `MAX_IN_FLIGHT` at once; beyond that, or
when the review fails, `Unreviewable` is raised and the webhook reports that the claims
could not be checked - an answer that also says nothing about the claims.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

from jobset.runtime.client import ApiError, Client
from jobset.runtime.reviews import Overloaded, Reviewer, TTLCache, User

__all__ = ["ALLOW_TTL", "DENY_TTL", "MAX_IN_FLIGHT", "AccessReviewer", "Unreviewable"]

ALLOW_TTL: Final = 10.0
DENY_TTL: Final = 10.0
MAX_ENTRIES: Final = 1024
MAX_IN_FLIGHT: Final = 16
REVIEW_TIMEOUT: Final = 5.0  # well inside the webhook's own 8 s


class Unreviewable(Exception):
    """The access review could not be made (API error, timeout, too many in flight)."""


_Key = tuple[User, str, str, str, str]


class AccessReviewer:
    """`SubjectAccessReview`s for resource attributes, with a small TTL cache (the review
    itself is `jobset.runtime.reviews.Reviewer`, shared with the secure metrics endpoint)."""

    def __init__(
        self,
        client: Client,
        *,
        allow_ttl: float = ALLOW_TTL,
        deny_ttl: float = DENY_TTL,
        max_entries: int = MAX_ENTRIES,
        max_in_flight: int = MAX_IN_FLIGHT,
        timeout: float = REVIEW_TIMEOUT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.reviewer = Reviewer(client, timeout=timeout, max_in_flight=max_in_flight)
        self.allow_ttl = allow_ttl
        self.deny_ttl = deny_ttl
        self._decisions: TTLCache[_Key, bool] = TTLCache(max_entries, clock)

    @property
    def reviews(self) -> int:
        """Reviews sent (tests and debugging)."""
        return self.reviewer.sent

    @property
    def in_flight(self) -> int:
        return self.reviewer.in_flight

    async def allowed(
        self, user: User | None, verb: str, group: str, resource: str, namespace: str
    ) -> bool:
        """Whether RBAC (or whatever authorizes the API server) lets `user` `verb` `resource`
        in `namespace`. No user (an anonymous or unreadable request): False, without a call."""
        if user is None or not user.name:
            return False
        key = (user, verb, group, resource, namespace)
        cached = self._decisions.get(key)
        if cached is not None:
            return cached
        attributes = {"namespace": namespace, "verb": verb, "group": group, "resource": resource}
        try:
            allowed = await self.reviewer.access(user, resource=attributes)
        except Overloaded:
            raise Unreviewable("too many access reviews in flight") from None
        except (ApiError, OSError, TimeoutError) as exc:
            raise Unreviewable(type(exc).__name__) from exc
        self._decisions.put(key, allowed, self.allow_ttl if allowed else self.deny_ttl)
        return allowed
