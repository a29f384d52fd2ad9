"""The aggregator's availability controller: each APIService's `Available` condition.

A local APIService (no `spec.service`) is available. One backed by a Service is checked as
kube-apiserver checks it, in the same order and words: the Service exists, a ClusterIP
Service has the port, its Endpoints exist and have an address with that port's name. The
last check, a request to the aggregated server's discovery path, is not made: the simulated
API server does not proxy aggregated APIs, so such an APIService stays unavailable with the
aggregator's reason for a failed discovery check, and says why.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any, Final

from kubesim.apiserver.core.store import DELETED, ResourceKey, WatchEvent
from kubesim.base.controller import Controller
from kubesim.clock import now_rfc3339

APISERVICES: Final[ResourceKey] = ("apiregistration.k8s.io", "apiservices")
SERVICES: Final[ResourceKey] = ("", "services")
ENDPOINTS: Final[ResourceKey] = ("", "endpoints")


def _no(reason: str, message: str) -> tuple[str, str, str]:
    return "False", reason, message


def availability(
    spec: Mapping[str, Any],
    service: Mapping[str, Any] | None,
    endpoints: Mapping[str, Any] | None,
) -> tuple[str, str, str]:
    """(status, reason, message) of the `Available` condition; pure."""
    ref = spec.get("service")
    if not isinstance(ref, Mapping):
        return "True", "Local", "Local APIServices are always available"
    name, ns, port = ref.get("name"), ref.get("namespace"), ref.get("port", 443)
    where = f'service/{name} in "{ns}"'
    if service is None:
        return _no("ServiceNotFound", f"{where} is not present")
    svc_spec = service.get("spec") or {}
    if (svc_spec.get("type") or "ClusterIP") == "ClusterIP":
        match = [p for p in svc_spec.get("ports") or [] if p.get("port") == port]
        if not match:
            return _no("ServicePortError", f"{where} is not listening on port {port}")
        port_name = str(match[0].get("name") or "")
        if endpoints is None:
            return _no("EndpointsNotFound", f'cannot find endpoints for service/{name} in "{ns}"')
        if not any(
            subset.get("addresses")
            and any(str(p.get("name") or "") == port_name for p in subset.get("ports") or [])
            for subset in endpoints.get("subsets") or []
        ):
            return _no(
                "MissingEndpoints",
                f'endpoints for {where} have no addresses with port name "{port_name}"',
            )
    path = f"/apis/{spec.get('group')}/{spec.get('version')}"
    return _no(
        "FailedDiscoveryCheck",
        f"the simulated API server does not proxy aggregated APIs: {path} of {where} "
        "was not checked",
    )


class APIServiceAvailability(Controller[str]):
    """Keys are APIService names."""

    name = "apiservice-availability"
    workers = 1

    def initial_keys(self) -> Iterable[str]:
        return [str(o["metadata"]["name"]) for o in self._all()]

    def _all(self) -> list[dict[str, Any]]:
        return list(self.core.store.resource(APISERVICES).objects.values())

    def watched(self) -> Collection[ResourceKey]:
        return (APISERVICES, SERVICES, ENDPOINTS)

    def keys_for(self, rkey: ResourceKey, ev: WatchEvent) -> Iterable[str]:
        if rkey == APISERVICES:
            return [] if ev.type == DELETED else [str(ev.obj["metadata"]["name"])]
        if rkey not in (SERVICES, ENDPOINTS):
            return []
        meta = ev.obj["metadata"]
        at = (meta.get("namespace"), meta.get("name"))
        return [
            str(o["metadata"]["name"])
            for o in self._all()
            if isinstance(ref := (o.get("spec") or {}).get("service"), dict)
            and (ref.get("namespace"), ref.get("name")) == at
        ]

    async def sync(self, key: str) -> float | None:
        obj = self.core.store.get(APISERVICES, ("", key))
        if obj is None:
            return None
        ref = (obj.get("spec") or {}).get("service")
        at = (
            (str(ref.get("namespace") or ""), str(ref.get("name") or ""))
            if isinstance(ref, dict)
            else None
        )
        service = self.core.store.get(SERVICES, at) if at else None
        endpoints = self.core.store.get(ENDPOINTS, at) if at else None
        status, reason, message = availability(obj.get("spec") or {}, service, endpoints)
        conditions = list((obj.get("status") or {}).get("conditions") or [])
        current = next((c for c in conditions if c.get("type") == "Available"), None)
        if current is not None and (
            current.get("status"),
            current.get("reason"),
            current.get("message"),
        ) == (status, reason, message):
            return None
        changed = current is None or current.get("status") != status
        # As SetAPIServiceCondition: the transition time moves only when the status does.
        kept = None if changed or current is None else current.get("lastTransitionTime")
        since = str(kept or now_rfc3339())
        cond = {
            "type": "Available",
            "status": status,
            "lastTransitionTime": since,
            "reason": reason,
            "message": message,
        }
        others = [c for c in conditions if c.get("type") != "Available"]
        await self.core.update(
            self.rt(*APISERVICES),
            "",
            key,
            {**obj, "status": {**(obj.get("status") or {}), "conditions": [*others, cond]}},
            self.req(),
            subresource="status",
        )
        return None
