"""Small helpers the create and update rules share."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jobset.api import constants as c

__all__ = ["gate", "is_indexed"]


def gate(features: Mapping[str, bool] | None, name: str) -> bool:
    if features is not None and name in features:
        return bool(features[name])
    return c.DEFAULT_FEATURE_GATES.get(name, False)


def is_indexed(job_spec: Mapping[str, Any]) -> bool:
    return job_spec.get("completionMode") == c.JOB_COMPLETION_MODE_INDEXED
