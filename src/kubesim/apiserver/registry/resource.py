"""`Resource`: everything one built-in type contributes to the API server, as its registry
module (`registry/<group>/<kind>.py`) declares it and the catalogue (`catalogue.py`) lists it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubesim.apiserver.core.store import Store
from kubesim.apiserver.registry.columns import DEFAULT_COLUMNS, Column
from kubesim.apiserver.registry.features import FeatureGates
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.apiserver.registry.strategy import PLAIN, Strategy

__all__ = ["Resource", "StrategyFactory", "always"]

# Builds a type's strategy for one API server, from its feature gates and its store.
StrategyFactory = Callable[[FeatureGates, Store], Strategy]


def always(strategy: Strategy) -> StrategyFactory:
    """The same strategy whatever the gates."""
    return lambda _gates, _store: strategy


_PLAIN = always(PLAIN)


@dataclass(frozen=True)
class Resource:
    """One built-in type: how it is served, written, printed and described."""

    type: ResourceType
    # Defaults on create, what an update may change, validation (`strategy.py`).
    strategy: StrategyFactory = _PLAIN
    # `kubectl get` columns, as kube-apiserver's table convertor prints them.
    columns: tuple[Column, ...] = DEFAULT_COLUMNS
    # An OpenAPI schema to publish, for the types kubectl does not know by itself.
    schema: Mapping[str, Any] | None = None
    # The feature gate that serves the type; empty: always served.
    gate: str = ""
