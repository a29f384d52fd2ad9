"""`kubectl get` columns: the cell functions and column lists registry modules share.

A column is (name, type, priority, cell); `http/tables.py` renders them into a
`meta.k8s.io/v1 Table`. Priority 1 columns are the ones `kubectl get -o wide` adds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kubesim.clock import parse_rfc3339

Obj = dict[str, Any]
Column = tuple[str, str, int, Callable[[Obj], Any]]  # name, type, priority, cell


def human_age(seconds: float) -> str:
    """kubectl's duration format (5s, 3m20s, 4h, 2d3h ...)."""
    s = int(max(0, seconds))
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    h = m // 60
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    if h < 24 * 8:
        return f"{h // 24}d{h % 24}h" if h % 24 else f"{h // 24}d"
    if h < 24 * 365 * 2:
        return f"{h // 24}d"
    if h < 24 * 365 * 8:
        return f"{h // (24 * 365)}y{(h // 24) % 365}d"
    return f"{h // (24 * 365)}y"


def age_of(stamp: str | None) -> str:
    if not stamp:
        return "<unknown>"
    try:
        return human_age(time.time() - parse_rfc3339(stamp))
    except ValueError:
        return "<invalid>"


def age(o: Obj) -> str:
    return age_of(o["metadata"].get("creationTimestamp"))


def name(o: Obj) -> str:
    return str(o["metadata"]["name"])


def template_containers(o: Obj, key: str) -> str:
    spec = ((o.get("spec") or {}).get("template") or {}).get("spec") or {}
    return ",".join(str(c.get(key, "")) for c in spec.get("containers") or [])


def selector_text(o: Obj) -> str:
    sel = (o.get("spec") or {}).get("selector") or {}
    parts = [f"{k}={v}" for k, v in (sel.get("matchLabels") or {}).items()]
    for e in sel.get("matchExpressions") or []:
        values = ",".join(e.get("values") or [])
        op = str(e.get("operator", "")).lower()
        parts.append(f"{e.get('key')} {op} ({values})" if values else f"{e.get('key')}")
    return ",".join(parts) or "<none>"


def workload_wide() -> tuple[Column, ...]:
    return (
        ("Containers", "string", 1, lambda o: template_containers(o, "name")),
        ("Images", "string", 1, lambda o: template_containers(o, "image")),
        ("Selector", "string", 1, selector_text),
    )


def more(items: list[str]) -> str:
    if not items:
        return "<none>"
    shown = ",".join(items[:3])
    return shown + (f" + {len(items) - 3} more..." if len(items) > 3 else "")


MODE_ABBREVIATIONS: tuple[tuple[str, str], ...] = (
    ("ReadWriteOnce", "RWO"),
    ("ReadOnlyMany", "ROX"),
    ("ReadWriteMany", "RWX"),
    ("ReadWriteOncePod", "RWOP"),
)


def access_modes(modes: Any) -> str:
    """kubectl's access modes cell: the abbreviations in a fixed order, comma separated."""
    given = set(modes or ())
    return ",".join(short for mode, short in MODE_ABBREVIATIONS if mode in given)


def storage_phase(o: Obj) -> str:
    if o["metadata"].get("deletionTimestamp"):
        return "Terminating"
    return str((o.get("status") or {}).get("phase") or "")


def vac(o: Obj) -> str:
    return str((o.get("spec") or {}).get("volumeAttributesClassName") or "<unset>")


def volume_mode(o: Obj) -> str:
    return str((o.get("spec") or {}).get("volumeMode") or "<unset>")


def claim_class(o: Obj) -> str:
    spec = o.get("spec") or {}
    beta = (o["metadata"].get("annotations") or {}).get("volume.beta.kubernetes.io/storage-class")
    return str(beta if beta is not None else spec.get("storageClassName") or "")


DEFAULT_COLUMNS: tuple[Column, ...] = (("Name", "string", 0, name), ("Age", "date", 0, age))
