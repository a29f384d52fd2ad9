"""What one pod change costs the endpoints controllers: their own writes do not make them
sync the Service again, and pod changes during a Service's hold (BATCH_FACTOR times its last
sync) are batched into one sync, which still sees every change. The in-memory API core and
store, with the controller's real sync; syncs are counted around it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kubesim.apiserver.core.apicore import ApiCore
from kubesim.apiserver.core.store import Store
from kubesim.apiserver.registry.catalogue import served_types
from kubesim.apiserver.registry.registry import Registry
from kubesim.controllers import endpoints
from kubesim.controllers.endpoints import ENDPOINTS, EndpointsController
from tests.eventually import eventually

NS = "ns"
KEY = (NS, "big")


async def _cluster(pods: int) -> tuple[ApiCore, EndpointsController, list[int]]:
    core = ApiCore(Registry(served_types()), Store())
    reg = core.registry

    def rt(group: str, version: str, plural: str) -> Any:
        found = reg.get(group, version, plural)
        assert found is not None
        return found

    await core.create(rt("", "v1", "namespaces"), "", {"metadata": {"name": NS}})
    service = {
        "metadata": {"name": "big", "namespace": NS},
        "spec": {"clusterIP": "None", "selector": {"app": "big"}},
    }
    await core.create(rt("", "v1", "services"), NS, service)
    pod_rt = rt("", "v1", "pods")
    for i in range(pods):
        body = {
            "metadata": {"name": f"w-{i}", "namespace": NS, "labels": {"app": "big"}},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
        }
        stored = await core.create(pod_rt, NS, body)
        ip = f"10.9.{i // 256}.{i % 256}"
        status = {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}]}
        await core.update(pod_rt, NS, f"w-{i}", {**stored, "status": status}, subresource="status")
    controller = EndpointsController(core)
    syncs: list[int] = []
    real = controller._sync

    async def counted(key: Any) -> float | None:
        syncs.append(1)
        return await real(key)

    controller._sync = counted  # type: ignore[method-assign]
    return core, controller, syncs


def _addresses(core: ApiCore) -> int:
    ep = core.store.get(ENDPOINTS, KEY) or {}
    return sum(
        len(s.get("addresses") or ()) + len(s.get("notReadyAddresses") or ())
        for s in ep.get("subsets") or ()
    )


async def _settled(syncs: list[int]) -> None:
    """No sync for half a second."""
    seen = -1
    while seen != len(syncs):
        seen = len(syncs)
        await asyncio.sleep(0.5)


async def test_the_controllers_own_writes_do_not_sync_the_service_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(endpoints, "BATCH_FACTOR", 0.0)  # every event syncs at once
    core, controller, syncs = await _cluster(150)
    controller.start()
    try:
        await eventually(lambda: _addresses(core), lambda n: n == 150, what="150 addresses")
        await _settled(syncs)
        # Its own writes (Endpoints and two slices) queued nothing more: one sync did it all.
        assert len(syncs) == 1
        syncs.clear()
        pod_rt = core.registry.get("", "v1", "pods")
        assert pod_rt is not None
        await core.delete(pod_rt, NS, "w-7", {})
        await eventually(lambda: _addresses(core), lambda n: n == 149, what="149 addresses")
        await _settled(syncs)
        assert len(syncs) == 1  # the pod's change, not the Endpoints and slice it rewrote
        # Someone else's write of its Endpoints is still put back.
        ep_rt = core.registry.get("", "v1", "endpoints")
        assert ep_rt is not None
        current = core.store.get(ENDPOINTS, KEY)
        assert current is not None
        await core.update(ep_rt, NS, "big", {**current, "subsets": []})
        await eventually(lambda: _addresses(core), lambda n: n == 149, what="put back")
    finally:
        await controller.stop()


async def test_pod_changes_within_a_services_hold_are_batched_into_one_sync() -> None:
    core, controller, syncs = await _cluster(120)
    controller.start()
    try:
        await eventually(lambda: _addresses(core), lambda n: n == 120, what="120 addresses")
        await _settled(syncs)
        syncs.clear()
        # As if the last sync had taken 0.2 s: the Service is held for 0.8 s after it.
        controller._not_before[KEY] = endpoints.time.monotonic() + 0.8
        pod_rt = core.registry.get("", "v1", "pods")
        assert pod_rt is not None
        for i in range(20):
            await core.delete(pod_rt, NS, f"w-{i}", {})
            await asyncio.sleep(0.02)  # each deletion its own event, spread over 0.4 s
        await eventually(lambda: _addresses(core), lambda n: n == 100, what="100 addresses")
        await _settled(syncs)
        assert len(syncs) == 1, f"{len(syncs)} syncs for 20 pod deletions within the hold"
    finally:
        await controller.stop()
