"""The pod cache InPlaceRestart reads: JobSet pods by namespace/JobSet name.

The informer is the manager's shared one of pods labelled `jobset.sigs.k8s.io/jobset-name`
(exclusive placement reads the same one), so a cluster full of unrelated pods costs nothing;
the index holds every labelled pod, as upstream's field index does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from jobset.api import constants as c
from jobset.placement.caches import JOBSET_POD_SELECTOR, decode_pod_event, pod_record
from jobset.runtime.cache import Object
from jobset.runtime.client import PODS
from jobset.runtime.informer import Informer
from jobset.runtime.manager import Manager

__all__ = ["IN_PLACE_POD_INDEX", "in_place_pod_informer", "in_place_pod_key", "index_by_jobset"]

IN_PLACE_POD_INDEX: Final = "in-place-restart-jobset"


def in_place_pod_key(js: Mapping[str, Any]) -> str:
    meta = js.get("metadata") or {}
    return f"{meta.get('namespace') or ''}/{meta.get('name')}"


def index_by_jobset(pod: Object) -> Sequence[str]:
    meta = pod.get("metadata") or {}
    name = (meta.get("labels") or {}).get(c.JOBSET_NAME_KEY)
    return (f"{meta.get('namespace') or ''}/{name}",) if name else ()


def in_place_pod_informer(manager: Manager) -> Informer:
    return manager.informer(
        PODS,
        label_selector=JOBSET_POD_SELECTOR,
        indexers={IN_PLACE_POD_INDEX: index_by_jobset},
        transform=pod_record,
        watch_decode=decode_pod_event,
    )
