"""Which exclusive-placement strategy an object (JobSet, Job, Pod) asks for.

Three strategies place each child Job of a JobSet alone in one topology domain (the set of
nodes sharing a value of the node label named by `alpha.jobset.sigs.k8s.io/exclusive-topology`):

- `affinity` (upstream's default): pod affinity / anti-affinity injected by the pod webhook,
  followers wait for their leader (see `affinity.py`);
- `node-selector` (upstream, `alpha.jobset.sigs.k8s.io/node-selector` present): the user
  labels and taints one domain per Job beforehand;
- `planned` (this project's own, `placement.jobset.x-k8s.io/strategy: planned`): the
  controller picks the domain when it creates the Job and writes it as a nodeSelector into
  the Job's pod template (see `planned.py`).

The planned strategy's keys live under `placement.jobset.x-k8s.io`, not under upstream's
`alpha.jobset.sigs.k8s.io`, so they can never collide with a future upstream key; a JobSet
carrying them runs unchanged on the upstream controller, which ignores the annotation and
falls back to the affinity strategy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

from jobset.api import constants as c

__all__ = [
    "DOMAIN_KEY",
    "PLANNED",
    "PRIORITY_ANNOTATION",
    "STRATEGY_KEY",
    "Strategy",
    "annotations_of",
    "strategy_of",
    "topology_key_of",
]

# Annotation on a JobSet or ReplicatedJob template (next to exclusive-topology) selecting
# the controller-planned strategy; copied onto the Job and its pod template.
STRATEGY_KEY: Final = "placement.jobset.x-k8s.io/strategy"
PLANNED: Final = "planned"
# Label and annotation on a planned Job: the topology domain (node label value) it holds.
DOMAIN_KEY: Final = "placement.jobset.x-k8s.io/domain"
# Annotation on a planned Job: the pod priority it was planned at (exclusivity is per
# priority, as with the affinity strategy's anti-affinity on `jobset.sigs.k8s.io/priority`).
PRIORITY_ANNOTATION: Final = "placement.jobset.x-k8s.io/priority"

Strategy = Literal["affinity", "node-selector", "planned"]


def annotations_of(obj: Mapping[str, Any] | None) -> Mapping[str, str]:
    anns = ((obj or {}).get("metadata") or {}).get("annotations")
    return anns if isinstance(anns, dict) else {}


def topology_key_of(obj: Mapping[str, Any] | None) -> str | None:
    """The node label key the object's Job must own a domain of, if exclusive placement."""
    key = annotations_of(obj).get(c.EXCLUSIVE_KEY)
    return key if isinstance(key, str) and key else None


def strategy_of(obj: Mapping[str, Any] | None) -> Strategy | None:
    """The strategy an object carrying placement annotations asks for (None: no exclusive
    placement). The node-selector flag wins over `planned`, as it is upstream's own."""
    anns = annotations_of(obj)
    if not anns.get(c.EXCLUSIVE_KEY):
        return None
    if c.NODE_SELECTOR_STRATEGY_KEY in anns:
        return "node-selector"
    if anns.get(STRATEGY_KEY) == PLANNED:
        return "planned"
    return "affinity"
