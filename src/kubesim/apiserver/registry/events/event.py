"""`events.k8s.io/v1` Events as a view of the core/v1 Events, as kube-apiserver serves them.

Both APIs are the same stored objects in Kubernetes (etcd keeps core/v1; the events group is
converted on the way in and out), so an Event a client writes through either is listed by
`kubectl get events`, shown by `kubectl describe` and watched through both. The simulated API
server does the same: the events.k8s.io type shares the core type's store
(`ResourceType.storage`), and these two functions convert at the HTTP boundary
(`http/`). The field mapping is kube-apiserver's (`pkg/apis/events/v1` conversion):

| core/v1 | events.k8s.io/v1 |
|---|---|
| involvedObject | regarding |
| message | note |
| source | deprecatedSource |
| firstTimestamp / lastTimestamp / count | deprecatedFirstTimestamp / deprecatedLastTimestamp / deprecatedCount |
| reportingComponent | reportingController |

`metadata`, `eventTime`, `series`, `reportingInstance`, `action`, `reason`, `related` and
`type` are the same in both. Fields absent (or empty) on one side are absent on the other.
"""

from __future__ import annotations

from typing import Any, Final

from kubesim.apiserver.registry.core.event import COLUMNS
from kubesim.apiserver.registry.resource import Resource
from kubesim.apiserver.registry.resourcetype import ResourceType

__all__ = ["CORE_TO_V1", "RESOURCE", "to_core", "to_events_v1"]

TYPE = ResourceType(
    "events.k8s.io",
    "v1",
    "Event",
    "events",
    True,
    short_names=("ev",),
    storage=("", "v1", "events"),
)
RESOURCE = Resource(TYPE, columns=COLUMNS)

# core/v1 field -> events.k8s.io/v1 field; the fields with the same name in both are listed
# too, so anything else (unknown fields) is dropped in either direction, as a typed decode does.
CORE_TO_V1: Final = {
    "involvedObject": "regarding",
    "message": "note",
    "source": "deprecatedSource",
    "firstTimestamp": "deprecatedFirstTimestamp",
    "lastTimestamp": "deprecatedLastTimestamp",
    "count": "deprecatedCount",
    "reportingComponent": "reportingController",
    "reportingInstance": "reportingInstance",
    "eventTime": "eventTime",
    "series": "series",
    "action": "action",
    "reason": "reason",
    "related": "related",
    "type": "type",
}
_V1_TO_CORE: Final = {v: k for k, v in CORE_TO_V1.items()}


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == {} or value == 0


def _convert(obj: dict[str, Any], mapping: dict[str, str], api_version: str) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": "Event", "apiVersion": api_version}
    if "metadata" in obj:
        out["metadata"] = obj["metadata"]
    for src, dst in mapping.items():
        value = obj.get(src)
        if not _empty(value):
            out[dst] = value
    return out


def to_events_v1(core: dict[str, Any]) -> dict[str, Any]:
    """A stored core/v1 Event as events.k8s.io/v1 returns it."""
    return _convert(core, CORE_TO_V1, "events.k8s.io/v1")


def to_core(event: Any) -> Any:
    """An events.k8s.io/v1 Event (a request body) as the core/v1 object to store; anything
    that is not an object is returned as is, for the API core to refuse."""
    if not isinstance(event, dict):
        return event
    return _convert(event, _V1_TO_CORE, "v1")
