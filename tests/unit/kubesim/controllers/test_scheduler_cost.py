"""The kube-scheduler cost model (kubesim.controllers.scheduler.cost): hand-computed counts of
the evaluations upstream's default profile makes per pod, from real snapshots and real
`schedule()` scans."""

from __future__ import annotations

import random
from typing import Any

import pytest

from kubesim.controllers.scheduler.affinity import PodTerms, pod_terms
from kubesim.controllers.scheduler.cost import (
    ZERO,
    SchedulingCost,
    estimate_feasible,
    kube_scheduler_evaluations,
)
from kubesim.controllers.scheduler.scheduling import FilterScan, schedule
from kubesim.controllers.scheduler.snapshot import ClusterSnapshot
from tests.unit.kubesim.controllers.test_scheduling import (
    JOB_KEY,
    POOL,
    affinity,
    exclusive,
    node,
    pod,
    pools,
    snapshot,
    term,
)


def cost_of(p: dict[str, Any], snap: ClusterSnapshot, seed: int = 0) -> SchedulingCost:
    """Schedule `p` for real (and assume it), returning what kube-scheduler would have paid."""
    scan = FilterScan()
    name, _ = schedule(p, snap, random.Random(seed), scan=scan)
    cost = kube_scheduler_evaluations(p, snap, scan)
    if name is not None:
        snap.assume(p, name)
    return cost


def plain(name: str, **spec: Any) -> dict[str, Any]:
    return pod(name, {"app": "x"}, requests={"cpu": "1"}, **spec)


def anti_only(job: str, index: int) -> dict[str, Any]:
    """A pod that keeps other Jobs out of its pool, without affinity to its own."""
    exprs = [
        {"key": JOB_KEY, "operator": "Exists"},
        {"key": JOB_KEY, "operator": "NotIn", "values": [job]},
    ]
    return pod(f"{job}-{index}", {JOB_KEY: job}, affinity=affinity(anti=[term(POOL, exprs=exprs)]))


# ---------------------------------------------------------------------------------------------
# term counts


def test_pod_terms_counts_every_listed_term() -> None:
    assert pod_terms(plain("a")) == PodTerms()
    assert pod_terms(exclusive("j", 0)) == PodTerms(1, 1, 0, False)
    preferred = {
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "podAffinityTerm": term(POOL, {"a": "b"})},
                {"weight": 2, "podAffinityTerm": term(POOL, {"a": "c"})},
            ]
        },
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "podAffinityTerm": term(POOL, {"a": "d"})}
            ]
        },
    }
    assert pod_terms(plain("p", affinity=preferred)) == PodTerms(0, 0, 3, False)
    assert pod_terms(plain("s", nodeSelector={POOL: "pool-0"})).node_constraint
    required_node: dict[str, Any] = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}
    }
    assert pod_terms(plain("n", affinity=required_node)).node_constraint


def test_bound_counts_follow_binding_finishing_and_removal() -> None:
    snap = pools(2, 2)
    for i in range(3):
        cost_of(exclusive("job0", i), snap)
    cost_of(plain("p"), snap)
    b = snap.bound
    assert (b.pods, b.pods_with_affinity) == (4, 3)
    assert (b.required_affinity_terms, b.required_anti_affinity_terms) == (3, 3)
    finished = {**exclusive("job0", 0), "status": {"phase": "Succeeded"}}
    finished["spec"] = {**finished["spec"], "nodeName": "p0-n0"}
    snap.add_pod(finished)
    snap.remove_pod(plain("p"))
    assert (b.pods, b.pods_with_affinity, b.required_anti_affinity_terms) == (2, 2, 2)


# ---------------------------------------------------------------------------------------------
# hand-computed cases


def test_no_nodes_costs_nothing() -> None:
    assert cost_of(plain("a"), ClusterSnapshot()) == SchedulingCost()


def test_empty_cluster_plain_pod_filters_every_node_with_the_four_base_filters() -> None:
    snap = pools(2, 5)  # 10 nodes: below 100, so kube-scheduler looks for all of them
    cost = cost_of(plain("a"), snap)
    assert cost == SchedulingCost(
        existing_anti_affinity_checks=0,
        incoming_affinity_checks=0,
        prescore_affinity_checks=0,
        nodes_filtered=10,
        filter_calls=40,  # NodeUnschedulable, NodeName, TaintToleration, NodeResourcesFit
        nodes_scored=10,
    )
    assert (cost.affinity_checks, cost.total) == (0, 40)


