"""A headless Service over 200 pods in a `jobset sim` process: its EndpointSlices hold at
most 100 endpoints each, its Endpoints every address, and one pod deleted rewrites one slice
(observed through a watch of endpointslices, as kube-proxy or CoreDNS would see it).

The pods are created through the API at `--sim-level none` and given their IPs through
`pods/status`, as a kubelet would: nothing else writes them, so every slice event is the
endpoints controllers' answer to the pods written here.
"""

from __future__ import annotations

import asyncio
from typing import Any

from jobset.runtime.client import NAMESPACES, PODS, SERVICES, Client, Resource
from kubesim.process import SimProcess
from tests.eventually import eventually

SLICES = Resource("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice")
ENDPOINTS = Resource("", "v1", "endpoints", "Endpoints")
PODS_N = 200
NS = "ep-scale"


def pod_body(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"w-{i}", "namespace": NS, "labels": {"app": "big"}},
        "spec": {"hostname": f"w-{i}", "subdomain": "big", "containers": [{"name": "c", "image": "x"}]},
    }  # fmt: skip


def ip(i: int) -> str:
    return f"10.9.{i // 256}.{i % 256}"


async def add_pod(client: Client, i: int) -> None:
    await client.create(PODS, pod_body(i), NS)
    status = {"status": {"phase": "Running", "podIP": ip(i), "podIPs": [{"ip": ip(i)}]}}
    await client.patch(PODS, f"w-{i}", status, NS, subresource="status")


async def slices(client: Client) -> list[dict[str, Any]]:
    found = await client.list(SLICES, NS, label_selector="kubernetes.io/service-name=big")
    return list(found["items"])


def names(items: list[dict[str, Any]]) -> list[str]:
    return [e["targetRef"]["name"] for s in items for e in s.get("endpoints") or ()]


async def test_headless_service_over_200_pods_gets_capped_slices(sim_none: SimProcess) -> None:
    client = await Client.connect(str(sim_none.kubeconfig), qps=1000, burst=1000)
    try:
        await run(client)
    finally:
        await client.close()


async def run(client: Client) -> None:
    await client.create(
        NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
    )
    await client.create(SERVICES, {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "big", "namespace": NS},
        "spec": {"clusterIP": "None", "selector": {"app": "big"}, "publishNotReadyAddresses": True},
    }, NS)  # fmt: skip
    gate = asyncio.Semaphore(16)

    async def one(i: int) -> None:
        async with gate:
            await add_pod(client, i)

    await asyncio.gather(*(one(i) for i in range(PODS_N)))
    want = {f"w-{i}" for i in range(PODS_N)}

    items: list[dict[str, Any]] = await eventually(
        lambda: slices(client), lambda got: sorted(names(got)) == sorted(want), within=60
    )
    assert len(items) >= 2
    assert all(0 < len(s["endpoints"]) <= 100 for s in items), [len(s["endpoints"]) for s in items]
    assert all(s["metadata"]["ownerReferences"][0]["name"] == "big" for s in items)
    assert all(s["metadata"]["generateName"] == "big-" for s in items)
    assert {e["hostname"] for s in items for e in s["endpoints"]} == want
    ep = await client.get(ENDPOINTS, "big", NS)
    (subset,) = ep["subsets"]
    assert sorted(a["ip"] for a in subset["addresses"]) == sorted(ip(i) for i in range(PODS_N))
    assert "annotations" not in ep["metadata"]  # 200 addresses: under capacity

    holder = next(s for s in items if "w-7" in names([s]))
    listed = await client.list(SLICES, NS)
    events: list[dict[str, Any]] = []
    async with client.watch(SLICES, NS, resource_version=listed["metadata"]["resourceVersion"],
                            allow_bookmarks=False) as stream:  # fmt: skip
        watched = aiter(stream)

        async def until(done: Any) -> None:
            async def read() -> None:
                while not done():
                    events.append(await anext(watched))

            await asyncio.wait_for(read(), 60)

        await client.request("DELETE", PODS.path(NS, "w-7"), body={"gracePeriodSeconds": 0})
        await until(lambda: any(e["object"]["metadata"]["name"] == holder["metadata"]["name"]
                                for e in events))  # fmt: skip
        removal = list(events)
        # A barrier: the next pod's endpoint shows every earlier sync has written what it would.
        await add_pod(client, PODS_N)
        await until(lambda: f"w-{PODS_N}" in names([e["object"] for e in events[-1:]]))
    # Exactly one write, of the one slice that held the pod; then one for the new pod.
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in removal] == [
        ("MODIFIED", holder["metadata"]["name"])
    ]
    assert sorted(names([removal[0]["object"]])) == sorted(set(names([holder])) - {"w-7"})
    assert [e["type"] for e in events[len(removal) :]] == ["MODIFIED"]
    after = await slices(client)
    assert sorted(names(after)) == sorted(want - {"w-7"} | {f"w-{PODS_N}"})
    assert len(after) == len(items)
