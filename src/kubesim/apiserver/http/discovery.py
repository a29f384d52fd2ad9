"""Legacy (non-aggregated) discovery documents, built from the registry on each request.

Only the legacy format is served: clients that ask for aggregated discovery
(`apidiscovery.k8s.io/v2`) read the plain `application/json` answer and fall back,
as they do against older API servers.
"""

from __future__ import annotations

import re
from typing import Any

from kubesim.apiserver.registry.registry import Registry
from kubesim.apiserver.registry.resourcetype import ResourceType

SERVER_ADDRESS = [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]


def version_info(project_version: str) -> dict[str, str]:
    return {
        "major": "1",
        "minor": "32",
        "gitVersion": f"v1.32.0-jobset-sim+{project_version}",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.23",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def api_versions() -> dict[str, Any]:
    return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": SERVER_ADDRESS}


_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int]:
    """Kubernetes version ordering: GA > beta > alpha, then by number; others last."""
    m = _VERSION_RE.match(version)
    if not m:
        return (0, 0, 0)
    major, stage, minor = int(m.group(1)), m.group(2), int(m.group(3) or 0)
    rank = {None: 3, "beta": 2, "alpha": 1}[stage]
    return (rank, major, minor)


def _preferred(versions: list[str]) -> list[str]:
    return sorted(versions, key=version_priority, reverse=True)


def group_entry(group: str, versions: list[str]) -> dict[str, Any]:
    ordered = _preferred(versions)
    gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in ordered]
    return {"name": group, "versions": gvs, "preferredVersion": gvs[0]}


def group_list(registry: Registry) -> dict[str, Any]:
    groups = [group_entry(name, versions) for name, versions in registry.groups().items() if name]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def group(registry: Registry, name: str) -> dict[str, Any] | None:
    versions = registry.groups().get(name)
    if not versions or not name:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **group_entry(name, versions)}


def _resource_entry(rt: ResourceType) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": rt.plural,
        "singularName": rt.singular,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    if rt.categories:
        entry["categories"] = list(rt.categories)
    return entry


_SUB_VERBS = {
    "status": ["get", "patch", "update"],
    "scale": ["get", "patch", "update"],
    "binding": ["create"],
    "eviction": ["create"],
    "token": ["create"],
    "log": ["get"],
    "finalize": ["update"],
}
_SUB_KIND = {
    "scale": "Scale",
    "binding": "Binding",
    "eviction": "Eviction",
    "token": "TokenRequest",
    "log": "Pod",
}


_SUB_GROUP_VERSION = {
    "scale": ("autoscaling", "v1"),
    "eviction": ("policy", "v1"),
    "token": ("authentication.k8s.io", "v1"),
}


def resource_list(registry: Registry, group: str, version: str) -> dict[str, Any]:
    resources: list[dict[str, Any]] = []
    for rt in sorted(registry.in_group_version(group, version), key=lambda r: r.plural):
        resources.append(_resource_entry(rt))
        for sub in sorted(rt.subresources):
            entry = {
                "name": f"{rt.plural}/{sub}",
                "singularName": "",
                "namespaced": rt.namespaced,
                "kind": _SUB_KIND.get(sub, rt.kind),
                "verbs": _SUB_VERBS.get(sub, ["get"]),
            }
            if sub in _SUB_GROUP_VERSION:
                entry["group"], entry["version"] = _SUB_GROUP_VERSION[sub]
            resources.append(entry)
    gv = f"{group}/{version}" if group else version
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": gv,
        "resources": resources,
    }
