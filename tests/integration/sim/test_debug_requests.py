"""`/debug/requests`: the requests the simulated API server served, by verb and resource and
per client (user agent), read-only and behind the same bearer token as the API."""

from __future__ import annotations

import time
from typing import Any

import aiohttp
import orjson

from jobset.runtime.client import CONFIGMAPS, Client
from kubesim.cluster import SimCluster


async def _get(
    plain_cluster: SimCluster, token: str | None, path: str = "/debug/requests"
) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{plain_cluster.url}{path}", headers=headers) as resp,
    ):
        return resp.status, await resp.json(content_type=None)


async def test_counts_by_verb_resource_and_user_agent(plain_cluster: SimCluster) -> None:
    async with await Client.connect(
        plain_cluster.kubeconfig, qps=0, burst=0, user_agent="bench-client/1.0 (test)"
    ) as client:
        for i in range(3):
            await client.create(CONFIGMAPS, {"metadata": {"name": f"c{i}"}}, "default")
        await client.list(CONFIGMAPS, "default")
        await client.get(CONFIGMAPS, "c0", "default")

    status, body = await _get(plain_cluster, plain_cluster.token)
    assert status == 200
    totals = {(r["verb"], r["resource"]): r["count"] for r in body["requests"]}
    assert totals[("create", "configmaps")] == 3
    mine = {
        (r["verb"], r["resource"]): r["count"]
        for r in body["byUserAgent"]
        if r["userAgent"] == "bench-client"
    }
    assert mine == {
        ("create", "configmaps"): 3,
        ("list", "configmaps"): 1,
        ("get", "configmaps"): 1,
    }


async def test_records_arrival_span_and_body_bytes_per_client(plain_cluster: SimCluster) -> None:
    bodies = [
        orjson.dumps({"metadata": {"name": f"s{i}"}, "data": {"k": "v" * i}}) for i in range(4)
    ]
    async with await Client.connect(
        plain_cluster.kubeconfig, qps=0, burst=0, user_agent="span-client/1.0 (test)"
    ) as client:
        before = time.monotonic()
        for b in bodies:
            await client.request("POST", CONFIGMAPS.path("default"), body=b)
        after = time.monotonic()

    _, body = await _get(plain_cluster, plain_cluster.token)
    (row,) = [
        r for r in body["byUserAgent"] if r["userAgent"] == "span-client" and r["verb"] == "create"
    ]
    # Same clock as this process (CLOCK_MONOTONIC): the first and last arrival lie within
    # the span the client sent in, in order; the bytes are the bodies' sum.
    assert before <= row["first"] < row["last"] <= after
    assert row["bytes"] == sum(len(b) for b in bodies)


async def test_requires_the_token_and_counts_nothing_itself(plain_cluster: SimCluster) -> None:
    status, _ = await _get(plain_cluster, None)
    assert status == 401
    status, body = await _get(plain_cluster, plain_cluster.token)
    assert status == 200
    status, again = await _get(plain_cluster, plain_cluster.token)
    assert again == body  # reading the counters is not a counted request


async def test_scheduler_view_exists_only_where_a_scheduler_runs(plain_cluster: SimCluster) -> None:
    # `--sim-level none` runs no scheduler: nothing to show (the pods level is covered in
    # test_scheduler_cost.py); unauthenticated, the path is refused like the rest.
    status, _ = await _get(plain_cluster, plain_cluster.token, "/debug/scheduler")
    assert status == 404
    status, _ = await _get(plain_cluster, None, "/debug/scheduler")
    assert status == 401
