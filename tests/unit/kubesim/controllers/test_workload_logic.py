"""The pure decisions of the simulated Deployment, ReplicaSet, endpoints and disruption
controllers (kubesim.controllers.rollout / endpoints / disruption), without a server."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.clock import now_rfc3339
from kubesim.controllers import disruption, endpoints, rollout
from kubesim.controllers.rollout import RSState


def deployment(replicas: int = 4, **strategy: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"replicas": replicas, "selector": {"matchLabels": {"app": "a"}}}
    if strategy:
        spec["strategy"] = strategy
    return {"metadata": {"name": "d", "generation": 1}, "spec": spec}


# ------------------------------------------------------------------------- int-or-percent


@pytest.mark.parametrize(
    ("value", "total", "up", "expected"),
    [(3, 10, True, 3), ("25%", 10, True, 3), ("25%", 10, False, 2), ("0%", 7, True, 0),
     ("100%", 3, False, 3), ("33%", 3, True, 1), ("33%", 3, False, 0)], ids=['an integer', 'percent rounded up', 'percent rounded down', 'zero percent', 'all rounded down', 'a third rounded up', 'a third rounded down'])  # fmt: skip
def test_scaled_value_rounding(value: Any, total: int, up: bool, expected: int) -> None:
    assert rollout.scaled_value(value, total, up) == expected


def test_scaled_value_rejects_garbage() -> None:
    for bad in ("25", "x%", True):
        with pytest.raises(rollout.IntOrPercentError):
            rollout.scaled_value(bad, 10, True)


def test_fenceposts_defaults_and_zero_zero() -> None:
    assert rollout.resolve_fenceposts(None, None, 10) == (3, 2)  # 25% up, 25% down
    assert rollout.resolve_fenceposts(0, 0, 10) == (0, 1)  # never both zero
    assert rollout.resolve_fenceposts("0%", "10%", 5) == (0, 1)  # 0.5 rounds down to 0 -> 1
    assert rollout.fenceposts(deployment(type="Recreate")) == (0, 0)
    assert (
        rollout.max_unavailable(
            deployment(4, type="RollingUpdate", rollingUpdate={"maxUnavailable": 9})
        )
        == 4
    )
    assert rollout.max_unavailable(deployment(0)) == 0


# ------------------------------------------------------------------------- hash, revisions


def test_template_hash_is_stable_and_ignores_typed_client_noise() -> None:
    t = {
        "metadata": {"labels": {"app": "a"}},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }
    noisy = {"metadata": {"labels": {"app": "a"}, "creationTimestamp": None},
             "spec": {"containers": [{"name": "c", "image": "i", "resources": {}}]}}  # fmt: skip
    h = rollout.template_hash(t)
    assert h == rollout.template_hash(noisy) and len(h) >= 8
    assert set(h) <= set("bcdfghjklmnpqrstvwxz2456789")
    assert rollout.template_hash(t, 1) != h
    other = {**t, "spec": {"containers": [{"name": "c", "image": "j"}]}}
    assert rollout.template_hash(other) != h
    hashed = {"metadata": {"labels": {"app": "a", rollout.HASH_LABEL: h}}, "spec": t["spec"]}
    assert rollout.equal_ignore_hash(hashed, noisy)
    assert not rollout.equal_ignore_hash(hashed, other)


def test_rs_annotations_copy_the_deployment_and_keep_history() -> None:
    d = deployment(4)
    d["metadata"]["annotations"] = {
        "team": "x",
        rollout.LAST_APPLIED: "{}",
        rollout.REVISION: "7",
    }
    first = rollout.rs_annotations(d, 1)
    assert first == {"team": "x", rollout.REVISION: "1", rollout.DESIRED_REPLICAS: "4",
                     rollout.MAX_REPLICAS: "5"}  # fmt: skip
    reused = rollout.rs_annotations(d, 3, first)
    assert reused[rollout.REVISION] == "3" and reused[rollout.REVISION_HISTORY] == "1"
    assert rollout.rs_annotations(d, 5, reused)[rollout.REVISION_HISTORY] == "1,3"


def test_history_to_delete_keeps_the_limit_of_idle_old_replicasets() -> None:
    def rs(name: str, rev: int, replicas: int = 0) -> dict[str, Any]:
        return {"metadata": {"name": name, "annotations": {rollout.REVISION: str(rev)}},
                "spec": {"replicas": replicas}, "status": {"replicas": replicas}}  # fmt: skip

    olds = [rs("c", 3), rs("a", 1), rs("b", 2), rs("busy", 4, replicas=1)]
    assert rollout.history_to_delete(olds, 1) == ["a", "b"]
    assert rollout.history_to_delete(olds, 10) == []
    assert rollout.history_to_delete(olds, 0) == ["a", "b", "c"]


# ------------------------------------------------------------------------- rollout steps


def simulate(replicas: int, surge: int, unavailable: int, start: int) -> list[tuple[int, int]]:
    """Run a rolling update to completion, pods becoming available at once; returns the
    (old, new) spec replicas after every step."""
    old = RSState("old", start, available=start, created=1.0, status_replicas=start)
    new = RSState("new", 0, created=2.0)
    trace = []
    for _ in range(100):
        changes = rollout.rolling_step(replicas, surge, unavailable, new, [old])
        if not changes:
            break
        o, n = changes.get("old", old.replicas), changes.get("new", new.replicas)
        assert o + n <= replicas + surge
        assert min(o, old.available) + new.available >= replicas - unavailable
        old = RSState("old", o, available=o, created=1.0, status_replicas=o)
        new = RSState("new", n, available=n, created=2.0, status_replicas=n)
        trace.append((o, n))
    return trace


def test_rolling_update_respects_surge_and_unavailable() -> None:
    assert simulate(4, 1, 0, 4) == [(4, 1), (3, 1), (3, 2), (2, 2), (2, 3), (1, 3), (1, 4), (0, 4)]
    trace = simulate(10, 3, 2, 10)
    assert trace[0] == (10, 3) and trace[1] == (5, 3) and trace[-1] == (0, 10)
    assert simulate(3, 0, 1, 3)[0] == (2, 0)  # no surge: an old pod goes first


def test_rolling_step_waits_for_new_pods_to_become_available() -> None:
    old = RSState("old", 4, available=4, status_replicas=4)
    new = RSState("new", 1, available=0, status_replicas=1)
    assert rollout.rolling_step(4, 1, 0, new, [old]) == {}  # nothing more until it is available
    assert rollout.rolling_step(4, 1, 0, RSState("new", 1, available=1), [old]) == {"old": 3}


def test_rolling_step_removes_unhealthy_old_pods_first_and_scales_down_excess() -> None:
    old_broken = RSState("broken", 2, available=0, created=1.0, status_replicas=2)
    old_ok = RSState("ok", 3, available=3, created=2.0, status_replicas=3)
    new = RSState("new", 0, created=3.0)
    # 5 pods already above 4 + 1 surge? 5 == 5: the new RS cannot grow; broken ones go first.
    changes = rollout.rolling_step(4, 1, 1, new, [old_broken, old_ok])
    assert changes["broken"] == 0
    assert rollout.rolling_step(2, 1, 0, RSState("new", 5, available=5), []) == {"new": 2}


def test_old_pods_still_terminating_hold_back_the_surge() -> None:
    old = RSState("old", 3, available=3, status_replicas=4)  # spec went down, a pod still there
    assert rollout.new_rs_replicas(4, 1, RSState("new", 1), [old], True) == 1
    assert (
        rollout.new_rs_replicas(
            4, 1, RSState("new", 1), [RSState("old", 3, status_replicas=3)], True
        )
        == 2
    )


def test_recreate_downs_everything_before_the_new_replicaset() -> None:
    olds = [RSState("a", 2), RSState("b", 0)]
    assert rollout.recreate_step(3, None, olds, True) == ({"a": 0}, False)
    zero = [RSState("a", 0), RSState("b", 0)]
    assert rollout.recreate_step(3, None, zero, True) == ({}, False)  # pods still terminating
    assert rollout.recreate_step(3, None, zero, False) == ({}, True)  # create it now
    assert rollout.recreate_step(3, RSState("n", 0), zero, False) == ({"n": 3}, True)


# ------------------------------------------------------------------------- status


def test_deployment_status_conditions_follow_the_rollout() -> None:
    d = deployment(2)
    now = now_rfc3339(1000.0)
    s1 = rollout.deployment_status(
        d, RSState("n", 2), [], now, 1000.0, new_rs_event=rollout.NEW_RS_CREATED
    )
    assert s1["unavailableReplicas"] == 2 and s1["observedGeneration"] == 1
    conds = {c["type"]: c for c in s1["conditions"]}
    assert conds["Available"]["reason"] == rollout.MIN_UNAVAILABLE
    assert conds["Progressing"]["reason"] == rollout.NEW_RS_CREATED
    assert conds["Progressing"]["message"] == 'Created new replica set "n"'
    d["status"] = s1
    half = RSState("n", 2, available=1, ready=1, status_replicas=2)
    s2 = rollout.deployment_status(d, half, [], now_rfc3339(1001.0), 1001.0)
    conds = {c["type"]: c for c in s2["conditions"]}
    assert conds["Progressing"]["reason"] == rollout.RS_UPDATED
    # 25% of 2 rounds down to 0 unavailable: one available pod of two is not enough
    assert conds["Available"]["reason"] == rollout.MIN_UNAVAILABLE
    d["status"] = s2
    done = RSState("n", 2, available=2, ready=2, status_replicas=2)
    s3 = rollout.deployment_status(d, done, [], now_rfc3339(1002.0), 1002.0)
    prog = {c["type"]: c for c in s3["conditions"]}["Progressing"]
    assert prog["reason"] == rollout.NEW_RS_AVAILABLE
    assert prog["message"] == 'ReplicaSet "n" has successfully progressed.'
    assert (
        s3["updatedReplicas"] == 2 and s3["availableReplicas"] == 2 and rollout.is_complete(d, s3)
    )
    d["status"] = s3
    assert rollout.deployment_status(d, done, [], now_rfc3339(1003.0), 1003.0) == s3  # stable


def test_progress_deadline_exceeded() -> None:
    d = deployment(1)
    d["spec"]["progressDeadlineSeconds"] = 10
    s = rollout.deployment_status(d, RSState("n", 1, status_replicas=1), [], now_rfc3339(1000.0),
                                  1000.0, new_rs_event=rollout.NEW_RS_CREATED)  # fmt: skip
    d["status"] = s
    stuck = RSState("n", 1, status_replicas=1)
    assert rollout.progress_deadline_left(d, 1005.0) == pytest.approx(6.0)
    later = rollout.deployment_status(d, stuck, [], now_rfc3339(1011.0), 1011.0)
    prog = {c["type"]: c for c in later["conditions"]}["Progressing"]
    assert (prog["status"], prog["reason"]) == ("False", rollout.TIMED_OUT)


# ------------------------------------------------------------------------- pods


def pod(name: str, *, node: str = "n1", phase: str = "Running", ready: bool = True,
        ready_at: float = 100.0, created: float = 50.0, restarts: int = 0,
        labels: dict[str, str] | None = None, ip: str = "10.0.0.1", **extra: Any) -> dict[str, Any]:  # fmt: skip
    p: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                     "creationTimestamp": now_rfc3339(created), "labels": labels or {"app": "a"}},
        "spec": {"nodeName": node, "containers": [{"name": "c", "ports": [{"name": "http", "containerPort": 8080}]}]},
        "status": {"phase": phase, "podIP": ip,
                   "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                   "lastTransitionTime": now_rfc3339(ready_at)}],
                   "containerStatuses": [{"restartCount": restarts}]},
    }  # fmt: skip
    if not node:
        del p["spec"]["nodeName"]
    p["metadata"].update(extra)
    return p


def test_pods_to_delete_ranking() -> None:
    pods = [
        pod("old-ready", node="n1", created=1.0, ready_at=10.0),
        pod("unscheduled", node="", phase="Pending", ready=False),
        pod("pending", node="n2", phase="Pending", ready=False),
        pod("not-ready", node="n3", ready=False),
        pod("doubled", node="n1", created=2.0, ready_at=10.0),
        pod("recent", node="n4", created=3.0, ready_at=90.0),
        pod("settled", node="n5", created=3.0, ready_at=20.0),
    ]
    order = [p["metadata"]["name"] for p in rollout.pods_to_delete(pods, len(pods))]
    assert order[:4] == ["unscheduled", "pending", "not-ready", "doubled"]
    assert order.index("recent") < order.index("settled")
    assert rollout.pods_to_delete(pods, 0) == []


def test_availability_needs_min_ready_seconds() -> None:
    p = pod("p", ready_at=100.0)
    assert rollout.pod_available(p, 0, 100.0)
    assert not rollout.pod_available(p, 5, 103.0) and rollout.pod_available(p, 5, 105.0)
    assert rollout.available_in(p, 5, 103.0) == pytest.approx(2.0)
    assert not rollout.pod_available(pod("q", ready=False), 0, 200.0)


def test_replicaset_status_counts_active_pods() -> None:
    rs = {"metadata": {"generation": 3}, "spec": {"minReadySeconds": 10,
          "template": {"metadata": {"labels": {"app": "a"}}}}}  # fmt: skip
    pods = [pod("a", ready_at=0.0), pod("b", ready_at=95.0), pod("c", ready=False),
            pod("gone", deletionTimestamp=now_rfc3339(99.0)), pod("done", phase="Succeeded"),
            pod("odd", labels={"app": "b"}, ready_at=0.0)]  # fmt: skip
    status = rollout.replicaset_status(rs, pods, 100.0)
    assert status == {"replicas": 4, "fullyLabeledReplicas": 3, "readyReplicas": 3,
                      "availableReplicas": 2, "observedGeneration": 3}  # fmt: skip


# ------------------------------------------------------------------------- endpoints


def service(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "svc", "namespace": "ns", "uid": "s"},
            "spec": {"selector": {"app": "a"}, **spec}}  # fmt: skip


def test_endpoint_subsets_split_ready_and_resolve_named_ports() -> None:
    svc = service(ports=[{"name": "web", "port": 80, "targetPort": "http", "protocol": "TCP"},
                         {"name": "raw", "port": 81, "targetPort": 9000, "protocol": "TCP"}])  # fmt: skip
    pods = [pod("a", ip="10.0.0.2"), pod("b", ip="10.0.0.10", ready=False), pod("c", ip="10.0.0.1"),
            pod("d", ip="10.0.0.3", deletionTimestamp="x"), pod("e", ip="")]  # fmt: skip
    (subset,) = endpoints.endpoint_subsets(svc, pods)
    assert [a["ip"] for a in subset["addresses"]] == ["10.0.0.1", "10.0.0.2"]
    assert [a["ip"] for a in subset["notReadyAddresses"]] == ["10.0.0.10"]
    assert subset["addresses"][0]["targetRef"] == {
        "kind": "Pod",
        "namespace": "ns",
        "name": "c",
        "uid": "uid-c",
    }
    assert subset["ports"] == [{"name": "raw", "port": 9000, "protocol": "TCP"},
                               {"name": "web", "port": 8080, "protocol": "TCP"}]  # fmt: skip
    publish = endpoints.endpoint_subsets(
        {**svc, "spec": {**svc["spec"], "publishNotReadyAddresses": True}}, pods
    )
    assert len(publish[0]["addresses"]) == 4  # not-ready and terminating pods too


def test_pods_without_the_named_port_are_left_out() -> None:
    svc = service(ports=[{"name": "m", "port": 90, "targetPort": "metrics", "protocol": "TCP"}])
    assert endpoints.endpoint_subsets(svc, [pod("a")]) == []
    assert endpoints.slice_groups(svc, [pod("a")]) == [([], [])]  # placeholder slice


def test_slices_keep_terminating_endpoints_not_ready() -> None:
    svc = service(ports=[{"port": 80, "targetPort": 8080, "protocol": "TCP"}])
    ((ports, eps),) = endpoints.slice_groups(
        svc, [pod("a", ip="10.0.0.1"), pod("t", ip="10.0.0.2", deletionTimestamp="x")], {"n1": "z1"}
    )
    assert ports == [{"port": 8080, "protocol": "TCP"}]
    assert [e["conditions"] for e in eps] == [
        {"ready": True, "serving": True, "terminating": False},
        {"ready": False, "serving": True, "terminating": True},
    ]
    assert eps[0]["zone"] == "z1" and eps[0]["nodeName"] == "n1"


def test_finished_pods_leave_by_restart_policy() -> None:
    never = pod("x", phase="Failed")
    never["spec"]["restartPolicy"] = "Never"
    assert not endpoints.should_be_in_endpoints(never, False)
    on_failure = pod("y", phase="Failed")
    on_failure["spec"]["restartPolicy"] = "OnFailure"
    assert endpoints.should_be_in_endpoints(on_failure, False)


# ------------------------------------------------------------------------- disruption


def pdb(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "b", "namespace": "ns", "generation": 1},
            "spec": {"selector": {"matchLabels": {"app": "a"}}, **spec}}  # fmt: skip


def test_pdb_status_min_available_and_max_unavailable() -> None:
    pods = [pod("a"), pod("b"), pod("c", ready=False)]
    status, _ = disruption.pdb_status(pdb(minAvailable=1), pods, None, 100.0)
    assert (status["currentHealthy"], status["desiredHealthy"], status["expectedPods"],
            status["disruptionsAllowed"]) == (2, 1, 3, 1)  # fmt: skip
    assert status["conditions"][0]["reason"] == "SufficientPods"
    status, _ = disruption.pdb_status(pdb(maxUnavailable="50%"), pods, 3, 100.0)
    assert (status["desiredHealthy"], status["expectedPods"], status["disruptionsAllowed"]) == (
        1,
        3,
        1,
    )
    status, _ = disruption.pdb_status(pdb(minAvailable="100%"), pods, 3, 100.0)
    assert (
        status["disruptionsAllowed"] == 0
        and status["conditions"][0]["reason"] == "InsufficientPods"
    )
    status, _ = disruption.pdb_status(pdb(maxUnavailable=1), pods, None, 100.0)  # bare pods
    assert status["disruptionsAllowed"] == 0 and status["conditions"][0]["reason"] == "SyncFailed"


def test_recently_disrupted_pods_do_not_count_until_they_expire() -> None:
    budget = pdb(minAvailable=1)
    budget["status"] = {"disruptedPods": {"a": now_rfc3339(90.0), "zz": now_rfc3339(90.0)}}
    status, recheck = disruption.pdb_status(budget, [pod("a"), pod("b")], None, 100.0)
    assert status["currentHealthy"] == 1 and status["disruptedPods"] == {"a": now_rfc3339(90.0)}
    assert recheck == pytest.approx(110.0)
    status, recheck = disruption.pdb_status(budget, [pod("a"), pod("b")], None, 300.0)
    assert status["currentHealthy"] == 2 and "disruptedPods" not in status and recheck is None


def test_budget_exhausted_errors_look_like_kube_apiserver() -> None:
    budget = pdb(minAvailable=2)
    budget["status"] = {
        "observedGeneration": 1,
        "disruptionsAllowed": 0,
        "desiredHealthy": 2,
        "currentHealthy": 2,
    }
    err = disruption.budget_exhausted(budget)
    assert err is not None and err.code == 429 and err.reason == "TooManyRequests"
    assert err.message == "Cannot evict pod as it would violate the pod's disruption budget."
    assert err.to_status()["details"]["causes"] == [
        {
            "reason": "DisruptionBudget",
            "message": "The disruption budget b needs 2 healthy pods and has 2 currently",
        }
    ]
    stale = {**budget, "metadata": {**budget["metadata"], "generation": 2}}
    err = disruption.budget_exhausted(stale)
    assert err is not None and "still being processed" in err.causes[0].message
    assert (
        disruption.budget_exhausted(
            {**budget, "status": {**budget["status"], "disruptionsAllowed": 1}}
        )
        is None
    )
    assert disruption.can_ignore_pdb(pod("p", phase="Pending"))
    assert not disruption.can_ignore_pdb(pod("p"))