def test_existing_pods_required_anti_affinity_is_tested_against_every_incoming_pod() -> None:
    snap = pools(4, 2)  # 8 nodes
    for j in range(3):
        cost_of(anti_only(f"job{j}", 0), snap)
    # A plain pod has no job-key label: the three terms are tested, none matches, so the
    # InterPodAffinity filter is skipped.
    cost = cost_of(plain("a"), snap)
    assert cost.existing_anti_affinity_checks == 3
    assert cost.incoming_affinity_checks == 0
    assert (cost.nodes_filtered, cost.filter_calls) == (8, 8 * 4)
    # A pod of a fourth Job is selected by all three terms: the filter runs on every node.
    cost = cost_of(anti_only("job3", 0), snap)
    assert cost.existing_anti_affinity_checks == 3
    assert cost.incoming_affinity_checks == 4 * 1  # 4 bound pods x its one anti term
    assert (cost.nodes_filtered, cost.filter_calls) == (8, 8 * 5)
    assert cost.nodes_scored == 2  # only the last free pool's nodes pass


def test_incoming_affinity_terms_walk_every_bound_pod() -> None:
    snap = pools(3, 4)  # 12 nodes
    for i in range(4):
        cost_of(exclusive("job0", i), snap)
    for i in range(5):
        cost_of(plain(f"p{i}"), snap)
    # 9 bound pods, 4 of them with one required affinity and one anti-affinity term.
    cost = cost_of(exclusive("job1", 0), snap)
    assert cost.existing_anti_affinity_checks == 4
    assert cost.incoming_affinity_checks == 9 * 2
    # The other two pools pass (8 nodes), so PreScore runs: the 4 bound pods' required
    # affinity terms are tested against the incoming pod (hardPodAffinityWeight).
    assert cost.nodes_scored == 8
    assert cost.prescore_affinity_checks == 4
    assert (cost.nodes_filtered, cost.filter_calls) == (12, 12 * 5)
    assert cost.affinity_checks == 4 + 18 + 4
    assert cost.total == 26 + 60


def test_preferred_terms_of_the_incoming_pod_walk_every_bound_pod_in_prescore() -> None:
    snap = pools(2, 2)
    for i in range(3):
        cost_of(plain(f"p{i}"), snap)
    preferred = {
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "podAffinityTerm": term(POOL, {"app": "x"})},
                {"weight": 1, "podAffinityTerm": term(POOL, {"app": "y"})},
            ]
        }
    }
    cost = cost_of(plain("q", affinity=preferred), snap)
    assert cost.prescore_affinity_checks == 3 * 2
    assert cost.incoming_affinity_checks == 0  # preferred terms are not PreFilter's


def test_a_single_feasible_node_skips_scoring() -> None:
    snap = snapshot(node("a", {POOL: "p"}), node("b", {POOL: "q"}))
    for i in range(2):
        cost_of(exclusive("job0", i), snap)
    cost = cost_of(plain("x", nodeSelector={POOL: "q"}), snap)
    assert (cost.nodes_scored, cost.prescore_affinity_checks) == (0, 0)
    assert cost.filter_calls == 2 * 5  # NodeAffinity runs for a nodeSelector


def test_node_selector_pod_costs_every_node_though_the_simulator_looks_at_its_pool() -> None:
    snap = pools(16, 4)  # 64 nodes
    scan = FilterScan()
    p = plain("s", nodeSelector={POOL: "pool-3"})
    schedule(p, snap, random.Random(0), scan=scan)
    assert (scan.candidates, scan.examined, scan.feasible) == (4, 4, 4)
    cost = kube_scheduler_evaluations(p, snap, scan)
    assert (cost.nodes_filtered, cost.filter_calls, cost.nodes_scored) == (64, 64 * 5, 4)


def test_unschedulable_pod_filters_every_node_and_scores_none() -> None:
    snap = pools(2, 2)
    for j in range(2):
        cost_of(exclusive(f"job{j}", 0), snap)
    cost = cost_of(exclusive("job2", 0), snap)
    assert (cost.nodes_filtered, cost.nodes_scored, cost.prescore_affinity_checks) == (4, 0, 0)
    assert cost.existing_anti_affinity_checks == 2
    assert cost.incoming_affinity_checks == 2 * 2


# ---------------------------------------------------------------------------------------------
# percentageOfNodesToScore


def _scan(candidates: int, feasible: int, examined: int | None = None) -> FilterScan:
    return FilterScan(candidates, candidates if examined is None else examined, feasible)


