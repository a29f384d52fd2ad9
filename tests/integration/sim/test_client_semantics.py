"""API machinery semantics, seen through kubernetes_asyncio (the client the controller uses)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client, config, watch
from kubernetes_asyncio.client.exceptions import ApiException

from kubesim.cluster import SimCluster, SimOptions


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[SimCluster]:
    sim = SimCluster(
        SimOptions(
            kubeconfig=str(tmp_path / "kc"),
            sim_level="none",
            bookmark_interval=0.2,
            history_size=200,
        )
    )
    await sim.start()
    yield sim
    await sim.stop()


@pytest.fixture
async def api(cluster: SimCluster) -> AsyncIterator[client.ApiClient]:
    cfg = client.Configuration()
    await config.load_kube_config(config_file=cluster.kubeconfig, client_configuration=cfg)
    async with client.ApiClient(cfg) as api_client:
        yield api_client


async def _namespace(core: client.CoreV1Api) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    return name


def _cm(name: str, **data: str) -> client.V1ConfigMap:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name), data=data)


async def test_list_then_watch_from_resource_version(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    ns = await _namespace(core)
    await core.create_namespaced_config_map(ns, _cm("before", a="1"))
    listed = await core.list_namespaced_config_map(ns)
    assert [i.metadata.name for i in listed.items] == ["before"]
    rv = listed.metadata.resource_version

    async def change() -> None:
        await asyncio.sleep(0.2)
        await core.create_namespaced_config_map(ns, _cm("after", a="2"))
        await core.patch_namespaced_config_map("before", ns, {"data": {"a": "3"}})
        await core.delete_namespaced_config_map("after", ns)

    task = asyncio.create_task(change())
    seen: list[tuple[str, str]] = []
    w = watch.Watch()
    async with w.stream(
        core.list_namespaced_config_map, ns, resource_version=rv, timeout_seconds=5
    ) as stream:
        async for event in stream:
            seen.append((event["type"], event["object"].metadata.name))
            if len(seen) == 3:
                w.stop()
    await task
    assert seen == [("ADDED", "after"), ("MODIFIED", "before"), ("DELETED", "after")]


async def test_too_old_resource_version_is_410(cluster: SimCluster, api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    ns = await _namespace(core)
    first = await core.create_namespaced_config_map(ns, _cm("c0"))
    old_rv = first.metadata.resource_version
    for i in range(1, 260):  # more changes than the history keeps (200 in this fixture)
        await core.patch_namespaced_config_map("c0", ns, {"data": {"i": str(i)}})
    w = watch.Watch()
    with pytest.raises(ApiException) as err:
        async with w.stream(
            core.list_namespaced_config_map, ns, resource_version=old_rv, timeout_seconds=2
        ) as stream:
            async for _ in stream:
                pass
    assert err.value.status == 410


async def test_stale_update_is_409(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    ns = await _namespace(core)
    created = await core.create_namespaced_config_map(ns, _cm("x", a="1"))
    await core.patch_namespaced_config_map("x", ns, {"data": {"a": "2"}})
    created.data = {"a": "stale"}
    with pytest.raises(ApiException) as err:
        await core.replace_namespaced_config_map("x", ns, created)
    assert err.value.status == 409
    assert "the object has been modified" in str(err.value.body)
    current = await core.read_namespaced_config_map("x", ns)
    assert current.data == {"a": "2"}


async def test_create_twice_is_409_already_exists(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    ns = await _namespace(core)
    await core.create_namespaced_config_map(ns, _cm("dup"))
    with pytest.raises(ApiException) as err:
        await core.create_namespaced_config_map(ns, _cm("dup"))
    assert err.value.status == 409 and '"reason":"AlreadyExists"' in str(err.value.body).replace(
        " ", ""
    )
    with pytest.raises(ApiException) as missing_ns:
        await core.create_namespaced_config_map("no-such-namespace", _cm("dup"))
    assert missing_ns.value.status == 404


async def test_watch_bookmarks_arrive(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    ns = await _namespace(core)
    await core.create_namespaced_config_map(ns, _cm("b"))
    listed = await core.list_namespaced_config_map(ns)
    bookmarks: list[str] = []
    w = watch.Watch()
    async with w.stream(
        core.list_namespaced_config_map,
        ns,
        resource_version=listed.metadata.resource_version,
        allow_watch_bookmarks=True,
        timeout_seconds=3,
    ) as stream:
        async for event in stream:
            if event["type"] == "BOOKMARK":
                bookmarks.append(event["raw_object"]["metadata"]["resourceVersion"])
                if len(bookmarks) == 2:
                    w.stop()
    assert len(bookmarks) == 2 and all(
        int(rv) >= int(listed.metadata.resource_version) for rv in bookmarks
    )


async def test_pagination_with_limit_and_continue(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    ns = await _namespace(core)
    for i in range(25):
        await core.create_namespaced_config_map(ns, _cm(f"p{i:02d}"))
    names: list[str] = []
    token = None
    pages = 0
    while True:
        page = await core.list_namespaced_config_map(ns, limit=10, _continue=token)
        pages += 1
        names += [i.metadata.name for i in page.items]
        token = page.metadata._continue
        if not token:
            break
    assert pages == 3 and names == [f"p{i:02d}" for i in range(25)]


async def test_generation_and_status_subresource(api: client.ApiClient) -> None:
    batch = client.BatchV1Api(api)
    core = client.CoreV1Api(api)
    ns = await _namespace(core)
    job = {
        "metadata": {"name": "j"},
        "spec": {
            "suspend": True,
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}
            },
        },
    }
    created = await batch.create_namespaced_job(ns, job)
    assert created.metadata.generation == 1
    status: dict[str, Any] = {"status": {"active": 2}}
    after_status = await batch.patch_namespaced_job_status("j", ns, status)
    assert after_status.metadata.generation == 1 and after_status.status.active == 2
    # the main resource ignores .status
    ignored = await batch.patch_namespaced_job("j", ns, {"status": {"active": 9}})
    assert ignored.status.active == 2
    bumped = await batch.patch_namespaced_job("j", ns, {"spec": {"parallelism": 3}})
    assert bumped.metadata.generation == 2
