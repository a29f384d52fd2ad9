"""Repair for the one way two planned Jobs can end up in one domain: two writers.

Only the leader plans, but a deposed leader may finish a creation it started before
noticing. When the Job cache shows two live Jobs of one JobSet holding one domain at one
priority, every one but the earliest created is deleted (background propagation); the
JobSet reconciler sees it missing and creates it again, and the planner - which now sees
the domain held - gives it another one. Only Jobs the planner trusts (`holdings.py`) are
compared, and only with Jobs of their own JobSet: no Job of another namespace or another
owner, whatever its labels and age, gets a Job deleted here.
"""

from __future__ import annotations

from collections.abc import Iterable

from jobset.placement.planned import DomainPlanner
from jobset.placement.strategy import DOMAIN_KEY
from jobset.runtime.cache import Object
from jobset.runtime.client import JOBS, ApiError, Client
from jobset.runtime.controller import Request, Result
from jobset.runtime.logging import get_logger

__all__ = ["PlannedPlacementController", "enqueue_planned_jobs"]


def enqueue_planned_jobs(job: Object) -> Iterable[Request]:
    meta = job.get("metadata") or {}
    if not (meta.get("labels") or {}).get(DOMAIN_KEY):
        return ()
    return (Request(str(meta.get("namespace") or ""), str(meta["name"])),)


class PlannedPlacementController:
    def __init__(self, client: Client, planner: DomainPlanner) -> None:
        self.client = client
        self.planner = planner
        self.deleted = 0
        self.log = get_logger("planned-placement")

    async def reconcile(self, req: Request) -> Result:
        key = str(req)
        if not self.planner.loses_domain(key):
            return Result()
        job = self.planner.jobs.store.get(key)
        if job is None:
            return Result()
        self.log.warning(
            "deleting a Job that shares its planned domain with an earlier one of its JobSet",
            job=key,
            domain=(job["metadata"].get("labels") or {}).get(DOMAIN_KEY),
        )
        try:
            await self.client.delete(
                JOBS,
                req.name,
                req.namespace,
                propagation_policy="Background",
                uid=job["metadata"].get("uid"),
            )
            self.deleted += 1
        except ApiError as err:
            if not (err.not_found or err.conflict):
                raise
        return Result()
