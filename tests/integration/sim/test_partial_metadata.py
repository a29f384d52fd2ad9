"""`Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1`: the simulated API
server answers gets, lists, watches and writes with the objects' metadata only, as
kube-apiserver does (client-go's metadata client; a writer that needs only the new
resourceVersion). Over HTTP, with the project's client and with plain aiohttp."""

from __future__ import annotations

import json
from typing import Any

import aiohttp

from jobset.runtime.client import CONFIGMAPS, JOBS, Client
from kubesim.cluster import SimCluster

PARTIAL = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
# client-go's metadata client: protobuf first (not produced by the simulator), then JSON.
CLIENT_GO = (
    "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,"
    f"{PARTIAL},application/json"
)


async def _call(
    plain_cluster: SimCluster, method: str, path: str, accept: str, body: Any = None
) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {plain_cluster.token}", "Accept": accept}
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, f"{plain_cluster.url}{path}", headers=headers, json=body) as resp,
    ):
        return resp.status, await resp.json(content_type=None)


async def _configmap(plain_cluster: SimCluster, name: str) -> str:
    """Create ConfigMap `name` (data k=v) in default; the collection's path."""
    base = CONFIGMAPS.path("default")
    await _call(
        plain_cluster,
        "POST",
        base,
        "application/json",
        {"metadata": {"name": name}, "data": {"k": "v"}},
    )
    return base


def _is_partial(obj: dict[str, Any], name: str) -> bool:
    return (
        obj["kind"] == "PartialObjectMetadata"
        and obj["apiVersion"] == "meta.k8s.io/v1"
        and obj["metadata"]["name"] == name
        and set(obj) == {"kind", "apiVersion", "metadata"}
    )


async def test_get_create_update_and_list_answer_metadata_only(plain_cluster: SimCluster) -> None:
    base = CONFIGMAPS.path("default")
    status, made = await _call(
        plain_cluster,
        "POST",
        base,
        PARTIAL,
        {"metadata": {"name": "cm", "labels": {"a": "1"}}, "data": {"k": "v"}},
    )
    assert status == 201 and _is_partial(made, "cm") and made["metadata"]["labels"] == {"a": "1"}
    status, got = await _call(plain_cluster, "GET", f"{base}/cm", CLIENT_GO)
    assert status == 200 and _is_partial(got, "cm")
    assert got["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"]

    full = (await _call(plain_cluster, "GET", f"{base}/cm", "application/json"))[1]
    assert full["kind"] == "ConfigMap" and full["data"] == {"k": "v"}
    full["data"] = {"k": "w"}
    status, put = await _call(plain_cluster, "PUT", f"{base}/cm", PARTIAL, full)
    assert status == 200 and _is_partial(put, "cm")
    assert int(put["metadata"]["resourceVersion"]) > int(made["metadata"]["resourceVersion"])
    # The write itself is whole: only the answer is cut down.
    after = (await _call(plain_cluster, "GET", f"{base}/cm", "application/json"))[1]
    assert after["data"] == {"k": "w"}
    assert after["metadata"]["resourceVersion"] == put["metadata"]["resourceVersion"]

    status, listed = await _call(plain_cluster, "GET", base, PARTIAL)
    assert status == 200
    assert (
        listed["kind"] == "PartialObjectMetadataList" and listed["apiVersion"] == "meta.k8s.io/v1"
    )
    assert [_is_partial(i, "cm") for i in listed["items"]] == [True]
    assert listed["metadata"]["resourceVersion"]


async def test_plain_json_first_gets_the_whole_object(plain_cluster: SimCluster) -> None:
    base = await _configmap(plain_cluster, "cm")
    _, got = await _call(plain_cluster, "GET", f"{base}/cm", f"application/json,{PARTIAL}")
    assert got["kind"] == "ConfigMap" and got["data"] == {"k": "v"}


async def test_watch_events_carry_metadata_only(plain_cluster: SimCluster) -> None:
    base = await _configmap(plain_cluster, "w")
    headers = {"Authorization": f"Bearer {plain_cluster.token}", "Accept": PARTIAL}
    url = f"{plain_cluster.url}{base}?watch=true&resourceVersion=0&timeoutSeconds=1"
    async with aiohttp.ClientSession() as session, session.get(url, headers=headers) as resp:
        lines = [json.loads(line) for line in (await resp.read()).splitlines() if line]
    assert [e["type"] for e in lines] == ["ADDED"]
    assert _is_partial(lines[0]["object"], "w")


async def test_client_status_write_answered_with_metadata(plain_cluster: SimCluster) -> None:
    """The controller's status writes (`metadata_only=True`): the new resourceVersion comes
    back, the status is stored whole."""
    async with await Client.connect(plain_cluster.kubeconfig, qps=0, burst=0) as client:
        job = {
            "metadata": {"name": "j"},
            "spec": {
                "suspend": True,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "c", "image": "busybox"}],
                    }
                },
            },
        }
        made = await client.create(JOBS, job, "default")
        written = await client.update_status(
            JOBS, {**made, "status": {"active": 0, "failed": 2}}, metadata_only=True
        )
        assert _is_partial(written, "j")
        assert written["metadata"]["resourceVersion"] != made["metadata"]["resourceVersion"]
        stored = await client.get(JOBS, "j", "default")
        assert stored["status"]["failed"] == 2
        assert stored["metadata"]["resourceVersion"] == written["metadata"]["resourceVersion"]
        whole = await client.update_status(JOBS, {**stored, "status": {"failed": 3}})
        assert whole["kind"] == "Job" and whole["status"]["failed"] == 3
