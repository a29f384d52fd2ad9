"""What scheduling one pod would cost kube-scheduler, counted rather than done.

The simulated scheduler answers inter-pod (anti-)affinity from per-domain counters
(`snapshot.py`, `affinity._single_key_shape`) and narrows a pinned pod to its domain's nodes,
so its own run time hardly depends on the placement strategy. kube-scheduler does much
more work, and differently for each strategy. To compare strategies on that work,
`kube_scheduler_evaluations()` counts, for one scheduling attempt, the evaluations
kube-scheduler's default profile would make. The counts come from totals the snapshot already
keeps (`ClusterSnapshot.bound`), the pod's own terms and what `schedule()` saw (`FilterScan`),
so costing a pod takes O(1). Nothing is evaluated a second time.

What upstream does for one pod (kubernetes/kubernetes, pkg/scheduler):

- InterPodAffinity PreFilter (`framework/plugins/interpodaffinity/filtering.go`):
  `getExistingAntiAffinityCounts` walks the nodes listed by
  `HavePodsWithRequiredAntiAffinityList()`. For every pod in a node's
  `PodsWithRequiredAntiAffinity` it tests each of that pod's required anti-affinity terms
  against the incoming pod (`appendWithAntiAffinityTerms`), so R tests, where R is the number
  of required anti-affinity terms on bound pods. If the incoming pod has required affinity or
  anti-affinity terms (a and b of them), `getIncomingAffinityAntiAffinityCounts` walks every
  pod of every node and tests it against those terms (`appendWithAffinityTerms`, an all-terms
  test that short-circuits, and `appendWithAntiAffinityTerms`), so up to P x (a + b) tests for
  P bound pods. Both walks build topology-pair counts. PreFilter returns Skip, and Filter does
  not run, when no existing term matched and the pod has no terms.
- Filter (`schedule_one.go`, `findNodesThatPassFilters`): the filter plugins run node by node
  from a rotating start index. The search stops once `numFeasibleNodesToFind` nodes have
  passed, which with the adaptive `percentageOfNodesToScore` is every node below 100 nodes,
  and otherwise max(100, N x max(5, 50 - N/125) %). With F feasible nodes of N, that is N
  nodes when F is below that target K, and about K x N / F nodes when it is not. The filter
  plugins that run on a node: NodeUnschedulable, NodeName, TaintToleration and
  NodeResourcesFit always; NodeAffinity only for a pod with a nodeSelector or a required
  nodeAffinity (otherwise its PreFilter returns Skip, `nodeaffinity/node_affinity.go`);
  InterPodAffinity unless skipped as above; VolumeBinding for a pod with
  PersistentVolumeClaims (`volume_binding_checks` counts one check per claim and node; a
  pod its PreFilter rejects filters no node). The port and topology-spread filters skip
  themselves for the pods the simulator runs, and are not counted.
- PreScore/Score (`interpodaffinity/scoring.go`): skipped when one node or none passed.
  Otherwise PreScore walks the pods of `HavePodsWithAffinityList()` (every pod, if the
  incoming pod has preferred terms). For each pod `processExistingPod` tests the incoming pod's
  preferred terms against it, its required affinity terms against the incoming pod (the
  `hardPodAffinityWeight`, 1 by default) and its preferred terms against the incoming pod.
  That is P x p + H + Q tests. Score then reads those totals once per feasible node, min(F, K)
  nodes.

Approximations, so the figures are read as counts of work, not exact replays: F is the
feasible count `schedule()` found, scaled by its scan density when it stopped early
(`estimate_feasible`). A node counts every filter plugin that would run, although upstream
stops at the first plugin that fails. The parallel filter's overshoot past K is not counted,
and neither is preemption (PostFilter) after a failed attempt.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Final

from kubesim.controllers.scheduler.affinity import pod_terms
from kubesim.controllers.scheduler.scheduling import FilterScan, num_feasible_nodes_to_find
from kubesim.controllers.scheduler.snapshot import ClusterSnapshot

__all__ = [
    "ALWAYS_RUN_FILTERS",
    "ZERO",
    "SchedulingCost",
    "estimate_feasible",
    "kube_scheduler_evaluations",
]

#: NodeUnschedulable, NodeName, TaintToleration, NodeResourcesFit: no PreFilter skips them.
ALWAYS_RUN_FILTERS: Final = 4


@dataclass(frozen=True)
class SchedulingCost:
    """Evaluations kube-scheduler makes for scheduling attempts. One attempt, or a sum of
    them: `+` adds field by field."""

    # PreFilter: bound pods' required anti-affinity terms tested against the incoming pod.
    existing_anti_affinity_checks: int = 0
    # PreFilter: bound pods tested against the incoming pod's required (anti-)affinity terms.
    incoming_affinity_checks: int = 0
    # PreScore: preferred terms, and bound pods' required affinity terms (hard weight).
    prescore_affinity_checks: int = 0
    nodes_filtered: int = 0  # nodes the filter plugins ran on
    filter_calls: int = 0  # filter plugin calls over those nodes
    nodes_scored: int = 0  # feasible nodes scored
    # VolumeBinding Filter: one claim checked against one node (its volume's node affinity,
    # or the volumes that could serve it there).
    volume_binding_checks: int = 0

    @property
    def affinity_checks(self) -> int:
        """Every pod-against-term test, from PreFilter and PreScore."""
        return (
            self.existing_anti_affinity_checks
            + self.incoming_affinity_checks
            + self.prescore_affinity_checks
        )

    @property
    def total(self) -> int:
        """Term tests plus filter plugin calls: the predicate evaluations of the attempt."""
        return self.affinity_checks + self.filter_calls + self.volume_binding_checks

    def __add__(self, other: SchedulingCost) -> SchedulingCost:
        # Spelled out rather than over dataclasses.fields(): the loop adds one per pod.
        return SchedulingCost(
            self.existing_anti_affinity_checks + other.existing_anti_affinity_checks,
            self.incoming_affinity_checks + other.incoming_affinity_checks,
            self.prescore_affinity_checks + other.prescore_affinity_checks,
            self.nodes_filtered + other.nodes_filtered,
            self.filter_calls + other.filter_calls,
            self.nodes_scored + other.nodes_scored,
            self.volume_binding_checks + other.volume_binding_checks,
        )

    def as_dict(self) -> dict[str, Any]:
        """camelCase, the way the simulator's /debug endpoints name their fields."""
        out: dict[str, Any] = {_camel(f.name): getattr(self, f.name) for f in fields(self)}
        out["affinityChecks"] = self.affinity_checks
        out["total"] = self.total
        return out


