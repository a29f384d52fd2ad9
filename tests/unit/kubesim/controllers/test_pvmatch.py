"""Which volume serves which claim (`pvmatch`) and what the VolumeBinding filter asks of a
node (`scheduler/volumebinding.py`): pure functions over plain objects."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.controllers.pvmatch import bound_to, find_volume, node_allows
from kubesim.controllers.scheduler.volumebinding import (
    MSG_BIND_CONFLICT,
    MSG_NODE_CONFLICT,
    PodVolumes,
    Unbound,
)


def volume(name: str, size: str = "1Gi", **spec: Any) -> dict[str, Any]:
    labels = spec.pop("labels", {})
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local",
            "volumeMode": "Filesystem",
            **spec,
        },
        "status": {"phase": "Available"},
    }


def claim(size: str = "1Gi", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "c", "namespace": "ns", "uid": "u1"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": size}},
            "storageClassName": "local",
            **spec,
        },
    }


def node(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}}


def pinned(name: str, host: str) -> dict[str, Any]:
    term = {
        "matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [host]}]
    }
    return volume(name, nodeAffinity={"required": {"nodeSelectorTerms": [term]}})


def name_of(pv: Any) -> str | None:
    return None if pv is None else str(pv["metadata"]["name"])


@pytest.mark.parametrize(
    ("volumes", "wanted", "expected"),
    [
        pytest.param(
            [volume("big", "10Gi"), volume("small", "2Gi"), volume("tiny", "500Mi")],
            claim("1Gi"),
            "small",
            id="smallest-that-fits",
        ),
        pytest.param([volume("other", storageClassName="fast")], claim(), None, id="class-differs"),
        pytest.param(
            [volume("rwo")], claim(accessModes=["ReadWriteMany"]), None, id="mode-missing"
        ),
        pytest.param(
            [volume("block", volumeMode="Block")], claim(), None, id="volume-mode-differs"
        ),
        pytest.param(
            [volume("bronze", labels={"tier": "bronze"}), volume("gold", labels={"tier": "gold"})],
            claim(selector={"matchLabels": {"tier": "gold"}}),
            "gold",
            id="selector",
        ),
        pytest.param(
            [volume("a"), volume("named", "5Gi")], claim(volumeName="named"), "named", id="named"
        ),
        pytest.param(
            [
                volume("free"),
                volume("mine", claimRef={"name": "c", "namespace": "ns", "uid": "u1"}),
            ],
            claim(),
            "mine",
            id="pre-bound-wins",
        ),
        pytest.param(
            [volume("theirs", claimRef={"name": "d", "namespace": "ns"})],
            claim(),
            None,
            id="pre-bound-to-another",
        ),
    ],
)
def test_find_volume(
    volumes: list[dict[str, Any]], wanted: dict[str, Any], expected: str | None
) -> None:
    assert name_of(find_volume(wanted, volumes)) == expected


def test_find_volume_on_a_node_skips_volumes_it_cannot_reach() -> None:
    volumes = [pinned("on-a", "a"), pinned("on-b", "b")]
    assert name_of(find_volume(claim(), volumes, node("b"))) == "on-b"
    assert find_volume(claim(), [pinned("on-a", "a")], node("c")) is None
    assert node_allows(volume("anywhere"), node("c"))


def test_filter_bound_volume_affinity_and_unbound_claims() -> None:
    bound = PodVolumes(bound=[pinned("pv", "a")])
    assert bound.reason(node("a")) is None
    assert bound.reason(node("b")) == MSG_NODE_CONFLICT

    static_only = PodVolumes(unbound=[Unbound(claim(), False, "")], volumes=[pinned("pv", "a")])
    assert static_only.reason(node("a")) is None
    assert static_only.reason(node("b")) == MSG_BIND_CONFLICT
    provisioned = PodVolumes(unbound=[Unbound(claim(), True, "")])
    assert provisioned.reason(node("b")) is None
    placed = PodVolumes(unbound=[Unbound(claim(), True, "b")])
    assert placed.reason(node("a")) == MSG_BIND_CONFLICT
    assert placed.reason(node("b")) is None


def test_prebind_binds_a_static_volume_or_selects_the_node() -> None:
    static = PodVolumes(unbound=[Unbound(claim(), True, "")], volumes=[pinned("pv", "a")])
    [(kind, obj, annotations, ref)] = static.bind_writes(node("a"))
    assert (kind, obj["metadata"]["name"]) == ("volume", "pv")
    assert ref is not None and ref["uid"] == "u1"
    [(kind, obj, annotations, ref)] = static.bind_writes(node("b"))
    assert kind == "claim" and ref is None
    assert annotations == {"volume.kubernetes.io/selected-node": "b"}


@pytest.mark.parametrize(
    ("ref", "bound"),
    [
        pytest.param({"namespace": "team-a", "name": "data"}, True, id="same-claim"),
        pytest.param({"namespace": "team-b", "name": "data"}, False, id="other-namespace"),
        pytest.param({"name": "data"}, False, id="no-namespace"),
        pytest.param({"namespace": "team-a", "name": "data", "uid": "u-1"}, True, id="uid"),
        pytest.param({"namespace": "team-a", "name": "data", "uid": "u-2"}, False, id="other-uid"),
    ],
)
def test_a_claim_ref_names_one_claim_by_namespace_name_and_uid(
    ref: dict[str, str], bound: bool
) -> None:
    pv = volume("reserved", claimRef=ref)
    data = {"metadata": {"name": "data", "namespace": "team-a", "uid": "u-1"}, "spec": {}}
    assert bound_to(pv, data) is bound
    named = {**data, "spec": {"volumeName": "reserved"}}
    assert (find_volume(named, [pv]) is pv) is bound
