"""Unit tests for `jobset sim --nodes SPEC` parsing (kubesim.nodespec)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from kubesim.controllers.scheduler.scheduling import schedule
from kubesim.controllers.scheduler.snapshot import ClusterSnapshot
from kubesim.nodespec import MAX_NODES, NODE_SPEC_HELP, parse_node_spec

POOL = "cloud.google.com/gke-nodepool"
STAMP = "2025-01-01T00:00:00Z"


def names(spec: str) -> list[str]:
    return [n["metadata"]["name"] for n in parse_node_spec(spec, now=STAMP)]


def test_plain_count_is_one_pool_with_default_capacity() -> None:
    nodes = parse_node_spec("16", now=STAMP)
    assert len(nodes) == 16
    first = nodes[0]
    assert first["apiVersion"] == "v1" and first["kind"] == "Node"
    assert first["metadata"]["name"] == "pool-0-node-0"
    assert first["metadata"]["labels"] == {
        "kubernetes.io/hostname": "pool-0-node-0",
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": "amd64",
        POOL: "pool-0",
    }
    status = first["status"]
    assert (
        status["capacity"]
        == status["allocatable"]
        == {
            "cpu": "32",
            "memory": "128Gi",
            "pods": "110",
            "ephemeral-storage": "100Gi",
        }
    )
    ready = [c for c in status["conditions"] if c["type"] == "Ready"]
    assert ready == [
        {
            "type": "Ready",
            "status": "True",
            "lastHeartbeatTime": STAMP,
            "lastTransitionTime": STAMP,
            "reason": "KubeletReady",
            "message": "kubelet is posting ready status",
        }
    ]
    info = status["nodeInfo"]
    assert info["kubeletVersion"].startswith("v1.")
    assert info["architecture"] == "amd64" and info["operatingSystem"] == "linux"
    assert "taints" not in first["spec"]
    assert len({n["status"]["addresses"][0]["address"] for n in nodes}) == 16


def test_pools_shape_and_brief_example() -> None:
    spec = "pools=4x4,label=cloud.google.com/gke-nodepool,cpu=32,memory=128Gi,gpu=8"
    nodes = parse_node_spec(spec, now=STAMP)
    assert len(nodes) == 16
    assert nodes[5]["metadata"]["name"] == "pool-1-node-1"
    by_pool: dict[str, int] = {}
    for n in nodes:
        by_pool[n["metadata"]["labels"][POOL]] = by_pool.get(n["metadata"]["labels"][POOL], 0) + 1
        assert n["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    assert by_pool == {"pool-0": 4, "pool-1": 4, "pool-2": 4, "pool-3": 4}
    assert names("4x4") == names("pools=4x4")


def test_multi_level_topology() -> None:
    nodes = parse_node_spec(
        "2x3x2,label=topology.kubernetes.io/zone,label=example.com/rack", now=STAMP
    )
    assert len(nodes) == 12
    last = nodes[-1]["metadata"]
    assert last["name"] == "pool-1-2-node-1"
    assert last["labels"]["topology.kubernetes.io/zone"] == "pool-1"
    assert last["labels"]["example.com/rack"] == "pool-1-2"
    assert POOL not in last["labels"]


def test_flat_count_with_custom_topology_key() -> None:
    nodes = parse_node_spec("3,label=example.com/rack", now=STAMP)
    assert {n["metadata"]["labels"]["example.com/rack"] for n in nodes} == {"pool-0"}


def test_labels_taints_resources_and_prefixes() -> None:
    spec = (
        "prefix=cpu,4;"
        "prefix=gpu,2x2,nvidia.com/gpu=8,taint=nvidia.com/gpu=present:NoSchedule,"
        "taint=maintenance:PreferNoSchedule,label=cloud.google.com/gke-accelerator=h100,"
        "label=kubernetes.io/arch=arm64;"
        "prefix=tpu,tpu=4,pods=16,1x2,"
        "label=cloud.google.com/gke-tpu-topology=2x2,example.com/fpga=1"
    )
    nodes = {n["metadata"]["name"]: n for n in parse_node_spec(spec, now=STAMP)}
    assert sorted(nodes) == [
        "cpu-0-node-0",
        "cpu-0-node-1",
        "cpu-0-node-2",
        "cpu-0-node-3",
        "gpu-0-node-0",
        "gpu-0-node-1",
        "gpu-1-node-0",
        "gpu-1-node-1",
        "tpu-0-node-0",
        "tpu-0-node-1",
    ]
    gpu = nodes["gpu-1-node-0"]
    assert gpu["spec"]["taints"] == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
        {"key": "maintenance", "effect": "PreferNoSchedule"},
    ]
    assert gpu["metadata"]["labels"]["cloud.google.com/gke-accelerator"] == "h100"
    assert gpu["metadata"]["labels"]["kubernetes.io/arch"] == "arm64"
    assert gpu["status"]["nodeInfo"]["architecture"] == "arm64"
    assert gpu["metadata"]["labels"][POOL] == "gpu-1"
    tpu = nodes["tpu-0-node-1"]["status"]["allocatable"]
    assert tpu["google.com/tpu"] == "4" and tpu["pods"] == "16" and tpu["example.com/fpga"] == "1"
    assert "taints" not in nodes["cpu-0-node-0"]["spec"]


def test_default_prefixes_differ_per_group() -> None:
    assert names("2;1") == ["pool-0-node-0", "pool-0-node-1", "pool1-0-node-0"]


def test_empty_and_zero_specs() -> None:
    assert parse_node_spec("") == []
    assert parse_node_spec("  ") == []
    assert parse_node_spec("0") == []
    assert parse_node_spec("4x0") == []


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("4y4", "'4y4'"),
        ("4x4,foo=1", "unknown key 'foo'"),
        ("4x4,cpu=abc", "'abc' is not a Kubernetes quantity"),
        ("4x4,memory=-1Gi", "must not be negative"),
        ("4x4,taint=a:Bad", "EFFECT"),
        ("4x4,taint=novalue", "EFFECT"),
        ("2x2x2", "2 domain level(s) but 0 label=KEY"),
        ("2x2,label=a,label=b", "1 domain level(s) but 2"),
        ("4x4,,cpu=1", "stray ','"),
        ("4;;4", "group 2 is empty"),
        ("cpu=1", "no node count"),
        ("4,4", "shape is given twice"),
        ("4x4,label=bad key", "not a valid label key"),
        ("4x4,label=a=in valid", "not a valid label value"),
        ("4x4,prefix=Bad_Prefix", "prefix"),
        ("prefix=x,2;prefix=x,2", "give the groups different prefix"),
        (f"{MAX_NODES + 1}", "more than"),
        ("4x4,label=cloud.google.com/gke-nodepool,label=cloud.google.com/gke-nodepool=x", "both"),
    ],
    ids=[
        "'4y4'",
        "unknown key 'foo'",
        "'abc' is not a Kubernetes quantity",
        "must not be negative",
        "EFFECT -> '4x4,taint=a:Bad'",
        "EFFECT -> '4x4,taint=novalue'",
        "2 domain level(s) but 0 label=KEY",
        "1 domain level(s) but 2",
        "stray ','",
        "group 2 is empty",
        "no node count",
        "shape is given twice",
        "not a valid label key",
        "not a valid label value",
        "prefix",
        "give the groups different prefix",
        "more than",
        "both",
    ],
)
def test_errors_name_the_bad_part(spec: str, fragment: str) -> None:
    with pytest.raises(ValueError) as err:
        parse_node_spec(spec, now=STAMP)
    assert fragment in str(err.value)
    assert "--nodes" in str(err.value)


def test_error_names_the_group() -> None:
    with pytest.raises(ValueError, match=r"group 2 \('2x2,gpu=lots'\)"):
        parse_node_spec("4;2x2,gpu=lots")


def test_help_documents_the_grammar() -> None:
    for word in ("pools=", "label=KEY", "taint=", "prefix=", "nvidia.com/gpu", "4x4", ";"):
        assert word in NODE_SPEC_HELP


def test_examples_in_help_parse() -> None:
    lines = NODE_SPEC_HELP.split("Examples:")[1].strip().splitlines()
    examples = [line.strip() for line in lines if line.strip()]
    assert len(examples) >= 5
    for example in examples:
        assert parse_node_spec(example, now=STAMP)


def test_spec_nodes_feed_the_scheduler() -> None:
    snap = ClusterSnapshot()
    for n in parse_node_spec("prefix=cpu,2;prefix=gpu,2x1,gpu=8,taint=nvidia.com/gpu:NoSchedule"):
        snap.add_node(n)
    gpu_pod: dict[str, Any] = {
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {
            "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "8"}}}],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
        },
    }
    placed = []
    for seed in range(2):
        name, _ = schedule(gpu_pod, snap, random.Random(seed))
        assert name is not None and name.startswith("gpu-")
        placed.append(snap.assume({**gpu_pod, "metadata": {"name": f"w{seed}"}}, name))
    assert schedule(gpu_pod, snap, random.Random(0)) == (
        None,
        "0/4 nodes are available: 4 Insufficient nvidia.com/gpu. "
        "preemption: 0/4 nodes are available: 4 No preemption victims found for incoming pod.",
    )
    intolerant = {**gpu_pod, "spec": {**gpu_pod["spec"], "tolerations": []}}
    assert schedule(intolerant, snap, random.Random(0)) == (
        None,
        "0/4 nodes are available: 2 Insufficient nvidia.com/gpu, "
        "2 node(s) had untolerated taint {nvidia.com/gpu: }. "
        "preemption: 0/4 nodes are available: 2 No preemption victims found for incoming pod, "
        "2 Preemption is not helpful for scheduling.",
    )
