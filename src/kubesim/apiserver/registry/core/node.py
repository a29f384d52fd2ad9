"""core/v1 Node: status defaults (capacity, a Ready condition, node info) and its columns."""

from __future__ import annotations

from typing import Any

from kubesim.apiserver.registry.columns import Obj, age, name
from kubesim.apiserver.registry.resource import Resource, always
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.apiserver.registry.strategy import Strategy

TYPE = ResourceType(
    "", "v1", "Node", "nodes", False, short_names=("no",), subresources=frozenset(("status",))
)


class NodeStrategy(Strategy):
    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        status = dict(obj.get("status") or {})
        alloc = (
            status.get("allocatable")
            or status.get("capacity")
            or {"cpu": "32", "memory": "128Gi", "pods": "110", "ephemeral-storage": "100Gi"}
        )
        status.setdefault("capacity", alloc)
        status.setdefault("allocatable", alloc)
        status.setdefault(
            "conditions",
            [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                    "lastHeartbeatTime": obj["metadata"]["creationTimestamp"],
                    "lastTransitionTime": obj["metadata"]["creationTimestamp"],
                }
            ],
        )
        name = obj["metadata"]["name"]
        status.setdefault(
            "nodeInfo",
            {
                # Every field kubernetes_asyncio's V1NodeSystemInfo requires.
                "architecture": "amd64",
                "bootID": f"boot-{name}",
                "containerRuntimeVersion": "sim://1.0",
                "kernelVersion": "6.1.0-sim",
                "kubeProxyVersion": "v1.32.0-sim",
                "kubeletVersion": "v1.32.0-sim",
                "machineID": f"machine-{name}",
                "operatingSystem": "linux",
                "osImage": "jobset-sim",
                "systemUUID": f"uuid-{name}",
            },
        )
        obj["status"] = status
        return obj


def _node_status(o: Obj) -> str:
    ready = next(
        (c for c in (o.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"),
        None,
    )
    text = "Ready" if ready and ready.get("status") == "True" else "NotReady"
    if (o.get("spec") or {}).get("unschedulable"):
        text += ",SchedulingDisabled"
    return text


def _node_roles(o: Obj) -> str:
    roles = [
        k.split("/", 1)[1]
        for k in (o["metadata"].get("labels") or {})
        if k.startswith("node-role.kubernetes.io/")
    ]
    return ",".join(sorted(roles)) or "<none>"


RESOURCE = Resource(
    TYPE,
    always(NodeStrategy()),
    (
        ("Name", "string", 0, name),
        ("Status", "string", 0, _node_status),
        ("Roles", "string", 0, _node_roles),
        ("Age", "date", 0, age),
        (
            "Version",
            "string",
            0,
            lambda o: ((o.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion", ""),
        ),
    ),
)
