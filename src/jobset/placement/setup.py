"""Wiring of exclusive placement into a `jobset.runtime.Manager`.

`add_placement_controllers(manager)` declares the shared informers placement reads (JobSet
pods with the placement indexes, Nodes, Jobs, JobSets) and the controllers that act on them (the
affinity strategy's pod reconciler, the planned strategy's conflict repair), and builds
the `DomainPlanner` the JobSet reconciler calls. Everything here runs under the manager's
lifecycle: informers on every replica, controllers only on the leader.
"""

from __future__ import annotations

from dataclasses import dataclass

from jobset.placement.caches import PlacementCaches, node_informer, pod_informer
from jobset.placement.planned import DomainPlanner, Wake
from jobset.placement.planned_controller import PlannedPlacementController, enqueue_planned_jobs
from jobset.placement.pod_controller import PodReconciler, enqueue_leaders
from jobset.resources import JOBSETS
from jobset.runtime.cache import strip_managed_fields
from jobset.runtime.client import JOBS
from jobset.runtime.controller import Controller
from jobset.runtime.informer import Informer
from jobset.runtime.manager import Manager
from jobset.runtime.transforms import slim_job

__all__ = ["Placement", "add_placement_controllers"]


@dataclass
class Placement:
    caches: PlacementCaches
    planner: DomainPlanner
    pod_reconciler: PodReconciler
    pod_controller: Controller
    planned_controller: Controller


def _jobs_informer(manager: Manager) -> Informer:
    """The manager's Job informer if the JobSet reconciler already declared it (whatever
    its transform), else one with the runtime's `slim_job`: one Job cache per process."""
    for (resource, _ns, selector), inf in manager.informers.items():
        if resource == JOBS and not selector:
            return inf
    return manager.informer(JOBS, transform=slim_job)


def _jobsets_informer(manager: Manager) -> Informer:
    """The manager's JobSet informer if the JobSet reconciler already declared it, else one
    without managedFields (the reconciler's own transform)."""
    for (resource, _ns, selector), inf in manager.informers.items():
        if resource == JOBSETS and not selector:
            return inf
    return manager.informer(JOBSETS, transform=strip_managed_fields)


def add_placement_controllers(
    manager: Manager, *, wake: Wake | None = None, jobs: Informer | None = None
) -> Placement:
    """Declare placement's informers and controllers on `manager` (call before `run()`,
    after the JobSet reconciler so the Job cache it declared is reused; or pass `jobs`).

    `wake(namespace, jobset)` - "add this JobSet to the JobSet controller's queue" - may
    also be set later on `placement.planner.wake`.
    """
    caches = PlacementCaches(pod_informer(manager), node_informer(manager))
    jobs = jobs or _jobs_informer(manager)
    planner = DomainPlanner(caches.nodes, jobs, _jobsets_informer(manager), wake=wake)
    pod_reconciler = PodReconciler(manager.client, caches)
    pod_controller = manager.controller("pod", pod_reconciler.reconcile)
    pod_controller.watch(caches.pods, enqueue_leaders)
    repair = PlannedPlacementController(manager.client, planner)
    planned_controller = manager.controller("planned-placement", repair.reconcile, concurrency=1)
    planned_controller.watch(jobs, enqueue_planned_jobs)
    return Placement(caches, planner, pod_reconciler, pod_controller, planned_controller)
