"""The SDK's async client against a simulated API server (status written by the test)."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from jobset.runtime.client import ApiError
from jobset.sdk import (
    JobSetClient,
    JobSetDeleted,
    JobSetFailed,
    ValidationError,
    WaitTimeout,
    WatchEvent,
    leader_workers,
    multislice,
)

from .helpers import completed, condition, failed, set_status

pytestmark = [pytest.mark.kubectl]


async def test_create_get_list_delete(sdk: JobSetClient) -> None:
    made = await sdk.create(leader_workers("lw", image="busybox", workers=2))
    assert made.namespace == sdk.namespace and made.metadata is not None and made.metadata.uid
    got = await sdk.get("lw")
    assert got.to_dict()["spec"] == made.to_dict()["spec"]
    # the server applied schema defaults; the model kept them
    assert got.spec is not None and got.spec.replicated_jobs is not None
    assert got.spec.replicated_jobs[0].group_name == "default"
    await sdk.create(multislice("ms", image="busybox", slices=2, pods_per_slice=1).to_dict())
    assert sorted(js.name for js in await sdk.list()) == ["lw", "ms"]
    assert sdk.namespace in {js.namespace for js in await sdk.list(all_namespaces=True)}
    await sdk.delete("lw")
    with pytest.raises(ApiError) as info:
        await sdk.get("lw")
    assert info.value.not_found
    with pytest.raises(ApiError, match="already exists"):
        await sdk.create(multislice("ms", image="busybox", slices=2, pods_per_slice=1))


async def test_create_validates_client_side(sdk: JobSetClient) -> None:
    bad = leader_workers("lw", image="busybox", workers=2).to_dict()
    bad["spec"]["successPolicy"] = {"operator": "All", "targetReplicatedJobs": ["nope"]}
    with pytest.raises(ValidationError, match="nope"):
        await sdk.create(bad)
    with pytest.raises(ValueError, match="does not match the namespace"):
        await sdk.create({**bad, "metadata": {"name": "x", "namespace": "other"}}, namespace="mine")
    assert await sdk.list() == []


async def test_watch_reports_current_state_then_changes(sdk: JobSetClient) -> None:
    await sdk.create(leader_workers("lw", image="busybox", workers=2))
    seen: list[WatchEvent] = []

    async def consume() -> None:
        async with contextlib.aclosing(sdk.watch("lw")) as events:
            async for event in events:
                seen.append(event)
                if event.type == "DELETED":
                    return

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.5)
    await set_status(sdk, "lw", {"restarts": 1})
    await asyncio.sleep(0.3)
    await sdk.delete("lw")
    await asyncio.wait_for(task, 30)
    assert [e.type for e in seen] == ["ADDED", "MODIFIED", "DELETED"]
    assert seen[1].jobset.status is not None and seen[1].jobset.status.restarts == 1


async def test_wait_for_conditions_and_terminal_states(sdk: JobSetClient) -> None:
    await sdk.create(leader_workers("lw", image="busybox", workers=2))
    waiter = asyncio.create_task(sdk.wait_for("lw", "Suspended", timeout=30))
    await asyncio.sleep(0.5)
    assert not waiter.done()
    await set_status(sdk, "lw", {"conditions": [condition("Suspended", "SuspendedJobs")]})
    js = await waiter
    assert js.condition_true("Suspended")

    finished = asyncio.create_task(sdk.wait_until_finished("lw", timeout=30))
    await asyncio.sleep(0.3)
    await set_status(sdk, "lw", completed())
    assert (await finished).terminal_state == "Completed"

    await sdk.create(multislice("ms", image="busybox", slices=2, pods_per_slice=1))
    await set_status(sdk, "ms", failed())
    with pytest.raises(JobSetFailed, match="FailedJobs"):
        await sdk.wait_until_finished("ms", timeout=30)
    by_predicate = await sdk.wait_for("ms", lambda j: j.terminal_state == "Failed", timeout=30)
    assert by_predicate.name == "ms"


async def test_wait_for_errors(sdk: JobSetClient) -> None:
    with pytest.raises(ApiError) as info:
        await sdk.wait_for("absent", timeout=5)
    assert info.value.not_found
    await sdk.create(leader_workers("lw", image="busybox", workers=2))
    with pytest.raises(WaitTimeout) as timeout:
        await sdk.wait_for("lw", "Completed", timeout=0.5)
    assert timeout.value.last is not None and timeout.value.last.name == "lw"
    waiter = asyncio.create_task(sdk.wait_for("lw", timeout=30))
    await asyncio.sleep(0.5)
    await sdk.delete("lw")
    with pytest.raises(JobSetDeleted):
        await waiter
