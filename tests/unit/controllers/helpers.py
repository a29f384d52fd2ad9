"""Builders for planner tests: JobSets as the API server stores them, and their child Jobs."""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from jobset.api.defaulting import default_jobset
from jobset.controllers.jobs import construct_job
from tests import builders


def count_calls(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    """Replace `module.name` with a wrapper that counts its calls (in the returned cell):
    what a pass costs, counted rather than timed."""
    calls = [0]
    original: Callable[..., Any] = getattr(module, name)

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counting)
    return calls


NOW = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
NS = "default"
UID = "11111111-2222-3333-4444-555555555555"


def ts(seconds: float = 0) -> str:
    """A timestamp `seconds` after NOW, in metav1.Time format."""
    return (NOW + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def rjob(
    name: str,
    replicas: int = 1,
    *,
    parallelism: int = 1,
    completions: int | None = 1,
    **extra: Any,
) -> dict[str, Any]:
    return builders.rjob(
        name,
        replicas,
        parallelism=parallelism,
        completions=completions,
        backoff_limit=None,
        group="default",
        **extra,
    )


def jobset(
    *rjobs: dict[str, Any],
    name: str = "js",
    status: dict[str, Any] | None = None,
    annotations: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A defaulted JobSet (as stored after the webhook and the schema defaults)."""
    if spec.get("failurePolicy") is not None:
        spec["failurePolicy"].setdefault("restartStrategy", "Recreate")
    rjobs = rjobs or (rjob("a", 2), rjob("b", 2))
    obj = builders.jobset(
        name,
        *rjobs,
        namespace=NS,
        uid=UID,
        resource_version="7",
        annotations=annotations or None,
        status=status,
        **spec,
    )
    return dict(default_jobset(obj))


def child(
    js: dict[str, Any],
    rjob_name: str,
    index: int,
    *,
    state: str = "active",
    ready: int = 0,
    active: int = 0,
    succeeded: int = 0,
    suspend: bool | None = None,
    reason: str = "BackoffLimitExceeded",
    message: str = "Job has reached the specified backoff limit",
    failed_at: float = 0,
    restart_job: bool = False,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A child Job of `js` as the Job controller would have it."""
    spec_rjob = next(r for r in js["spec"]["replicatedJobs"] if r["name"] == rjob_name)
    job = copy.deepcopy(construct_job(js, spec_rjob, index, restart_job=restart_job))
    job["metadata"]["uid"] = f"uid-{rjob_name}-{index}"
    job["metadata"]["resourceVersion"] = "3"
    if labels:
        job["metadata"]["labels"].update(labels)
    if suspend is not None:
        job["spec"]["suspend"] = suspend
    status: dict[str, Any] = {"ready": ready, "active": active, "succeeded": succeeded}
    if state == "succeeded":
        status["conditions"] = [
            {"type": "Complete", "status": "True", "lastTransitionTime": ts(failed_at)}
        ]
    elif state == "failed":
        status["conditions"] = [
            {
                "type": "Failed",
                "status": "True",
                "reason": reason,
                "message": message,
                "lastTransitionTime": ts(failed_at),
            }
        ]
    job["status"] = status
    return job


def all_children(js: dict[str, Any], **kw: Any) -> list[dict[str, Any]]:
    return [
        child(js, r["name"], i, **kw)
        for r in js["spec"]["replicatedJobs"]
        for i in range(r.get("replicas", 1))
    ]


def cond(js_status: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    for c in js_status.get("conditions") or []:
        if c["type"] == ctype:
            return c  # type: ignore[no-any-return]
    return None
