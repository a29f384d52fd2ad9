"""A transform keeps cached Jobs small and keeps what a reconcile of their owner reads."""

from __future__ import annotations

import copy
import uuid
from typing import Any

from jobset.api.constants import JOBSET_NAME_KEY
from jobset.placement.caches import decode_pod_event, pod_record
from jobset.runtime.cache import BY_CONTROLLER_UID, deep_sizeof, index_by_controller_uid
from jobset.runtime.client import CONFIGMAPS, JOBS, NAMESPACES, PODS, Client
from jobset.runtime.informer import Informer
from jobset.runtime.transforms import LAST_APPLIED, slim_job
from tests.eventually import eventually


def job(name: str, ns: str, owner_uid: str) -> dict[str, Any]:
    container = {
        "name": "worker",
        "image": "python:3.11",
        "command": ["bash", "-c", "python train.py --epochs 100 && exit 0"],
        "env": [{"name": f"ENV_{i}", "value": f"value-{i}" * 4} for i in range(20)],
        "resources": {"limits": {"cpu": "2", "memory": "4Gi"}},
        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": {"jobset.sigs.k8s.io/jobset-name": "js", "app": "train"},
            "annotations": {LAST_APPLIED: "{...}" * 200, "keep": "me"},
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",  # an owner that exists (else the GC collects the Job)
                    "name": "js",
                    "uid": owner_uid,
                    "controller": True,
                }
            ],
        },
        "spec": {
            "parallelism": 4,
            "completions": 4,
            "completionMode": "Indexed",
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": {"app": "train"}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [container, {**container, "name": "sidecar"}],
                    "volumes": [{"name": "data", "emptyDir": {}}],
                },
            },
        },
    }


async def test_slim_job_transform(client: Client) -> None:
    ns = f"tr-{uuid.uuid4().hex[:6]}"
    await client.create(NAMESPACES, {"metadata": {"name": ns}})
    owner_cm = await client.create(CONFIGMAPS, {"metadata": {"name": "js", "namespace": ns}})
    owner = owner_cm["metadata"]["uid"]
    for i in range(3):
        await client.create(JOBS, job(f"j{i}", ns, owner))
    await client.patch(JOBS, "j0", {"status": {"active": 4}}, ns, subresource="status")

    full = Informer(client, JOBS, namespace=ns)
    slim = Informer(
        client,
        JOBS,
        namespace=ns,
        transform=slim_job,
        indexers={BY_CONTROLLER_UID: index_by_controller_uid},
    )
    for inf in (full, slim):
        inf.start()
    try:
        for inf in (full, slim):
            assert await inf.wait_for_sync(10)
        raw = full.store.get(f"{ns}/j0")
        small = slim.store.get(f"{ns}/j0")
        assert raw is not None and small is not None
        assert raw["metadata"].get("managedFields")  # the server sent them
        assert "managedFields" not in small["metadata"]
        assert "spec" not in small["spec"]["template"]
        assert LAST_APPLIED not in small["metadata"]["annotations"]
        # What a JobSet reconcile reads is still there.
        expect = copy.deepcopy(raw)
        for key in ("name", "namespace", "uid", "resourceVersion", "labels", "ownerReferences"):
            assert small["metadata"][key] == expect["metadata"][key]
        assert small["metadata"]["annotations"]["keep"] == "me"
        for key in ("parallelism", "completions", "completionMode", "backoffLimit", "selector"):
            assert small["spec"][key] == expect["spec"][key]
        assert small["spec"]["template"]["metadata"] == expect["spec"]["template"]["metadata"]
        assert small["status"] == expect["status"] and small["status"]["active"] == 4
        assert len(slim.store.by_index(BY_CONTROLLER_UID, owner)) == 3
        # And it is several times smaller.
        assert deep_sizeof(small) * 3 < deep_sizeof(raw), (deep_sizeof(small), deep_sizeof(raw))
    finally:
        for inf in (full, slim):
            await inf.stop()


def _pod(name: str, ns: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": {JOBSET_NAME_KEY: "js"},
            "annotations": {"keep": "me"},
        },
        "spec": {
            "nodeSelector": {"zone": "z1"},
            "containers": [
                {
                    "name": "c",
                    "image": "busybox",
                    "env": [{"name": f"E{i}", "value": "v"} for i in range(20)],
                }
            ],
        },
    }


async def test_pod_watch_decodes_records(client: Client) -> None:
    """The pod cache's decoder on a real watch: every cached pod, listed or watched, is the
    full pod cut by `pod_record`; watched ones were decoded straight into that shape."""
    ns = f"tr-{uuid.uuid4().hex[:6]}"
    await client.create(NAMESPACES, {"metadata": {"name": ns}})
    await client.create(PODS, _pod("listed", ns), ns)
    decoded = [0]

    def counting(line: bytes) -> dict[str, Any]:
        decoded[0] += 1
        return decode_pod_event(line)

    full = Informer(client, PODS, namespace=ns, label_selector=JOBSET_NAME_KEY)
    slim = Informer(
        client,
        PODS,
        namespace=ns,
        label_selector=JOBSET_NAME_KEY,
        transform=pod_record,
        watch_decode=counting,
    )
    for inf in (full, slim):
        inf.start()
    try:
        for inf in (full, slim):
            assert await inf.wait_for_sync(10)
        await client.create(PODS, _pod("watched", ns), ns)
        status = {"phase": "Running", "containerStatuses": [{"name": "c", "restartCount": 2}]}
        await client.patch(PODS, "watched", {"status": status}, ns, subresource="status")

        def running() -> bool:
            phases = [(i.store.get(f"{ns}/watched") or {}).get("status") for i in (full, slim)]
            return all((s or {}).get("phase") == "Running" for s in phases)

        await eventually(running, within=10, what="the status patch in both caches")
        assert decoded[0] >= 2
        for name in ("listed", "watched"):
            raw = full.store.get(f"{ns}/{name}")
            small = slim.store.get(f"{ns}/{name}")
            assert raw is not None and small is not None
            assert small == pod_record(copy.deepcopy(raw))
            assert "containers" not in small["spec"]
            assert small["spec"]["nodeSelector"] == {"zone": "z1"}
            assert small["metadata"]["annotations"]["keep"] == "me"
            assert deep_sizeof(small) * 2 < deep_sizeof(raw), (deep_sizeof(small), deep_sizeof(raw))
        watched = slim.store.get(f"{ns}/watched")
        assert watched is not None
        assert watched["status"]["containerStatuses"] == [{"name": "c", "restartCount": 2}]
    finally:
        for inf in (full, slim):
            await inf.stop()
