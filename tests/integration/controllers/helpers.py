"""Test helpers: JobSet manifests, polling, and driving child Job status like envtest tests."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar, TypeVar

from jobset.controllers.jobset_controller import JobSetController
from jobset.resources import JOBSETS
from jobset.runtime.client import JOBS, NAMESPACES, PVCS, SERVICES, ApiError, Client, Resource
from kubesim.process import SimProcess
from tests import builders
from tests.builders import rjob  # the shared builder, also imported from here by the tests
from tests.eventually import eventually

T = TypeVar("T")


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def jobset(name: str, *rjobs: dict[str, Any], **spec: Any) -> dict[str, Any]:
    """upstream's testJobSet shape by default: replicated-job-a x1, replicated-job-b x3.

    Unnamed failure-policy rules get the name the defaulting webhook would give them (the
    CRD schema requires one, and these tests run without the webhook).
    """
    for i, rule in enumerate((spec.get("failurePolicy") or {}).get("rules") or []):
        rule.setdefault("name", f"failurePolicyRule{i}")
    return builders.jobset(name, *(rjobs or (rjob("a", 1), rjob("b", 3))), **spec)


def condition(js: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    for cond in (js.get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return cond  # type: ignore[no-any-return]
    return None


def has_condition(js: dict[str, Any], ctype: str, status: str = "True", reason: str = "") -> bool:
    cond = condition(js, ctype)
    return (
        cond is not None
        and cond.get("status") == status
        and (not reason or cond.get("reason") == reason)
    )


@dataclass
class Env:
    """A namespace of the shared sim, a client, and the controller under test."""

    client: Client
    ns: str
    sim: SimProcess
    controller: JobSetController

    NAMESPACES: ClassVar[Resource] = NAMESPACES

    async def create(self, js: dict[str, Any]) -> dict[str, Any]:
        js = {**js, "metadata": {**js["metadata"], "namespace": self.ns}}
        return await self.client.create(JOBSETS, js)

    async def get(self, name: str) -> dict[str, Any]:
        return await self.client.get(JOBSETS, name, self.ns)

    async def jobs(self, jsname: str) -> list[dict[str, Any]]:
        out = await self.client.list(
            JOBS, self.ns, label_selector=f"jobset.sigs.k8s.io/jobset-name={jsname}"
        )
        return sorted(out["items"], key=lambda j: str(j["metadata"]["name"]))

    async def wait_jobs(
        self, jsname: str, n: int, check: Callable[[list[dict[str, Any]]], bool] | None = None
    ) -> list[dict[str, Any]]:
        return await eventually(
            lambda: self.jobs(jsname),
            lambda jobs: len(jobs) == n and (check is None or check(jobs)),
            what=f"{n} jobs of {jsname}",
        )

    async def wait_jobset(
        self, name: str, check: Callable[[dict[str, Any]], bool], what: str = ""
    ) -> dict[str, Any]:
        return await eventually(lambda: self.get(name), check, what=what or f"jobset {name}")

    async def service(self, name: str) -> dict[str, Any] | None:
        try:
            return await self.client.get(SERVICES, name, self.ns)
        except ApiError as err:
            if err.not_found:
                return None
            raise

    async def pvc(self, name: str) -> dict[str, Any] | None:
        try:
            return await self.client.get(PVCS, name, self.ns)
        except ApiError as err:
            if err.not_found:
                return None
            raise

    # -------------------------------------------------------------- driving Job status

    async def patch_job_status(self, job: dict[str, Any], status: dict[str, Any]) -> None:
        await self.client.patch(
            JOBS, job["metadata"]["name"], {"status": status}, self.ns, subresource="status"
        )

    async def fail_job(
        self, job: dict[str, Any], reason: str = "BackoffLimitExceeded", message: str = ""
    ) -> None:
        t = now()
        await self.patch_job_status(
            job,
            {
                "startTime": (job.get("status") or {}).get("startTime") or t,
                "failed": 1,
                "conditions": [
                    {"type": "FailureTarget", "status": "True", "lastTransitionTime": t},
                    {
                        "type": "Failed",
                        "status": "True",
                        "reason": reason,
                        "message": message,
                        "lastTransitionTime": t,
                    },
                ],
            },
        )

    async def complete_job(self, job: dict[str, Any]) -> None:
        t = now()
        n = int(job["spec"].get("completions") or 1)
        await self.patch_job_status(
            job,
            {
                "startTime": (job.get("status") or {}).get("startTime") or t,
                "completionTime": t,
                "succeeded": n,
                "conditions": [
                    {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": t},
                    {"type": "Complete", "status": "True", "lastTransitionTime": t},
                ],
            },
        )

    async def ready_job(self, job: dict[str, Any]) -> None:
        n = int(job["spec"].get("parallelism") or 1)
        await self.patch_job_status(job, {"ready": n, "active": n, "startTime": now()})

    async def remove_finalizers(self, job: dict[str, Any]) -> None:
        try:
            await self.client.patch(
                JOBS, job["metadata"]["name"], {"metadata": {"finalizers": None}}, self.ns
            )
        except ApiError as err:
            if not err.not_found:
                raise
