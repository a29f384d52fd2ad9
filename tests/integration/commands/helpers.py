"""Writing JobSet status the way the controller would, for tests without a controller."""

from __future__ import annotations

from typing import Any

from jobset.sdk import JOBSETS, JobSetClient


async def set_status(sdk: JobSetClient, name: str, status: dict[str, Any]) -> None:
    await sdk.client.patch(JOBSETS, name, {"status": status}, sdk.namespace, subresource="status")


def condition(ctype: str, reason: str, message: str = "", status: str = "True") -> dict[str, Any]:
    return {
        "type": ctype,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": "2024-05-01T10:00:00Z",
    }


def completed() -> dict[str, Any]:
    return {
        "terminalState": "Completed",
        "conditions": [condition("Completed", "AllJobsCompleted", "jobset completed successfully")],
    }


def failed() -> dict[str, Any]:
    return {
        "terminalState": "Failed",
        "conditions": [
            condition("Failed", "FailedJobs", "jobset failed due to one or more job failures")
        ],
    }
