"""core/v1 Event: the columns `kubectl get events` prints (events.k8s.io/v1 Events are
the same objects, `registry/events/event.py`)."""

from __future__ import annotations

from typing import Final

from kubesim.apiserver.registry.columns import Column, Obj, age_of
from kubesim.apiserver.registry.resource import Resource
from kubesim.apiserver.registry.resourcetype import ResourceType

TYPE = ResourceType("", "v1", "Event", "events", True, short_names=("ev",))


def _event_object(o: Obj) -> str:
    ref = o.get("involvedObject") or o.get("regarding") or {}
    return f"{str(ref.get('kind', '')).lower()}/{ref.get('name', '')}"


def _event_last_seen(o: Obj) -> str:
    stamp = o.get("lastTimestamp") or o.get("eventTime") or o["metadata"].get("creationTimestamp")
    if isinstance(stamp, str) and "." in stamp:
        stamp = stamp.split(".")[0] + "Z"
    return age_of(stamp)


COLUMNS: Final[tuple[Column, ...]] = (
    ("Last Seen", "string", 0, _event_last_seen),
    ("Type", "string", 0, lambda o: o.get("type", "")),
    ("Reason", "string", 0, lambda o: o.get("reason", "")),
    ("Object", "string", 0, _event_object),
    ("Message", "string", 0, lambda o: o.get("message") or o.get("note") or ""),
)


RESOURCE = Resource(TYPE, columns=COLUMNS)
