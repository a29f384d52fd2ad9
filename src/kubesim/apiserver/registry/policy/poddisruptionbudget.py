"""policy/v1 PodDisruptionBudget: the budget columns."""

from __future__ import annotations

from kubesim.apiserver.registry.columns import Obj, age, name
from kubesim.apiserver.registry.resource import Resource
from kubesim.apiserver.registry.resourcetype import ResourceType

TYPE = ResourceType(
    "policy",
    "v1",
    "PodDisruptionBudget",
    "poddisruptionbudgets",
    True,
    short_names=("pdb",),
    subresources=frozenset(("status",)),
)


def _int_or_na(o: Obj, key: str) -> str:
    value = (o.get("spec") or {}).get(key)
    return "N/A" if value is None else str(value)


RESOURCE = Resource(
    TYPE,
    columns=(
        ("Name", "string", 0, name),
        ("Min Available", "string", 0, lambda o: _int_or_na(o, "minAvailable")),
        ("Max Unavailable", "string", 0, lambda o: _int_or_na(o, "maxUnavailable")),
        (
            "Allowed Disruptions",
            "integer",
            0,
            lambda o: (o.get("status") or {}).get("disruptionsAllowed", 0),
        ),
        ("Age", "date", 0, age),
    ),
)
