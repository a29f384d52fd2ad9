"""Which Jobs hold a planned topology domain: only those this controller made for a JobSet.

A Job's labels and annotations are written by whoever may write Jobs in its namespace, so
the domain label alone proves nothing: a tenant could label Jobs of its own with every
domain and starve every other namespace's planned JobSets, or, with old Jobs, win the
"earliest created" rule that repairs double bookings. A Job holds its domain here only if

- its controller owner reference names a JobSet (API group `jobset.x-k8s.io`, kind
  `JobSet`) that the JobSet cache knows in the Job's own namespace under that UID (or knew:
  a deleted JobSet's Jobs keep their domains until they are gone);
- it carries the JobSet labels the controller writes (`jobset-name` naming that owner);
- it carries the planner's own record, as `apply_assignment` writes it: the domain label
  and annotation agree, the priority and exclusive-topology annotations and the planned
  strategy annotation are present;
- it has not finished.

`DomainHoldings` keeps such Jobs by domain, and by owner and domain: Jobs that fail these
checks never enter it, so no decoy costs anything but its own event. Double bookings are
repaired only between Jobs of one owner (`DomainHoldings.earlier_rival`): nothing a tenant
writes in its own namespace can get another JobSet's Job deleted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from jobset.api import constants as c
from jobset.placement.strategy import DOMAIN_KEY, PLANNED, PRIORITY_ANNOTATION, STRATEGY_KEY
from jobset.resources import index_jobset_owner
from jobset.runtime.cache import controller_of

__all__ = [
    "DomainHoldings",
    "Holding",
    "OwnerKnown",
    "held_domain_key",
    "holding_of",
]

# (namespace, JobSet name, JobSet uid) -> that JobSet is (or was) in the JobSet cache.
OwnerKnown = Callable[[str, str, str], bool]


def held_domain_key(topology_key: str, priority: str, domain: str) -> str:
    """The key under which Jobs holding one domain at one priority are found."""
    return f"{topology_key}\x00{priority}\x00{domain}"


@dataclass(frozen=True)
class Holding:
    """The domain a trusted Job holds (`held_domain_key`) and its owner (`namespace/uid`)."""

    domain_key: str
    owner: str


def _jobset_owner(job: Mapping[str, Any]) -> str | None:
    """`namespace/uid` of the JobSet that controls the Job, if its controller is one."""
    found = index_jobset_owner(job)  # type: ignore[arg-type]  # only reads
    return found[0] if found else None


def _finished(job: Mapping[str, Any]) -> bool:
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            return True
    return False


def holding_of(job: Mapping[str, Any], owner_known: OwnerKnown) -> Holding | None:
    """The domain the Job holds, or None unless it passes every check of the module
    docstring."""
    meta = job.get("metadata") or {}
    labels = meta.get("labels") or {}
    anns = meta.get("annotations") or {}
    domain = labels.get(DOMAIN_KEY)
    topology_key = anns.get(c.EXCLUSIVE_KEY)
    priority = anns.get(PRIORITY_ANNOTATION)
    if not domain or not topology_key or priority is None or _finished(job):
        return None
    if anns.get(DOMAIN_KEY) != domain or anns.get(STRATEGY_KEY) != PLANNED:
        return None
    owner = _jobset_owner(job)
    ref = controller_of(job)
    if owner is None or ref is None:
        return None
    name, uid = str(ref.get("name") or ""), str(ref.get("uid") or "")
    namespace = str(meta.get("namespace") or "")
    if not name or labels.get(c.JOBSET_NAME_KEY) != name:
        return None
    if not owner_known(namespace, name, uid):
        return None
    return Holding(held_domain_key(str(topology_key), str(priority), str(domain)), owner)


class DomainHoldings:
    """Trusted Jobs (by cache key) by the domain they hold, and by owner and domain."""

    def __init__(self) -> None:
        self._of: dict[str, Holding] = {}
        self._by_domain: dict[str, set[str]] = {}
        self._by_owner: dict[tuple[str, str], set[str]] = {}

    def record(self, key: str, holding: Holding | None) -> bool:
        """Record what the Job `key` holds now (None: nothing). True when it held a domain
        before and holds none now (a domain may have freed up)."""
        old = self._of.get(key)
        if old == holding:
            return False
        if old is not None:
            del self._of[key]
            _discard(self._by_domain, old.domain_key, key)
            _discard(self._by_owner, (old.owner, old.domain_key), key)
        if holding is not None:
            self._of[key] = holding
            self._by_domain.setdefault(holding.domain_key, set()).add(key)
            self._by_owner.setdefault((holding.owner, holding.domain_key), set()).add(key)
        return old is not None and holding is None

    def of(self, key: str) -> Holding | None:
        return self._of.get(key)

    def held(self, domain_key: str) -> bool:
        return domain_key in self._by_domain

    def holders(self, domain_key: str) -> set[str]:
        """Keys of the trusted Jobs holding the domain (a copy)."""
        return set(self._by_domain.get(domain_key, ()))

    def same_owner(self, key: str) -> set[str]:
        """Keys of the Jobs of the same owner in the same domain as `key` (itself included)."""
        holding = self._of.get(key)
        if holding is None:
            return set()
        return set(self._by_owner.get((holding.owner, holding.domain_key), ()))

    def doubled(self) -> list[set[str]]:
        """Every group of one owner's Jobs sharing one domain (for diagnostics and tests)."""
        return [set(keys) for keys in self._by_owner.values() if len(keys) > 1]

    def __len__(self) -> int:
        return len(self._of)


def _discard(index: dict[Any, set[str]], value: Any, key: str) -> None:
    keys = index.get(value)
    if keys is not None:
        keys.discard(key)
        if not keys:
            del index[value]
