"""The toy controller, built only from the runtime, converges against a real `jobset sim`."""

from __future__ import annotations

import asyncio
import json
import uuid

import aiohttp
from prometheus_client import generate_latest

from jobset.runtime.client import CONFIGMAPS, EVENTS, NAMESPACES, SECRETS, Client
from jobset.runtime.manager import Manager
from jobset.runtime.options import ManagerOptions
from kubesim.process import SimProcess
from tests.eventually import eventually
from tests.integration.runtime.toy_controller import PARENT_LABEL, VALUE, ToyController


def parent(name: str, ns: str, replicas: int, value: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, "labels": {PARENT_LABEL: "true"}},
        "data": {"replicas": str(replicas), "value": value},
    }


async def children(client: Client, ns: str) -> dict[str, str]:
    page = await client.list(SECRETS, ns)
    return {
        s["metadata"]["name"]: (s["metadata"].get("annotations") or {}).get(VALUE, "")
        for s in page["items"]
        if not s["metadata"].get("deletionTimestamp")
    }


async def test_toy_controller_converges(sim_none: SimProcess, client: Client) -> None:
    ns = f"toy-{uuid.uuid4().hex[:6]}"
    await client.create(NAMESPACES, {"metadata": {"name": ns}})
    options = ManagerOptions(
        kubeconfig=str(sim_none.kubeconfig),
        namespace=ns,
        bind_address="127.0.0.1",
        metrics_port=0,
        health_port=0,
        concurrency=3,
        identity="toy-test",
    )
    manager = await Manager.create(options)
    toy = ToyController(manager)
    run = asyncio.create_task(manager.run())
    try:
        health = manager.servers
        await eventually(lambda: "health" in health and toy.controller.started)
        port = health["health"].port
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{port}/readyz?verbose") as resp:
                body = await resp.text()
                assert resp.status == 200, body
                assert "[+]informers-synced ok" in body

        # Created: three children with the parent's value, owned by the parent.
        p = await client.create(CONFIGMAPS, parent("p1", ns, 3, "a"))
        await eventually(lambda: _eq(children(client, ns), {"p1-0": "a", "p1-1": "a", "p1-2": "a"}))
        secret = await client.get(SECRETS, "p1-0", ns)
        ref = secret["metadata"]["ownerReferences"][0]
        assert ref["uid"] == p["metadata"]["uid"] and ref["controller"] is True

        # Updated: fewer children, new value.
        await client.patch(CONFIGMAPS, "p1", {"data": {"replicas": "2", "value": "b"}}, ns)
        await eventually(lambda: _eq(children(client, ns), {"p1-0": "b", "p1-1": "b"}))

        # Events of owned objects map to the owner: a deleted child is recreated, a child
        # changed behind the controller's back is repaired.
        before = toy.reconciled[f"{ns}/p1"]
        await client.delete(SECRETS, "p1-0", ns)
        await client.patch(SECRETS, "p1-1", {"metadata": {"annotations": {VALUE: "x"}}}, ns)
        await eventually(lambda: toy.reconciled[f"{ns}/p1"] > before)
        await eventually(lambda: _eq(children(client, ns), {"p1-0": "b", "p1-1": "b"}))
        # Recreated twice with the same message: one Event, count aggregated.
        await client.delete(SECRETS, "p1-0", ns)
        await eventually(lambda: _eq(children(client, ns), {"p1-0": "b", "p1-1": "b"}))

        async def created_p1_0_count() -> int:
            events = (await client.list(EVENTS, ns))["items"]
            matching = [e for e in events if e["message"] == "created secret p1-0"]
            assert len(matching) == 1, json.dumps(matching)
            return int(matching[0]["count"])

        assert await eventually(lambda: _ge(created_p1_0_count(), 3)) >= 3

        # Parent status annotation written once.
        got = await client.get(CONFIGMAPS, "p1", ns)
        assert got["metadata"]["annotations"]["toy.example.com/children"] == "2"

        # Deleted: the owner goes, the garbage collector takes the children, and the
        # controller saw the deletion (reconciled a key whose object is gone).
        seen = toy.reconciled[f"{ns}/p1"]
        await client.delete(CONFIGMAPS, "p1", ns, propagation_policy="Background")
        await eventually(lambda: _eq(children(client, ns), {}))
        await eventually(lambda: toy.reconciled[f"{ns}/p1"] > seen)
        assert toy.parents.store.get_by_name(ns, "p1") is None

        text = generate_latest(manager.metrics.registry).decode()
        assert 'controller_runtime_reconcile_total{controller="toy",result="success"}' in text
        assert 'controller_runtime_max_concurrent_reconciles{controller="toy"} 3.0' in text
        assert 'workqueue_adds_total{controller="toy",name="toy"}' in text
        assert 'rest_client_requests_total{code="201",host=' in text
    finally:
        manager.stop()
        assert await asyncio.wait_for(run, 30) == 0


async def _eq(coro: object, want: object) -> bool:
    return await coro == want  # type: ignore[misc]


async def _ge(coro: object, want: int) -> int:
    got = await coro  # type: ignore[misc]
    return got if got >= want else 0
