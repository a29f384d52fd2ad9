"""The endpointslice controller finds a Service's slices through its own index, kept from the
store's events, not by reading every slice of the namespace on each sync: a namespace where
thousands of JobSets (each with a headless Service) come and go must not make every sync
O(Services). The in-memory API core and store, with the controller's real syncs."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubesim.apiserver.core.apicore import ApiCore
from kubesim.apiserver.core.store import Store
from kubesim.apiserver.registry.catalogue import served_types
from kubesim.apiserver.registry.registry import Registry
from kubesim.controllers.endpoints import (
    MANAGED_BY,
    MANAGED_BY_LABEL,
    SERVICE_NAME_LABEL,
    SLICES,
    EndpointsController,
)
from tests.eventually import eventually

NS = "ns"


def _rt(core: ApiCore, group: str, version: str, plural: str) -> Any:
    found = core.registry.get(group, version, plural)
    assert found is not None
    return found


async def _core(services: int) -> ApiCore:
    core = ApiCore(Registry(served_types()), Store())
    await core.create(_rt(core, "", "v1", "namespaces"), "", {"metadata": {"name": NS}})
    for i in range(services):
        await _service(core, f"s{i}")
    return core


async def _service(core: ApiCore, name: str) -> None:
    body = {
        "metadata": {"name": name, "namespace": NS},
        "spec": {"clusterIP": "None", "selector": {"app": name}},
    }
    await core.create(_rt(core, "", "v1", "services"), NS, body)


async def _one_slice_each(core: ApiCore, services: int) -> None:
    """Wait until each of Services s0..s<services - 1> has exactly one slice (a placeholder:
    no pod matches)."""
    await eventually(
        lambda: [len(_slices_of(core, f"s{i}")) for i in range(services)],
        lambda counts: counts == [1] * services,
        what="one slice per Service",
    )


async def _one_slice_of(core: ApiCore, service: str) -> None:
    await eventually(lambda: _slices_of(core, service), lambda s: len(s) == 1, what=service)


@contextlib.asynccontextmanager
async def _running(core: ApiCore) -> AsyncIterator[EndpointsController]:
    """The controller over `core`, started for the body and stopped after it."""
    controller = EndpointsController(core)
    controller.start()
    try:
        yield controller
    finally:
        await controller.stop()


def _slices_of(core: ApiCore, service: str) -> list[dict[str, Any]]:
    return [
        sl
        for sl in core.store.resource(SLICES).objects.values()
        if sl["metadata"]["labels"].get(SERVICE_NAME_LABEL) == service
    ]


def _count_scans(core: ApiCore, monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """Every scan of the stored EndpointSlices (`range`, by namespace or all) from now on."""
    scans: list[str | None] = []
    slices = core.store.resource(SLICES)
    real = slices.range

    def counted(namespace: str | None = None, *args: Any, **kwargs: Any) -> Any:
        scans.append(namespace)
        return real(namespace, *args, **kwargs)

    monkeypatch.setattr(slices, "range", counted)
    return scans


async def test_syncs_find_each_services_slices_without_scanning_the_namespace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    core = await _core(40)
    slice_scans = _count_scans(core, monkeypatch)
    async with _running(core):
        await _one_slice_each(core, 40)
        await _service(core, "late")  # synced while 40 other slices are in the namespace
        await _one_slice_of(core, "late")
        assert slice_scans == []


async def test_the_index_follows_other_writers_and_deletions() -> None:
    core = await _core(3)
    slice_rt = _rt(core, "discovery.k8s.io", "v1", "endpointslices")
    async with _running(core):
        await _one_slice_each(core, 3)
        # Someone else deletes s0's slice: the controller puts one back.
        (gone,) = _slices_of(core, "s0")
        await core.delete(slice_rt, NS, gone["metadata"]["name"], {})
        await eventually(
            lambda: [sl["metadata"]["name"] for sl in _slices_of(core, "s0")],
            lambda names: len(names) == 1 and names[0] != gone["metadata"]["name"],
            what="s0's slice recreated",
        )
        # Someone relabels s1's slice as another manager's: it is no longer s1's, so the
        # controller makes s1 a slice of its own again and leaves the relabelled one alone.
        (taken,) = _slices_of(core, "s1")
        labels = {**taken["metadata"]["labels"], MANAGED_BY_LABEL: "someone-else"}
        await core.update(
            slice_rt,
            NS,
            taken["metadata"]["name"],
            {**taken, "metadata": {**taken["metadata"], "labels": labels}},
        )
        await eventually(
            lambda: [sl["metadata"]["labels"][MANAGED_BY_LABEL] for sl in _slices_of(core, "s1")],
            lambda managers: sorted(managers) == sorted([MANAGED_BY, "someone-else"]),
            what="s1 has a managed slice again",
        )
        # The Service goes: its managed slice goes with it (the relabelled one is not its).
        await core.delete(_rt(core, "", "v1", "services"), NS, "s2", {})
        await eventually(lambda: _slices_of(core, "s2"), lambda s: s == [], what="s2's slices")


async def test_a_restarted_controller_finds_the_slices_already_stored() -> None:
    core = await _core(5)
    async with _running(core):
        await _one_slice_each(core, 5)
    names = sorted(sl["metadata"]["name"] for sl in core.store.resource(SLICES).objects.values())
    async with _running(core):
        await _service(core, "s5")  # something to wait for: the restart synced everything
        await _one_slice_of(core, "s5")
        # No Service got a second slice: the new controller found the stored ones.
        assert [len(_slices_of(core, f"s{i}")) for i in range(5)] == [1] * 5
        assert set(names) <= {
            sl["metadata"]["name"] for sl in core.store.resource(SLICES).objects.values()
        }
