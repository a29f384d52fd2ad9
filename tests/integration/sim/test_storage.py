"""Persistent volumes in the simulated cluster: the StorageClass API, the default `standard`
class with its local-path provisioner, the PV controller's binding and reclaim, the
scheduler's VolumeBinding rules, and claims mounted by real processes (`--run-image`).

Each test starts a `SimCluster` in-process and talks to it over HTTPS with real kubectl;
the file tests run pods as real processes (root needed, as in test_processes.py).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kubesim.cluster import SimCluster, SimOptions
from tests.eventually import eventually

pytestmark = [pytest.mark.kubectl]

REALPOD = Path(__file__).with_name("realpod")
IMAGE = "example.com/web:v1"
# Where the test pods mount their claim: a directory every host has, so the bind mount needs
# no new top-level directory on the host.
MOUNT = "/srv"


class Sim:
    def __init__(self, cluster: SimCluster, kubeconfig: Path) -> None:
        self.cluster = cluster
        self.kubeconfig = kubeconfig

    async def kubectl(self, *args: str, stdin: str = "", check: bool = True) -> str:
        def run() -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                ["kubectl", "--kubeconfig", str(self.kubeconfig), *args],
                input=stdin,
                capture_output=True,
                text=True,
                timeout=60,
            )

        out = await asyncio.to_thread(run)
        if check:
            assert out.returncode == 0, out.stderr
            return out.stdout
        return out.stdout + out.stderr

    async def apply(self, *objs: dict[str, Any]) -> None:
        await self.kubectl(
            "create",
            "-f",
            "-",
            stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}),
        )

    async def get(self, kind: str, name: str) -> dict[str, Any] | None:
        out = await self.kubectl("get", kind, name, "-o", "json", "--ignore-not-found")
        return json.loads(out) if out.strip() else None

    async def jsonpath(self, kind: str, name: str, path: str) -> str:
        return await self.kubectl("get", kind, name, "-o", f"jsonpath={path}")


async def _start(tmp_path: Path, **options: Any) -> AsyncIterator[Sim]:
    kubeconfig = tmp_path / "kubeconfig"
    cluster = SimCluster(
        SimOptions(kubeconfig=str(kubeconfig), nodes="3", time_scale=0.1, **options)
    )
    await cluster.start()
    try:
        yield Sim(cluster, kubeconfig)
    finally:
        await cluster.stop()


@pytest.fixture
async def sim(tmp_path: Path) -> AsyncIterator[Sim]:
    async for s in _start(tmp_path):
        yield s


@pytest.fixture
async def real(tmp_path: Path) -> AsyncIterator[Sim]:
    async for s in _start(tmp_path, run_images={"example.com/web": str(REALPOD)}):
        yield s


def claim(name: str, size: str = "1Gi", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": size}},
            **spec,
        },
    }


def storage_class(name: str, mode: str = "Immediate", reclaim: str = "Delete") -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": "rancher.io/local-path",
        "volumeBindingMode": mode,
        "reclaimPolicy": reclaim,
    }


def pod(name: str, claim_name: str, script: str = "", **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "main",
        "image": IMAGE if script else "busybox",
        "volumeMounts": [{"name": "data", "mountPath": MOUNT}],
    }
    # A simulated pod (no script) runs until deleted.
    container["command"] = ["sh", "-c", script] if script else ["sleep", "3600"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "containers": [container],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}],
            **spec,
        },
    }


def is_dir(path: str) -> bool:
    return os.path.isdir(path)


def exists(path: str) -> bool:
    return os.path.exists(path)


def put(path: str, text: str) -> None:
    Path(path).write_text(text)


async def phase(sim: Sim, kind: str, name: str, want: str) -> None:
    await eventually(
        lambda: sim.jsonpath(kind, name, "{.status.phase}"),
        lambda got: got == want,
        what=f"{kind}/{name} {want}",
    )


# ------------------------------------------------------------------------ binding


async def test_wait_for_first_consumer_provisions_on_the_pods_node(sim: Sim) -> None:
    await sim.apply(claim("data"))
    await eventually(
        lambda: sim.kubectl("get", "events", "--field-selector", "involvedObject.name=data"),
        lambda out: "WaitForFirstConsumer" in out,
    )
    got = await sim.get("pvc", "data")
    assert got is not None
    assert got["spec"]["storageClassName"] == "standard"  # DefaultStorageClass admission
    assert got["status"]["phase"] == "Pending"
    assert await sim.kubectl("get", "pv", "-o", "name") == ""

    await sim.apply(pod("user", "data"))
    await phase(sim, "pod", "user", "Running")
    await phase(sim, "pvc", "data", "Bound")
    node = await sim.jsonpath("pod", "user", "{.spec.nodeName}")
    bound = await sim.get("pvc", "data")
    assert bound is not None
    annotations = bound["metadata"]["annotations"]
    assert annotations["volume.kubernetes.io/selected-node"] == node
    assert annotations["pv.kubernetes.io/bind-completed"] == "yes"
    assert annotations["volume.kubernetes.io/storage-provisioner"] == "rancher.io/local-path"
    pv = await sim.get("pv", bound["spec"]["volumeName"])
    assert pv is not None
    assert pv["status"]["phase"] == "Bound"
    assert pv["spec"]["claimRef"]["uid"] == bound["metadata"]["uid"]
    terms = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"][0]["values"] == [node]
    assert is_dir(pv["spec"]["hostPath"]["path"])
    events = await sim.kubectl("get", "events", "--field-selector", "involvedObject.name=data")
    for reason in ("ExternalProvisioning", "Provisioning", "ProvisioningSucceeded"):
        assert reason in events

    # The local volume pins later pods to its node, whatever else they ask.
    await sim.apply(pod("second", "data"))
    await phase(sim, "pod", "second", "Running")
    assert await sim.jsonpath("pod", "second", "{.spec.nodeName}") == node
    other = "pool-0-node-0" if node != "pool-0-node-0" else "pool-0-node-1"
    await sim.apply(pod("elsewhere", "data", nodeSelector={"kubernetes.io/hostname": other}))
    await eventually(
        lambda: sim.jsonpath("pod", "elsewhere", "{.status.conditions[0].message}"),
        lambda msg: (
            "1 node(s) had volume node affinity conflict" in msg
            and "2 node(s) didn't match Pod's node affinity/selector" in msg
        ),
    )


async def test_immediate_class_binds_without_a_pod(sim: Sim) -> None:
    await sim.apply(storage_class("fast"), claim("now", storageClassName="fast"))
    await phase(sim, "pvc", "now", "Bound")
    name = await sim.jsonpath("pvc", "now", "{.spec.volumeName}")
    pv = await sim.get("pv", name)
    assert pv is not None
    assert "nodeAffinity" not in pv["spec"]  # every simulated node is this host
    assert pv["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"] == (
        "rancher.io/local-path"
    )


async def test_static_volume_binds_by_selector_and_size(sim: Sim) -> None:
    def volume(name: str, size: str, tier: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name, "labels": {"tier": tier}},
            "spec": {
                "capacity": {"storage": size},
                "accessModes": ["ReadWriteOnce", "ReadWriteMany"],
                "hostPath": {"path": f"/tmp/{name}"},
                "storageClassName": "",
            },
        }

    await sim.apply(volume("small", "1Gi", "gold"), volume("big", "10Gi", "gold"))
    await sim.apply(volume("cheap", "1Gi", "bronze"))
    await phase(sim, "pv", "small", "Available")
    await sim.apply(
        claim("pick", "500Mi", storageClassName="", selector={"matchLabels": {"tier": "gold"}})
    )
    await phase(sim, "pvc", "pick", "Bound")
    assert await sim.jsonpath("pvc", "pick", "{.spec.volumeName}") == "small"
    assert await sim.jsonpath("pvc", "pick", "{.status.capacity.storage}") == "1Gi"
    small = await sim.get("pv", "small")
    assert small is not None
    assert small["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
    assert await sim.jsonpath("pv", "big", "{.status.phase}") == "Available"


async def test_volume_pre_bound_in_one_namespace_is_not_bound_in_another(sim: Sim) -> None:
    """A volume pre-bound to team-a/data serves that claim only: team-b/data, naming the
    volume or asking for any, is another claim (its namespace differs) and stays Pending."""
    pv = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": "reserved"},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": "/tmp/reserved"},
            "storageClassName": "",
            "claimRef": {"namespace": "team-a", "name": "data"},
        },
    }
    namespaces = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}
        for n in ("team-a", "team-b")
    ]
    await sim.apply(pv, *namespaces)
    named = claim("data", "1Gi", storageClassName="", volumeName="reserved")
    named["metadata"]["namespace"] = "team-b"
    await sim.apply(named)
    await eventually(
        lambda: sim.kubectl("get", "events", "-n", "team-b", "-o", "jsonpath={.items[*].message}"),
        lambda got: 'volume "reserved" already bound to a different claim.' in got,
        what="FailedBinding event",
    )
    got = await sim.kubectl("get", "pvc", "data", "-n", "team-b", "-o", "jsonpath={.status.phase}")
    assert got == "Pending"
    assert await sim.jsonpath("pv", "reserved", "{.spec.claimRef.namespace}") == "team-a"
    owner = claim("data", "1Gi", storageClassName="")
    owner["metadata"]["namespace"] = "team-a"
    await sim.apply(owner)
    await eventually(
        lambda: sim.kubectl("get", "pvc", "data", "-n", "team-a", "-o", "jsonpath={.status.phase}"),
        lambda got: got == "Bound",
        what="team-a/data Bound",
    )
    assert await sim.jsonpath("pv", "reserved", "{.spec.claimRef.namespace}") == "team-a"
    got = await sim.kubectl("get", "pvc", "data", "-n", "team-b", "-o", "jsonpath={.status.phase}")
    assert got == "Pending"


async def test_static_local_volume_places_its_first_consumer(sim: Sim) -> None:
    local = {
        **storage_class("local-storage", mode="WaitForFirstConsumer"),
        "provisioner": "kubernetes.io/no-provisioner",
    }
    term = {
        "matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": ["pool-0-node-1"]}
        ]
    }
    disk = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": "disk-1"},
        "spec": {
            "capacity": {"storage": "5Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local-storage",
            "local": {"path": "/tmp"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
        },
    }
    await sim.apply(local, disk, claim("fast", storageClassName="local-storage"))
    await phase(sim, "pv", "disk-1", "Available")
    assert await sim.jsonpath("pvc", "fast", "{.status.phase}") == "Pending"
    await sim.apply(pod("consumer", "fast"))
    await phase(sim, "pod", "consumer", "Running")
    assert await sim.jsonpath("pod", "consumer", "{.spec.nodeName}") == "pool-0-node-1"
    await phase(sim, "pvc", "fast", "Bound")
    assert await sim.jsonpath("pvc", "fast", "{.spec.volumeName}") == "disk-1"


async def test_pod_waits_for_a_missing_claim_then_runs(sim: Sim) -> None:
    await sim.apply(pod("waits", "later"))
    message = await eventually(
        lambda: sim.jsonpath("pod", "waits", "{.status.conditions[0].message}"),
        lambda msg: bool(msg),
    )
    assert message == (
        '0/3 nodes are available: persistentvolumeclaim "later" not found. preemption: '
        "0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )
    assert await sim.jsonpath("pod", "waits", "{.spec.nodeName}") == ""
    await sim.apply(claim("later"))
    await phase(sim, "pod", "waits", "Running")
    await phase(sim, "pvc", "later", "Bound")


async def test_unbound_immediate_claim_keeps_the_pod_pending(sim: Sim) -> None:
    await sim.apply(claim("none", storageClassName=""), pod("stuck", "none"))
    await eventually(
        lambda: sim.jsonpath("pod", "stuck", "{.status.conditions[0].message}"),
        lambda msg: msg.startswith(
            "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims."
        ),
    )
    assert await sim.jsonpath("pvc", "none", "{.status.phase}") == "Pending"


async def test_kubectl_get_pvc_pv_sc_columns(sim: Sim) -> None:
    await sim.apply(storage_class("fast"), claim("shown", storageClassName="fast"))
    await phase(sim, "pvc", "shown", "Bound")
    out = await sim.kubectl("get", "pvc,pv,sc")
    headers = [line.split() for line in out.splitlines() if line.startswith("NAME")]
    assert headers == [
        "NAME STATUS VOLUME CAPACITY ACCESS MODES STORAGECLASS VOLUMEATTRIBUTESCLASS AGE".split(),
        (
            "NAME CAPACITY ACCESS MODES RECLAIM POLICY STATUS CLAIM STORAGECLASS "
            "VOLUMEATTRIBUTESCLASS REASON AGE"
        ).split(),
        "NAME PROVISIONER RECLAIMPOLICY VOLUMEBINDINGMODE ALLOWVOLUMEEXPANSION AGE".split(),
    ]
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.strip()}
    volume = await sim.jsonpath("pvc", "shown", "{.spec.volumeName}")
    assert rows["persistentvolumeclaim/shown"][1:7] == [
        "Bound",
        volume,
        "1Gi",
        "RWO",
        "fast",
        "<unset>",
    ]
    assert rows[f"persistentvolume/{volume}"][1:7] == [
        "1Gi",
        "RWO",
        "Delete",
        "Bound",
        "default/shown",
        "fast",
    ]
    assert rows["storageclass.storage.k8s.io/standard"][1:6] == [
        "(default)",
        "rancher.io/local-path",
        "Delete",
        "WaitForFirstConsumer",
        "false",
    ]


@pytest.mark.parametrize(
    ("reclaim", "volume_phase", "kept"),
    [
        pytest.param("Delete", None, False, id="delete-removes-volume-and-data"),
        pytest.param("Retain", "Released", True, id="retain-keeps-released-volume-and-data"),
    ],
)
async def test_reclaim_policy(sim: Sim, reclaim: str, volume_phase: str | None, kept: bool) -> None:
    await sim.apply(storage_class("c", reclaim=reclaim), claim("gone", storageClassName="c"))
    await phase(sim, "pvc", "gone", "Bound")
    volume = await sim.jsonpath("pvc", "gone", "{.spec.volumeName}")
    path = os.path.join(await sim.jsonpath("pv", volume, "{.spec.hostPath.path}"), "keep.txt")
    put(path, "data")  # what a pod would have written there
    await sim.kubectl("delete", "pvc", "gone")
    if volume_phase is None:
        await eventually(lambda: sim.get("pv", volume), lambda pv: pv is None)
    else:
        await phase(sim, "pv", volume, volume_phase)
    assert exists(path) == kept


async def test_a_claim_in_use_is_deleted_only_after_its_pod(sim: Sim) -> None:
    await sim.apply(claim("busy"), pod("holder", "busy"))
    await phase(sim, "pod", "holder", "Running")
    volume = await sim.jsonpath("pvc", "busy", "{.spec.volumeName}")
    assert await sim.jsonpath("pvc", "busy", "{.metadata.finalizers}") == (
        '["kubernetes.io/pvc-protection"]'
    )
    await sim.kubectl("delete", "pvc", "busy", "--wait=false")
    out = await sim.kubectl("get", "pvc", "busy")
    assert "Terminating" in out  # held by the running pod
    assert await sim.jsonpath("pv", volume, "{.status.phase}") == "Bound"
    await sim.kubectl("delete", "pod", "holder")
    await eventually(lambda: sim.get("pvc", "busy"), lambda got: got is None)
    await eventually(lambda: sim.get("pv", volume), lambda got: got is None)


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        pytest.param(
            {**claim("x"), "spec": {"resources": {"requests": {"storage": "1Gi"}}}},
            "spec.accessModes: Required value: at least 1 access mode is required",
            id="claim-without-access-modes",
        ),
        pytest.param(
            {**claim("x"), "spec": {"accessModes": ["ReadWriteOnce"]}},
            "spec.resources[storage]: Required value",
            id="claim-without-storage-request",
        ),
        pytest.param(
            claim("x", accessModes=["ReadWriteSometimes"]),
            'spec.accessModes: Unsupported value: "ReadWriteSometimes": supported values: '
            '"ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"',
            id="claim-unknown-access-mode",
        ),
        pytest.param(
            {**storage_class("x"), "volumeBindingMode": "Later"},
            'volumeBindingMode: Unsupported value: "Later": supported values: "Immediate", '
            '"WaitForFirstConsumer"',
            id="class-unknown-binding-mode",
        ),
        pytest.param(
            {**storage_class("x"), "provisioner": ""},
            "provisioner: Required value",
            id="class-without-provisioner",
        ),
        pytest.param(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": "x"},
                "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]},
            },
            "spec: Required value: must specify a volume type",
            id="volume-without-source",
        ),
    ],
)
async def test_validation_errors(sim: Sim, manifest: dict[str, Any], message: str) -> None:
    out = await sim.kubectl("create", "-f", "-", stdin=json.dumps(manifest), check=False)
    assert message in out


async def test_immutable_fields(sim: Sim) -> None:
    await sim.apply(claim("fixed"))
    out = await sim.kubectl(
        "patch",
        "pvc",
        "fixed",
        "--type=merge",
        "-p",
        json.dumps({"spec": {"accessModes": ["ReadWriteMany"]}}),
        check=False,
    )
    assert (
        "spec: Forbidden: spec is immutable after creation except resources.requests and "
        "volumeAttributesClassName for bound claims"
    ) in out
    out = await sim.kubectl(
        "patch", "sc", "standard", "--type=merge", "-p", '{"provisioner":"other"}', check=False
    )
    assert "provisioner: Forbidden: updates to provisioner are forbidden." in out


# ------------------------------------------------------------------------ files


async def test_real_pods_share_a_claims_files_and_they_outlive_the_pods(real: Sim) -> None:
    await real.apply(claim("shared"))
    await real.apply(pod("writer", "shared", "echo checkpoint-7 > /srv/step; sleep 30"))
    await phase(real, "pod", "writer", "Running")
    node = await real.jsonpath("pod", "writer", "{.spec.nodeName}")
    await real.apply(
        pod("reader", "shared", "while [ ! -s /srv/step ]; do sleep 0.1; done; cat /srv/step")
    )
    await phase(real, "pod", "reader", "Succeeded")
    assert (await real.kubectl("logs", "reader")).strip() == "checkpoint-7"
    assert await real.jsonpath("pod", "reader", "{.spec.nodeName}") == node
    await real.kubectl("delete", "pod", "writer", "reader", "--wait=true")

    await real.apply(pod("later", "shared", "cat /srv/step"))
    await phase(real, "pod", "later", "Succeeded")
    assert (await real.kubectl("logs", "later")).strip() == "checkpoint-7"


async def test_sub_paths_of_one_claim(real: Sim) -> None:
    await real.apply(claim("parts"))
    writer = pod("part-writer", "parts", f"echo mine > {MOUNT}/note")
    writer["spec"]["containers"][0]["volumeMounts"][0]["subPath"] = "run-1"
    await real.apply(writer)
    await phase(real, "pod", "part-writer", "Succeeded")
    # The writer's pod directory goes with it, its subPath bind undone first: never through
    # that bind into the claim's files.
    await real.kubectl("delete", "pod", "part-writer", "--wait=true")
    await real.apply(pod("part-reader", "parts", f"cat {MOUNT}/run-1/note"))
    await phase(real, "pod", "part-reader", "Succeeded")
    assert (await real.kubectl("logs", "part-reader")).strip() == "mine"


async def test_read_only_claim_mount(real: Sim) -> None:
    await real.apply(claim("ro"))
    ro = pod("ro", "ro", "touch /srv/x 2>/dev/null && echo wrote || echo refused")
    ro["spec"]["volumes"][0]["persistentVolumeClaim"]["readOnly"] = True
    await real.apply(ro)
    await phase(real, "pod", "ro", "Succeeded")
    assert (await real.kubectl("logs", "ro")).strip() == "refused"


async def test_claim_data_survives_a_simulator_restart(tmp_path: Path) -> None:
    data_dir = tmp_path / "state"
    first = tmp_path / "first"
    first.mkdir()
    async for sim in _start(
        first, data_dir=str(data_dir), run_images={"example.com/web": str(REALPOD)}
    ):
        await sim.apply(claim("kept"), pod("w", "kept", "echo from-before > /srv/f"))
        await phase(sim, "pod", "w", "Succeeded")
    second = tmp_path / "second"
    second.mkdir()
    async for sim in _start(
        second, data_dir=str(data_dir), run_images={"example.com/web": str(REALPOD)}
    ):
        assert await sim.jsonpath("pvc", "kept", "{.status.phase}") == "Bound"
        await sim.apply(pod("r", "kept", "cat /srv/f"))
        await phase(sim, "pod", "r", "Succeeded")
        assert (await sim.kubectl("logs", "r")).strip() == "from-before"
