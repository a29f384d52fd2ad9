"""scheduling.k8s.io/v1 PriorityClass: `preemptionPolicy` defaulted, and the Priority
admission plugin's check that at most one class is the global default."""

from __future__ import annotations

from typing import Any

from kubesim.apiserver.core.store import Store
from kubesim.apiserver.registry.features import FeatureGates
from kubesim.apiserver.registry.resource import Resource
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.apiserver.registry.strategy import Strategy
from kubesim.machinery.errors import ApiError

TYPE = ResourceType(
    "scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", False, short_names=("pc",)
)


class PriorityClassStrategy(Strategy):
    def __init__(self, store: Store) -> None:
        self.store = store

    def _one_default(self, obj: dict[str, Any]) -> None:
        """A second global default is refused, as the Priority plugin refuses it."""
        if not obj.get("globalDefault"):
            return
        name = str(obj["metadata"].get("name") or "")
        for (_, other), pc in self.store.resource(TYPE.key).objects.items():
            if other != name and pc.get("globalDefault"):
                raise ApiError(
                    403,
                    "Forbidden",
                    f'priorityclasses.scheduling.k8s.io "{name}" is forbidden: PriorityClass '
                    f"{other} is already marked as default. Only one default can exist",
                    group=TYPE.group,
                    kind=TYPE.plural,
                    name=name,
                )

    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        obj.setdefault("preemptionPolicy", "PreemptLowerPriority")
        self._one_default(obj)
        return obj

    def prepare_for_update(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any], subresource: str
    ) -> dict[str, Any]:
        self._one_default(obj)
        return obj


def _strategy(_gates: FeatureGates, store: Store) -> Strategy:
    return PriorityClassStrategy(store)


RESOURCE = Resource(TYPE, _strategy)
