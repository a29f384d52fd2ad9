"""The catalogue: every built-in type the simulated API server serves, one line each.

A type's behaviour lives in its own module, `registry/<group>/<kind>.py`, which declares a
`Resource` (`resource.py`): its `ResourceType`, strategy, `kubectl get` columns, OpenAPI schema
and the feature gate that serves it. Adding a built-in type is that module plus one line here.
The order is the order of discovery and of the groups' preferred versions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesim.apiserver.core.store import Store
from kubesim.apiserver.registry.admissionregistration import (
    mutatingwebhookconfiguration,
    validatingadmissionpolicy,
    validatingadmissionpolicybinding,
    validatingwebhookconfiguration,
)
from kubesim.apiserver.registry.apiextensions import customresourcedefinition
from kubesim.apiserver.registry.apiregistration import apiservice
from kubesim.apiserver.registry.apps import (
    controllerrevision,
    daemonset,
    deployment,
    replicaset,
    statefulset,
)
from kubesim.apiserver.registry.authentication import selfsubjectreview, tokenreview
from kubesim.apiserver.registry.authorization import selfsubjectaccessreview, subjectaccessreview
from kubesim.apiserver.registry.batch import cronjob, job
from kubesim.apiserver.registry.columns import DEFAULT_COLUMNS, Column
from kubesim.apiserver.registry.coordination import lease
from kubesim.apiserver.registry.core import (
    configmap,
    endpoints,
    event,
    limitrange,
    namespace,
    node,
    persistentvolume,
    persistentvolumeclaim,
    pod,
    replicationcontroller,
    resourcequota,
    secret,
    service,
    serviceaccount,
)
from kubesim.apiserver.registry.discovery import endpointslice
from kubesim.apiserver.registry.events import event as events_event
from kubesim.apiserver.registry.features import FeatureGates
from kubesim.apiserver.registry.networking import ingress, networkpolicy
from kubesim.apiserver.registry.policy import poddisruptionbudget
from kubesim.apiserver.registry.rbac import clusterrole, clusterrolebinding, role, rolebinding
from kubesim.apiserver.registry.resource import Resource
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.apiserver.registry.scheduling import podgroup, priorityclass, workload
from kubesim.apiserver.registry.storage import storageclass
from kubesim.apiserver.registry.strategy import Strategy

__all__ = ["CATALOGUE", "columns", "schemas", "served_types", "strategies"]

CATALOGUE: tuple[Resource, ...] = (
    namespace.RESOURCE,
    pod.RESOURCE,
    service.RESOURCE,
    endpoints.RESOURCE,
    event.RESOURCE,
    node.RESOURCE,
    persistentvolumeclaim.RESOURCE,
    persistentvolume.RESOURCE,
    secret.RESOURCE,
    configmap.RESOURCE,
    serviceaccount.RESOURCE,
    resourcequota.RESOURCE,
    limitrange.RESOURCE,
    replicationcontroller.RESOURCE,
    deployment.RESOURCE,
    replicaset.RESOURCE,
    statefulset.RESOURCE,
    daemonset.RESOURCE,
    controllerrevision.RESOURCE,
    job.RESOURCE,
    cronjob.RESOURCE,
    lease.RESOURCE,
    events_event.RESOURCE,
    poddisruptionbudget.RESOURCE,
    storageclass.RESOURCE,
    priorityclass.RESOURCE,
    endpointslice.RESOURCE,
    networkpolicy.RESOURCE,
    ingress.RESOURCE,
    customresourcedefinition.RESOURCE,
    mutatingwebhookconfiguration.RESOURCE,
    validatingwebhookconfiguration.RESOURCE,
    apiservice.RESOURCE,
    validatingadmissionpolicy.RESOURCE,
    validatingadmissionpolicybinding.RESOURCE,
    role.RESOURCE,
    rolebinding.RESOURCE,
    clusterrole.RESOURCE,
    clusterrolebinding.RESOURCE,
    selfsubjectaccessreview.RESOURCE,
    subjectaccessreview.RESOURCE,
    tokenreview.RESOURCE,
    selfsubjectreview.RESOURCE,
    workload.RESOURCE,
    podgroup.RESOURCE,
)


def _served(gates: FeatureGates) -> list[Resource]:
    on = {r.gate for r in CATALOGUE if r.gate and gates.enabled(r.gate)}
    return [r for r in CATALOGUE if not r.gate or r.gate in on]


def served_types(gates: FeatureGates | None = None) -> list[ResourceType]:
    """The built-in types an API server with these gates serves (all off: the default)."""
    return [r.type for r in _served(gates or FeatureGates({}))]


def strategies(gates: FeatureGates, store: Store) -> dict[tuple[str, str], Strategy]:
    """The strategies of one API server's served built-in types, by storage key."""
    return {r.type.key: r.strategy(gates, store) for r in _served(gates) if r.type.storage is None}


_COLUMNS: Mapping[tuple[str, str], tuple[Column, ...]] = {r.type.key: r.columns for r in CATALOGUE}


def columns(key: tuple[str, str]) -> tuple[Column, ...]:
    """The `kubectl get` columns of a built-in type, by storage key."""
    return _COLUMNS.get(key, DEFAULT_COLUMNS)


def schemas() -> dict[tuple[str, str, str], Mapping[str, Any]]:
    """The OpenAPI schemas published for built-ins, by (group, version, kind)."""
    return {
        (r.type.group, r.type.version, r.type.kind): r.schema
        for r in CATALOGUE
        if r.schema is not None
    }