@pytest.mark.parametrize(
    ("nodes", "feasible", "filtered", "scored"),
    [
        # 1,000 nodes: 50 - 1000/125 = 42 % -> look for 420 feasible nodes
        (1000, 1000, 420, 420),
        (1000, 840, 500, 420),  # ceil(420 * 1000 / 840)
        (1000, 300, 1000, 300),  # fewer than 420 exist: every node is filtered
        # 5,000 nodes: 50 - 40 = 10 % -> 500
        (5000, 5000, 500, 500),
        (5000, 20, 5000, 20),  # one 20-node pool pinned by a nodeSelector
        # 20,000 nodes: 50 - 160 < 5 -> the 5 % floor, 1,000
        (20000, 20000, 1000, 1000),
        # 150 nodes: 49 % is 73, below the 100-node minimum
        (150, 150, 100, 100),
    ],
    ids=[
        "1000 nodes all feasible",
        "1000 nodes scaled by density",
        "1000 nodes fewer feasible than wanted",
        "5000 nodes all feasible",
        "5000 nodes one pinned pool",
        "20000 nodes at the 5 percent floor",
        "150 nodes at the 100-node minimum",
    ],
)
def test_filtered_nodes_follow_percentage_of_nodes_to_score(
    nodes: int, feasible: int, filtered: int, scored: int
) -> None:
    snap = snapshot(*(node(f"n{i}", alloc={"cpu": "4", "pods": "10"}) for i in range(nodes)))
    cost = kube_scheduler_evaluations(plain("a"), snap, _scan(nodes, feasible))
    assert (cost.nodes_filtered, cost.nodes_scored) == (filtered, scored)
    assert cost.filter_calls == filtered * 4


def test_estimate_feasible_scales_an_early_stop_by_scan_density() -> None:
    assert estimate_feasible(_scan(1000, 100, examined=250)) == 400
    assert estimate_feasible(_scan(64, 7)) == 7  # examined everything: exact
    assert estimate_feasible(FilterScan()) == 0


def test_costs_add_field_by_field_and_serialise_camel_case() -> None:
    a = SchedulingCost(1, 2, 3, 4, 5, 6, 7)
    total = a + a
    assert total == SchedulingCost(2, 4, 6, 8, 10, 12, 14)
    assert total.as_dict() == {
        "existingAntiAffinityChecks": 2,
        "incomingAffinityChecks": 4,
        "prescoreAffinityChecks": 6,
        "nodesFiltered": 8,
        "filterCalls": 10,
        "nodesScored": 12,
        "volumeBindingChecks": 14,
        "affinityChecks": 12,
        "total": 36,
    }


def test_volume_binding_counts_a_check_per_claim_and_filtered_node() -> None:
    snap = pools(2, 4)
    p = plain("with-claims")
    scan = FilterScan()
    schedule(p, snap, random.Random(0), scan=scan)
    plain_cost = kube_scheduler_evaluations(p, snap, scan)
    cost = kube_scheduler_evaluations(p, snap, scan, claims=2)
    assert cost.volume_binding_checks == 8 * 2
    assert cost.filter_calls == plain_cost.filter_calls + 8  # VolumeBinding's Filter runs
    # A pod VolumeBinding's PreFilter rejects is filtered on no node at all.
    assert kube_scheduler_evaluations(p, snap, scan, claims=2, rejected=True) == ZERO


# ---------------------------------------------------------------------------------------------
# a whole placement, by hand (benchmarks/placement_model.py: 16 Jobs x 8 pods, 16 x 4 nodes)


def test_placement_model_totals_match_the_hand_count() -> None:
    from benchmarks.placement_model import run

    pods, nodes = 16 * 8, 16 * 4
    # none: every pod filters all 64 nodes (fewer than 100) with the 4 base filters.
    assert run("none", 16, 8, 4) == SchedulingCost(0, 0, 0, pods * nodes, pods * nodes * 4, 8192)
    # pinned: NodeAffinity runs too; only the 4 nodes of the pod's pool are scored.
    assert run("pinned", 16, 8, 4) == SchedulingCost(
        0, 0, 0, pods * nodes, pods * nodes * 5, pods * 4
    )
    # affinity: leader k (0..15) finds k bound leaders (each 1 anti + 1 affinity term) and
    # k bound pods; each of the 112 followers finds all 16 leaders bound.
    leaders = sum(range(16))
    cost = run("affinity", 16, 8, 4)
    assert cost.existing_anti_affinity_checks == leaders + 112 * 16
    assert cost.incoming_affinity_checks == 2 * leaders
    assert cost.prescore_affinity_checks == leaders + 112 * 16
    # leaders: InterPodAffinity joins the base filters; followers: NodeAffinity as well.
    assert cost.filter_calls == 16 * nodes * 5 + 112 * nodes * 6
