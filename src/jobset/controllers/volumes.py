"""volumeClaimPolicies: PVCs shared by the Jobs of a JobSet.

Each template of each policy becomes one PVC named `<claim>-<jobset>` (labelled with the
JobSet name), created before the Jobs. With `retentionPolicy.whenDeleted: Delete` (the
default) the PVC carries a controller ownerReference to the JobSet, so garbage collection
removes it with the JobSet; with `Retain` it has no owner and outlives the JobSet.
A Job template gets a volume for a claim only when one of its containers or init
containers mounts a volume of the claim's name.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from jobset.api import constants as c
from jobset.api.types import name_of, namespace_of, owner_reference, pvc_name

__all__ = ["add_volumes", "persistent_volume_claims"]


def persistent_volume_claims(js: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every PVC the JobSet's volumeClaimPolicies ask for, ready to POST."""
    out: list[dict[str, Any]] = []
    jsname = name_of(js)
    for policy in (js.get("spec") or {}).get("volumeClaimPolicies") or []:
        retention = (policy.get("retentionPolicy") or {}).get("whenDeleted", c.RETENTION_DELETE)
        for template in policy.get("templates") or []:
            tmeta = template.get("metadata") or {}
            meta: dict[str, Any] = {
                "name": pvc_name(jsname, str(tmeta.get("name") or "")),
                "namespace": namespace_of(js),
                "labels": {**(tmeta.get("labels") or {}), c.JOBSET_NAME_KEY: jsname},
            }
            if tmeta.get("annotations"):
                meta["annotations"] = dict(tmeta["annotations"])
            if retention == c.RETENTION_DELETE:
                meta["ownerReferences"] = [owner_reference(js)]
            out.append(
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "metadata": meta,
                    "spec": copy.deepcopy(template.get("spec") or {}),
                }
            )
    return out


def _mounts(pod_spec: Mapping[str, Any], volume: str) -> bool:
    for key in ("containers", "initContainers"):
        for container in pod_spec.get(key) or []:
            for mount in container.get("volumeMounts") or []:
                if mount.get("name") == volume:
                    return True
    return False


def add_volumes(job: dict[str, Any], js: Mapping[str, Any]) -> None:
    """Add a PVC volume to the Job's pod template for each claim it mounts."""
    pod_spec = job["spec"].setdefault("template", {}).setdefault("spec", {})
    jsname = name_of(js)
    for policy in (js.get("spec") or {}).get("volumeClaimPolicies") or []:
        for template in policy.get("templates") or []:
            claim = str((template.get("metadata") or {}).get("name") or "")
            if not _mounts(pod_spec, claim):
                continue
            volumes = list(pod_spec.get("volumes") or [])
            volumes.append(
                {"name": claim, "persistentVolumeClaim": {"claimName": pvc_name(jsname, claim)}}
            )
            pod_spec["volumes"] = volumes
