"""Foreground deletion as kube-apiserver does it: the object always gets `deletionTimestamp`
and the `foregroundDeletion` finalizer, leaf objects too, and the garbage collector lifts the
finalizer once no dependent blocks it."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from kubesim.cluster import SimCluster
from tests.eventually import eventually


async def _call(cluster: SimCluster, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {cluster.token}"}
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, f"{cluster.url}{path}", headers=headers, json=body) as resp,
    ):
        return resp.status, await resp.json(content_type=None)


JOB = {
    "metadata": {"name": "leaf"},
    "spec": {
        "template": {
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}
        }
    },
}


@pytest.mark.parametrize(
    ("collection", "body"),
    [
        pytest.param("/apis/batch/v1/namespaces/default/jobs", JOB, id="job-without-pods"),
        pytest.param(
            "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "leaf"}}, id="configmap"
        ),
    ],
)
async def test_foreground_marks_a_leaf_then_the_gc_removes_it(
    plain_cluster: SimCluster, collection: str, body: dict[str, Any]
) -> None:
    status, _ = await _call(plain_cluster, "POST", collection, body)
    assert status == 201
    options = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"}
    status, deleted = await _call(plain_cluster, "DELETE", f"{collection}/leaf", options)
    assert status == 202  # accepted: the deletion waits for its finalizer
    assert deleted["metadata"]["deletionTimestamp"]
    assert deleted["metadata"]["finalizers"] == ["foregroundDeletion"]
    await eventually(
        lambda: _call(plain_cluster, "GET", f"{collection}/leaf"),
        lambda answer: answer[0] == 404,
        what="the garbage collector to finish the deletion",
    )
