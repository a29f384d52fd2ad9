"""How the simulated endpoints controllers scale (kubesim.controllers.endpointslices and
endpoints.truncate_subsets / endpoints_object), without a server: EndpointSlices of at most
100 endpoints of which a sync rewrites only those that change, and Endpoints truncated to
1,000 addresses with the over-capacity annotation."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import pytest

from kubesim.controllers import endpoints
from kubesim.controllers.endpointslices import SlicePlan, endpoint_key, plan_slices

UID = "svc-uid"
LABELS = {
    "kubernetes.io/service-name": "svc",
    "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
}


def service(*, ports: bool = True, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"selector": {"app": "a"}, **spec}
    if ports:
        body["ports"] = [{"name": "web", "port": 80, "targetPort": 8080, "protocol": "TCP"}]
    else:
        body["clusterIP"] = "None"
    return {"metadata": {"name": "svc", "namespace": "ns", "uid": UID}, "spec": body}


def pod(i: int, *, ready: bool = True) -> dict[str, Any]:
    name = f"p-{i:05d}"
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "labels": {"app": "a"}},
        "spec": {"nodeName": "n1", "containers": [{"name": "c"}]},
        "status": {
            "phase": "Running",
            "podIP": f"10.{i // 65536}.{i // 256 % 256}.{i % 256}",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


_names = itertools.count()


def apply(existing: Sequence[dict[str, Any]], plan: SlicePlan) -> list[dict[str, Any]]:
    """The slices after the controller wrote `plan` (a create gets a generated name)."""
    by_name = {s["metadata"]["name"]: s for s in existing}
    for sl in plan.delete:
        del by_name[sl["metadata"]["name"]]
    for upd in plan.update:
        name = upd.current["metadata"]["name"]
        by_name[name] = slice_obj(name, upd.ports, upd.endpoints)
    for ports, eps in plan.create:
        name = f"svc-{next(_names):05d}"
        by_name[name] = slice_obj(name, ports, eps)
    return list(by_name.values())


def slice_obj(name: str, ports: Any, eps: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": dict(LABELS), "ownerReferences": [{"uid": UID}]},
        "endpoints": eps,
        "ports": ports or None,
    }


def sync(
    existing: Sequence[dict[str, Any]], svc: dict[str, Any], pods: list[dict[str, Any]]
) -> tuple[SlicePlan, list[dict[str, Any]]]:
    plan = plan_slices(existing, endpoints.slice_groups(svc, pods), LABELS, UID)
    return plan, apply(existing, plan)


def names(slices: Sequence[dict[str, Any]]) -> set[str]:
    return {e["targetRef"]["name"] for s in slices for e in s["endpoints"] or ()}


def test_250_endpoints_make_three_slices_of_at_most_100() -> None:
    svc, pods = service(), [pod(i) for i in range(250)]
    plan, slices = sync([], svc, pods)
    assert len(plan.create) == 3 and not plan.update and not plan.delete
    assert sorted(len(s["endpoints"]) for s in slices) == [50, 100, 100]
    assert names(slices) == {p["metadata"]["name"] for p in pods}
    assert all(s["ports"] == [{"name": "web", "port": 8080, "protocol": "TCP"}] for s in slices)
    # Nothing changed: nothing to write.
    assert not sync(slices, svc, pods)[0]


def test_one_more_pod_changes_one_slice_only() -> None:
    svc, pods = service(), [pod(i) for i in range(250)]
    slices = sync([], svc, pods)[1]
    plan, after = sync(slices, svc, [*pods, pod(250)])
    assert not plan.create and not plan.delete and len(plan.update) == 1
    (upd,) = plan.update
    assert len(upd.endpoints) == 51  # the slice with room, not a new one
    assert max(len(s["endpoints"]) for s in after) <= 100


def test_a_slice_with_room_is_filled_before_a_new_one_is_made() -> None:
    svc, pods = service(), [pod(i) for i in range(200)]
    slices = sync([], svc, pods)[1]
    assert sorted(len(s["endpoints"]) for s in slices) == [100, 100]
    # One pod gone from each slice, two new ones: the two touched slices take them.
    gone = {pod(0)["metadata"]["name"], pod(150)["metadata"]["name"]}
    kept = [p for p in pods if p["metadata"]["name"] not in gone]
    plan, after = sync(slices, svc, [*kept, pod(300), pod(301)])
    assert not plan.create and not plan.delete and len(plan.update) == 2
    assert sorted(len(s["endpoints"]) for s in after) == [100, 100]
    # Now full: the next pod needs a new slice, and the full ones are not written.
    plan, after = sync(after, svc, [*kept, pod(300), pod(301), pod(302)])
    assert len(plan.create) == 1 and not plan.update and not plan.delete
    assert sorted(len(s["endpoints"]) for s in after) == [1, 100, 100]


def test_readiness_change_rewrites_only_the_slice_holding_the_pod() -> None:
    svc, pods = service(), [pod(i) for i in range(250)]
    slices = sync([], svc, pods)[1]
    holder = next(
        s for s in slices if "p-00120" in {e["targetRef"]["name"] for e in s["endpoints"]}
    )
    pods[120] = pod(120, ready=False)
    plan, after = sync(slices, svc, pods)
    assert [u.current["metadata"]["name"] for u in plan.update] == [holder["metadata"]["name"]]
    assert not plan.create and not plan.delete
    (ep,) = [e for s in after for e in s["endpoints"] if e["targetRef"]["name"] == "p-00120"]
    assert ep["conditions"] == {"ready": False, "serving": False, "terminating": False}


def test_emptied_slice_is_deleted_and_the_last_one_becomes_the_placeholder() -> None:
    svc, pods = service(), [pod(i) for i in range(250)]
    slices = sync([], svc, pods)[1]
    first = min(slices, key=lambda s: min(endpoint_key(e) for e in s["endpoints"]))
    in_first = names([first])
    rest = [p for p in pods if p["metadata"]["name"] not in in_first]
    plan, after = sync(slices, svc, rest)
    assert [s["metadata"]["name"] for s in plan.delete] == [first["metadata"]["name"]]
    assert not plan.create and not plan.update
    assert names(after) == {p["metadata"]["name"] for p in rest}
    # No pods at all: one slice is kept as the placeholder (updated, not recreated).
    plan, after = sync(after, svc, [])
    assert not plan.create and len(plan.update) == 1 and len(plan.delete) == 1
    (placeholder,) = after
    assert placeholder["endpoints"] == [] and placeholder["ports"] is None
    assert not sync(after, svc, [])[0]  # a placeholder already there is left alone


def test_up_to_100_pods_keep_one_slice_as_before() -> None:
    svc = service()
    plan, slices = sync([], svc, [])
    assert plan.create == [([], [])]  # the placeholder
    plan, slices = sync(slices, svc, [pod(i) for i in range(100)])
    assert len(plan.update) == 1 and not plan.create and not plan.delete
    (only,) = slices
    assert [e["targetRef"]["name"] for e in only["endpoints"]] == [f"p-{i:05d}" for i in range(100)]
    assert only["endpoints"] == endpoints.slice_groups(svc, [pod(i) for i in range(100)])[0][1]


def test_headless_service_without_ports_keeps_no_empty_placeholder() -> None:
    svc = service(ports=False, publishNotReadyAddresses=True)
    slices = sync([], svc, [])[1]
    plan, after = sync(slices, svc, [pod(i) for i in range(200)])
    assert sorted(len(s["endpoints"]) for s in after) == [100, 100]
    assert len(plan.update) == 1 and len(plan.create) == 1  # the placeholder was reused


def test_slices_of_another_service_uid_are_deleted() -> None:
    svc, pods = service(), [pod(i) for i in range(3)]
    stale = slice_obj("svc-old", [{"name": "web", "port": 8080, "protocol": "TCP"}], [])
    stale["metadata"]["ownerReferences"] = [{"uid": "old-uid"}]
    plan, after = sync([stale], svc, pods)
    assert plan.delete == [stale] and len(plan.create) == 1
    assert names(after) == {p["metadata"]["name"] for p in pods}


def test_a_cap_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="max endpoints per slice must be at least 1"):
        plan_slices([], [], LABELS, UID, max_per_slice=0)


# ------------------------------------------------------------------------- Endpoints


def addresses(subsets: list[dict[str, Any]], kind: str = "addresses") -> int:
    return sum(len(s.get(kind) or ()) for s in subsets)


def test_endpoints_over_1000_addresses_are_truncated_and_annotated() -> None:
    svc = service()
    body = endpoints.endpoints_object(svc, [pod(i) for i in range(1200)], None)
    assert body is not None
    assert addresses(body["subsets"]) == 1000
    assert body["metadata"]["annotations"] == {"endpoints.kubernetes.io/over-capacity": "truncated"}
    current = {**body, "metadata": {**body["metadata"], "resourceVersion": "7"}}
    # Pods beyond the cut changing nothing in the kept addresses: nothing to write.
    assert endpoints.endpoints_object(svc, [pod(i) for i in range(1300)], current) is None
    back = endpoints.endpoints_object(svc, [pod(i) for i in range(900)], current)
    assert back is not None and addresses(back["subsets"]) == 900
    assert "annotations" not in back["metadata"]
    assert back["metadata"]["resourceVersion"] == "7"
    assert endpoints.endpoints_object(svc, [pod(i) for i in range(900)], back) is None


def test_other_annotations_survive_the_over_capacity_one() -> None:
    svc = service()
    current = endpoints.endpoints_object(svc, [pod(i) for i in range(1001)], None)
    assert current is not None
    current["metadata"]["annotations"]["team"] = "a"
    back = endpoints.endpoints_object(svc, [pod(i) for i in range(10)], current)
    assert back is not None and back["metadata"]["annotations"] == {"team": "a"}


def test_truncation_keeps_ready_addresses_before_not_ready() -> None:
    pods = [pod(i) for i in range(950)] + [pod(i, ready=False) for i in range(950, 1100)]
    (subset,), truncated = endpoints.truncate_subsets(endpoints.endpoint_subsets(service(), pods))
    assert truncated
    assert len(subset["addresses"]) == 950 and len(subset["notReadyAddresses"]) == 50
    # More ready addresses than fit: every not-ready one goes.
    pods = [pod(i) for i in range(1100)] + [pod(i, ready=False) for i in range(1100, 1110)]
    (subset,), truncated = endpoints.truncate_subsets(endpoints.endpoint_subsets(service(), pods))
    assert truncated and len(subset["addresses"]) == 1000 and "notReadyAddresses" not in subset


def test_truncation_shares_the_room_between_subsets_in_proportion() -> None:
    subsets = [
        {"addresses": [{"ip": f"a{i}"} for i in range(900)], "ports": [{"port": 1}]},
        {"addresses": [{"ip": f"b{i}"} for i in range(300)], "ports": [{"port": 2}]},
    ]
    out, truncated = endpoints.truncate_subsets(subsets)
    # ceil(900 / 1200 * 1000) = 750, then what is left: 250.
    assert truncated and [len(s["addresses"]) for s in out] == [750, 250]
    assert out[0]["addresses"][0] == {"ip": "a0"}  # each subset keeps its first addresses
    assert endpoints.truncate_subsets(subsets, 1200) == (subsets, False)


def test_addresses_sort_numerically_ipv4_first_and_unparsable_last() -> None:
    from kubesim.controllers.endpointslices import ip_sort_key

    ips = ["fd00::2", "10.0.0.10", "not-an-ip", "10.0.0.2", "fd00::10", "9.255.0.1"]
    assert sorted(ips, key=ip_sort_key) == [
        "9.255.0.1",
        "10.0.0.2",
        "10.0.0.10",
        "fd00::2",
        "fd00::10",
        "not-an-ip",
    ]


def _memo_pod(i: int, ready: str = "True") -> dict[str, Any]:
    return {
        "metadata": {"name": f"p{i}", "namespace": "ns", "uid": f"u{i}", "labels": {"a": "b"}},
        "spec": {"nodeName": f"n{i % 3}", "hostname": f"p{i}", "subdomain": "svc"},
        "status": {"podIP": f"10.0.0.{i}", "conditions": [{"type": "Ready", "status": ready}]},
    }


def test_a_sync_reusing_what_the_last_derived_per_pod_writes_the_same() -> None:
    service = {"metadata": {"name": "svc", "namespace": "ns"}, "spec": {"selector": {"a": "b"}}}
    zones = {"n0": "z0", "n1": "z1"}
    pods = [_memo_pod(i) for i in range(1, 40)]
    subsets_memo, slices_memo = endpoints.PodMemo(), endpoints.PodMemo()

    def both(svc: dict[str, Any], ps: list[dict[str, Any]], zs: dict[str, str]) -> Any:
        subsets_memo.start()
        slices_memo.start()
        with_memo = (
            endpoints.endpoint_subsets(svc, ps, subsets_memo),
            endpoints.slice_groups(svc, ps, zs, slices_memo),
        )
        assert with_memo == (
            endpoints.endpoint_subsets(svc, ps),
            endpoints.slice_groups(svc, ps, zs),
        )
        return with_memo

    first = both(service, pods, zones)
    assert both(service, pods, zones) == first
    # A changed pod is a new object: derived again (now not ready), the others reused.
    pods[4] = _memo_pod(5, ready="False")
    subsets, groups = both(service, pods, zones)
    assert [a["ip"] for a in subsets[0]["notReadyAddresses"]] == ["10.0.0.5"]
    assert groups[0][1][4]["conditions"]["ready"] is False
    # A node that moved zone, and a Service replaced by a new object, are seen too.
    _, groups = both(service, pods, {**zones, "n0": "z9"})
    assert {e["zone"] for e in groups[0][1] if e["nodeName"] == "n0"} == {"z9"}
    renamed = {**service, "metadata": {"name": "other", "namespace": "ns"}}
    subsets, _ = both(renamed, pods, zones)
    assert not any("hostname" in a for a in subsets[0]["addresses"])
