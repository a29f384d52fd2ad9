"""core/v1 Service: a cluster IP allocated on create, port and policy defaults, and the
cluster IP fixed once set."""

from __future__ import annotations

import ipaddress
import itertools
from typing import Any

from kubesim.apiserver.registry.columns import Obj, age, name
from kubesim.apiserver.registry.resource import Resource, always
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.apiserver.registry.strategy import Strategy, immutable
from kubesim.machinery.errors import Cause

TYPE = ResourceType(
    "",
    "v1",
    "Service",
    "services",
    True,
    short_names=("svc",),
    subresources=frozenset(("status",)),
    categories=("all",),
)


class ServiceStrategy(Strategy):
    _ips = itertools.count(10)

    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        spec = dict(obj.get("spec") or {})
        spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        if spec.get("clusterIP") in (None, ""):
            n = next(self._ips)
            ip = str(ipaddress.IPv4Address("10.96.0.0") + n)
            spec["clusterIP"] = ip
            spec["clusterIPs"] = [ip]
        elif spec.get("clusterIP") == "None":
            spec["clusterIPs"] = ["None"]
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        spec.setdefault("internalTrafficPolicy", "Cluster")
        ports = []
        for p in spec.get("ports") or []:
            p = {"protocol": "TCP", **p}
            p.setdefault("targetPort", p.get("port"))
            ports.append(p)
        if ports:
            spec["ports"] = ports
        obj["spec"] = spec
        obj["status"] = {"loadBalancer": {}}
        return obj

    def prepare_for_update(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any], subresource: str
    ) -> dict[str, Any]:
        spec = dict(obj.get("spec") or {})
        old_spec = old.get("spec") or {}
        for key in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
            if key not in spec and key in old_spec:
                spec[key] = old_spec[key]
        spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        spec.setdefault("internalTrafficPolicy", "Cluster")
        spec["ports"] = [
            {"protocol": "TCP", "targetPort": p.get("port"), **p} for p in spec.get("ports") or []
        ] or spec.get("ports", [])
        if not spec["ports"]:
            spec.pop("ports")
        obj["spec"] = spec
        return obj

    def validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[Cause]:
        if old is None:
            return []
        return immutable(
            "spec.clusterIPs[0]",
            (obj.get("spec") or {}).get("clusterIP"),
            (old.get("spec") or {}).get("clusterIP"),
            "may not change once set",
        )


def _svc_ports(o: Obj) -> str:
    ports = (o.get("spec") or {}).get("ports") or []
    return ",".join(f"{p.get('port')}/{p.get('protocol', 'TCP')}" for p in ports) or "<none>"


RESOURCE = Resource(
    TYPE,
    always(ServiceStrategy()),
    (
        ("Name", "string", 0, name),
        ("Type", "string", 0, lambda o: (o.get("spec") or {}).get("type", "ClusterIP")),
        ("Cluster-IP", "string", 0, lambda o: (o.get("spec") or {}).get("clusterIP", "")),
        ("External-IP", "string", 0, lambda o: "<none>"),
        ("Port(s)", "string", 0, _svc_ports),
        ("Age", "date", 0, age),
    ),
)
