"""Informers and the client against an in-process `jobset sim` whose faults we steer.

The sim starts with a `--faults` plan (every configmap watch is cut after 2 events); the
tests then swap the server's plan to force `410 Gone` or 429s at chosen moments, which a
probabilistic plan could not do deterministically.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from jobset.runtime.client import CONFIGMAPS, NAMESPACES, ApiError, Client, RetryPolicy
from jobset.runtime.informer import FuncHandler, Informer
from jobset.runtime.metrics import RuntimeMetrics
from kubesim.apiserver.faults import FaultPlan
from kubesim.cluster import SimCluster, SimOptions
from tests.eventually import eventually

CUT_WATCHES = """\
seed: 1
rules:
  - name: short-watches
    match: {verb: watch, resource: configmaps, namespace: gap}
    watchCut: {afterEvents: 2}
"""


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[SimCluster]:
    faults = tmp_path / "faults.yaml"
    faults.write_text(CUT_WATCHES)
    c = SimCluster(
        SimOptions(
            kubeconfig=str(tmp_path / "kubeconfig"),
            sim_level="none",
            faults=str(faults),
            bookmark_interval=0.2,
        )
    )
    await c.start()
    yield c
    await c.stop()


@pytest.fixture
async def client(cluster: SimCluster) -> AsyncIterator[Client]:
    c = await Client.connect(cluster.kubeconfig, qps=0, burst=0, metrics=RuntimeMetrics())
    yield c
    await c.close()


def cm(name: str, value: str = "0") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "gap"}, "data": {"v": value}}


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def handler(self) -> FuncHandler:
        def add(o: dict[str, Any]) -> None:
            self.events.append(("add", o["metadata"]["name"], o["data"]["v"]))

        def update(old: dict[str, Any], new: dict[str, Any]) -> None:
            self.events.append(("update", new["metadata"]["name"], new["data"]["v"]))

        def delete(o: dict[str, Any]) -> None:
            self.events.append(("delete", o["metadata"]["name"], o["data"]["v"]))

        return FuncHandler(add, update, delete)

    def has(self, *event: str) -> bool:
        return tuple(event) in self.events


async def test_cut_watch_and_forced_410_lose_no_event(cluster: SimCluster, client: Client) -> None:
    await client.create(NAMESPACES, {"metadata": {"name": "gap"}})
    for name in ("a", "b", "c"):
        await client.create(CONFIGMAPS, cm(name))
    inf = Informer(
        client, CONFIGMAPS, namespace="gap", page_size=2, backoff_initial=0.05, backoff_max=0.2
    )
    rec = Recorder()
    inf.add_event_handler(rec.handler())
    inf.start()
    try:
        assert await inf.wait_for_sync(10)
        assert sorted(rec.events) == [("add", n, "0") for n in "abc"]  # list was paginated
        assert inf.reflector.lists == 1

        # Cut watches (after 2 events each) resume from the last resourceVersion: no relist,
        # nothing lost.
        for i, name in enumerate(("a", "b", "a", "b", "c"), start=1):
            await client.patch(CONFIGMAPS, name, {"data": {"v": str(i)}}, "gap")
        await eventually(lambda: rec.has("update", "c", "5"))
        assert [e for e in rec.events if e[0] == "update"] == [
            ("update", "a", "1"),
            ("update", "b", "2"),
            ("update", "a", "3"),
            ("update", "b", "4"),
            ("update", "c", "5"),
        ]
        assert inf.reflector.watches >= 3
        assert inf.reflector.lists == 1

        # From now on every watch is refused with 410 Gone. The open watch is cut after two
        # more events; resuming it then fails and the informer relists (again and again).
        lists_before = cluster.http.requests.get(("list", "configmaps"), 0)
        cut_plan = cluster.http.faults
        assert cut_plan.counts.get("watch_cut", 0) >= 2
        gone_plan = FaultPlan.from_dict(
            {"rules": [{"match": {"verb": "watch", "resource": "configmaps"}, "gone": {}}]}
        )
        cluster.http.faults = gone_plan
        await client.patch(CONFIGMAPS, "a", {"data": {"v": "6"}}, "gap")
        await client.patch(CONFIGMAPS, "b", {"data": {"v": "7"}}, "gap")
        await eventually(lambda: inf.reflector.lists >= 2)

        # Delete an object while nobody watches: only a relist can reveal it.
        await client.delete(CONFIGMAPS, "c", "gap")
        await eventually(lambda: rec.has("delete", "c", "5"))
        assert inf.last_delete_was_tombstone  # found by diffing a relist, not by a watch
        assert rec.events.count(("delete", "c", "5")) == 1
        assert inf.store.get("gap/c") is None
        assert cluster.http.requests[("list", "configmaps")] > lists_before
        assert gone_plan.counts.get("gone", 0) >= 1

        # Watches work again: events flow from a watch, not only from relists.
        cluster.http.faults = None
        watches = inf.reflector.watches
        await eventually(lambda: inf.reflector.watches > watches)
        await client.create(CONFIGMAPS, cm("d", "8"))
        await eventually(lambda: rec.has("add", "d", "8"))
        assert rec.has("update", "a", "6") and rec.has("update", "b", "7")
        assert sorted(k for k in inf.store.keys()) == ["gap/a", "gap/b", "gap/d"]
    finally:
        await inf.stop()


async def test_bookmarks_keep_resource_version_fresh(cluster: SimCluster, client: Client) -> None:
    await client.create(NAMESPACES, {"metadata": {"name": "quiet"}})
    inf = Informer(client, CONFIGMAPS, namespace="quiet")
    inf.start()
    try:
        assert await inf.wait_for_sync(10)
        start = int(inf.reflector.last_sync_resource_version)
        # Changes elsewhere move the global resourceVersion; bookmarks carry it to us.
        await client.create(NAMESPACES, {"metadata": {"name": "elsewhere"}})
        await eventually(lambda: int(inf.reflector.last_sync_resource_version) > start, within=5)
        assert len(inf.store) == 0
    finally:
        await inf.stop()


async def test_cache_reads_never_hit_the_server(cluster: SimCluster, client: Client) -> None:
    await client.create(NAMESPACES, {"metadata": {"name": "reads"}})
    for i in range(5):
        await client.create(CONFIGMAPS, {"metadata": {"name": f"r{i}", "namespace": "reads"}})
    inf = Informer(client, CONFIGMAPS, namespace="reads")
    inf.start()
    try:
        assert await inf.wait_for_sync(10)
        before = dict(cluster.http.requests)
        for _ in range(100):
            assert len(inf.store.list("reads")) == 5
            assert inf.store.get_by_name("reads", "r3") is not None
        assert dict(cluster.http.requests) == before
    finally:
        await inf.stop()


async def test_429_retry_after_is_honoured(cluster: SimCluster, client: Client) -> None:
    await client.create(NAMESPACES, {"metadata": {"name": "throttled"}})
    cluster.http.faults = FaultPlan.from_dict(
        {
            "rules": [
                {
                    "match": {"verb": "create", "resource": "configmaps"},
                    "error": {"code": 429, "retryAfter": 1},
                }
            ]
        }
    )
    key = ("create", "configmaps")
    before = cluster.http.requests.get(key, 0)
    body = {"metadata": {"name": "t", "namespace": "throttled"}}
    task = asyncio.create_task(client.create(CONFIGMAPS, body))
    await eventually(
        lambda: cluster.http.requests.get(key, 0) == before + 1, within=5, interval=0.005
    )
    first = time.monotonic()
    cluster.http.faults = None  # the retry will be accepted
    created = await asyncio.wait_for(task, 10)
    waited = time.monotonic() - first
    assert created["metadata"]["name"] == "t"
    assert cluster.http.requests[key] == before + 2  # one 429, one success
    assert waited >= 0.95, f"retried after {waited:.3f}s despite Retry-After: 1"
    metrics = client.metrics
    assert metrics is not None
    throttled = metrics.rest_client_requests_total.labels("429", "POST", client.host)
    assert throttled._value.get() == 1


async def test_5xx_retried_only_for_idempotent_calls(cluster: SimCluster, client: Client) -> None:
    await client.create(NAMESPACES, {"metadata": {"name": "flaky"}})
    await client.create(CONFIGMAPS, {"metadata": {"name": "x", "namespace": "flaky"}})
    cluster.http.faults = FaultPlan.from_dict(
        {
            "rules": [
                {"match": {"resource": "configmaps", "namespace": "flaky"}, "error": {"code": 500}}
            ]
        }
    )
    get_key, create_key = ("get", "configmaps"), ("create", "configmaps")
    gets, creates = cluster.http.requests.get(get_key, 0), cluster.http.requests[create_key]
    quick = Client(client.api, qps=0, burst=0, retry=RetryPolicy(max_retries=3, base_backoff=0.01))
    with pytest.raises(ApiError) as err:
        await quick.get(CONFIGMAPS, "x", "flaky")
    assert err.value.status == 500
    assert cluster.http.requests[get_key] == gets + 4  # GET: first try + 3 retries
    with pytest.raises(ApiError):
        await quick.create(CONFIGMAPS, {"metadata": {"name": "y", "namespace": "flaky"}})
    assert cluster.http.requests[create_key] == creates + 1  # POST: never retried on 5xx
    cluster.http.faults = None
