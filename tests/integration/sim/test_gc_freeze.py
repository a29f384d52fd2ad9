"""`jobset sim` keeps its full collections short: survivors are frozen (kubeutil.gcfreeze),
which its `/debug/gc` shows, behind the API's bearer token."""

from __future__ import annotations

import asyncio

from jobset.runtime.client import CONFIGMAPS, ApiError, Client
from kubesim.process import SimProcess


async def test_the_sim_process_froze_its_start_up_and_keeps_stored_objects_out(
    sim_none: SimProcess,
) -> None:
    async with await Client.connect(str(sim_none.kubeconfig), qps=0, burst=0) as client:
        report = await client.request("GET", "/debug/gc")
        # Once started, a full collection froze the imports and the cluster's components.
        assert report["freezes"] >= 1 and report["frozenObjects"] > 10_000, report
        # ... and collects fully every 2 middle-generation collections (CPython: 10).
        assert report["thresholds"][2] == 2, report

        async def create(i: int) -> None:
            body = {"metadata": {"name": f"gc-{i}", "labels": {"n": str(i)}}, "data": {"k": "v"}}
            await client.create(CONFIGMAPS, body, "default")

        for start in range(0, 1000, 100):
            await asyncio.gather(*(create(i) for i in range(start, start + 100)))
        after = await client.request("GET", "/debug/gc")
    # Each full collection since froze its survivors, stored objects included; without
    # a full collection in between, the frozen set is what start-up left.
    grew = after["collections"][2] > report["collections"][2]
    assert (
        after["freezes"] - report["freezes"] == after["collections"][2] - report["collections"][2]
    )
    assert (after["frozenObjects"] > report["frozenObjects"]) == grew, (report, after)


async def test_debug_gc_needs_the_token(sim_none: SimProcess) -> None:
    async with await Client.connect(str(sim_none.kubeconfig), qps=0, burst=0) as client:
        client.api.configuration.api_key = {}
        client.api.configuration.refresh_api_key_hook = None
        try:
            await client.request("GET", "/debug/gc")
        except ApiError as err:
            assert err.status == 401
        else:
            raise AssertionError("/debug/gc answered without a token")
