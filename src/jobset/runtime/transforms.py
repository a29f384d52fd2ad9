"""Ready-made cache transforms for built-in kinds (see `cache.py` for the contract).

`slim_job` is what a controller of Jobs keeps: everything a reconcile of the owner reads
(metadata, labels, annotations, owner references, the Job's counts/flags and its whole
status) and not what it never reads: the pod template's spec (containers, volumes, env -
usually most of a Job's bytes), `managedFields`, and kubectl's last-applied annotation.
"""

from __future__ import annotations

from typing import Any, Final

from jobset.runtime.cache import Object

__all__ = ["LAST_APPLIED", "slim_job", "slim_metadata"]

LAST_APPLIED: Final = "kubectl.kubernetes.io/last-applied-configuration"


def slim_metadata(obj: Object) -> Object:
    meta: dict[str, Any] = obj.get("metadata") or {}
    meta.pop("managedFields", None)
    annotations = meta.get("annotations")
    if annotations and LAST_APPLIED in annotations:
        annotations.pop(LAST_APPLIED)
    return obj


def slim_job(obj: Object) -> Object:
    slim_metadata(obj)
    template = (obj.get("spec") or {}).get("template")
    if isinstance(template, dict):
        template.pop("spec", None)  # keeps template.metadata: labels/annotations are small
    return obj