ZERO: Final = SchedulingCost()


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.capitalize() for w in rest)


def estimate_feasible(scan: FilterScan) -> int:
    """Feasible nodes in the whole cluster, as far as `schedule()` saw them. The count is exact
    when it filtered every candidate (the candidates hold every feasible node). When it
    stopped early, its count is scaled by the share of candidates it examined."""
    if scan.examined >= scan.candidates or scan.examined == 0:
        return scan.feasible
    return max(scan.feasible, round(scan.feasible * scan.candidates / scan.examined))


def kube_scheduler_evaluations(
    pod: Mapping[str, Any],
    snap: ClusterSnapshot,
    scan: FilterScan,
    claims: int = 0,
    rejected: bool = False,
) -> SchedulingCost:
    """The evaluations kube-scheduler's default profile makes to schedule `pod` onto the
    cluster `snap` holds (taken before the pod is assumed), given what `schedule()` saw of it
    (`scan`), the number of PersistentVolumeClaims it mounts (`claims`) and whether the
    VolumeBinding PreFilter rejected it (`rejected`: no node is filtered). See the module
    docstring for the upstream functions each count follows."""
    nodes = len(snap.nodes)
    if not nodes or rejected:
        return ZERO  # the cycle ends before any filter plugin runs
    terms = pod_terms(pod)
    bound = snap.bound
    existing = bound.required_anti_affinity_terms
    own = terms.required_affinity + terms.required_anti_affinity
    incoming = bound.pods * own
    feasible = min(estimate_feasible(scan), nodes)
    target = num_feasible_nodes_to_find(nodes)
    if feasible < target:
        filtered = nodes
    else:
        filtered = min(nodes, -(-target * nodes // feasible))  # ceil(K * N / F)
    plugins = ALWAYS_RUN_FILTERS + terms.node_constraint
    plugins += bool(own or scan.existing_anti_matched)
    plugins += bool(claims)  # VolumeBinding: its PreFilter skips pods without claims
    scored = min(feasible, target)
    if scored <= 1:
        scored = 0
        prescore = 0
    else:
        prescore = bound.pods * terms.preferred + bound.required_affinity_terms
        prescore += bound.preferred_terms
    return SchedulingCost(
        existing_anti_affinity_checks=existing,
        incoming_affinity_checks=incoming,
        prescore_affinity_checks=prescore,
        nodes_filtered=filtered,
        filter_calls=filtered * plugins,
        nodes_scored=scored,
        volume_binding_checks=filtered * claims,
    )
