"""Size limits: the Jobs a JobSet and the pods a Job may ask for (not upstream's: upstream
admits any int32 replicas)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from jobset.api import types as t
from jobset.api.validation.errors import ErrorType, FieldError, invalid

__all__ = [
    "DEFAULT_LIMITS",
    "DEFAULT_MAX_JOBS_PER_JOBSET",
    "DEFAULT_MAX_PODS_PER_JOB",
    "MAX_JOBS_FLAG",
    "MAX_PODS_FLAG",
    "UNLIMITED",
    "Limits",
    "validate_limits",
]

# Jobs one JobSet may ask for (the sum of its replicatedJobs' replicas). Every pass of the
# controller over a JobSet costs in proportion to its Jobs, and a tenant chooses that number;
# 100,000 admits the project's largest benchmark (`make bench-large`: 64,000 Jobs in one
# JobSet) with room to spare. Operators raise or lower it with `--max-jobs-per-jobset`.
DEFAULT_MAX_JOBS_PER_JOBSET: Final = 100_000
# Pods one Job may ask for (its parallelism and its completions): Kubernetes' own cap on an
# Indexed Job's parallelism (100,000). `--max-pods-per-job`.
DEFAULT_MAX_PODS_PER_JOB: Final = 100_000

MAX_JOBS_FLAG: Final = "--max-jobs-per-jobset"
MAX_PODS_FLAG: Final = "--max-pods-per-job"


@dataclass(frozen=True)
class Limits:
    """What one JobSet may ask for; None: no limit (upstream's behaviour).

    The controller passes the values of its flags; the webhook (admission) and the
    controller's check of stored JobSets (which may have bypassed the webhook) apply the same.
    """

    max_jobs_per_jobset: int | None = DEFAULT_MAX_JOBS_PER_JOBSET
    max_pods_per_job: int | None = DEFAULT_MAX_PODS_PER_JOB


DEFAULT_LIMITS: Final = Limits()
UNLIMITED: Final = Limits(None, None)


def validate_limits(rjobs: Sequence[Mapping[str, Any]], limits: Limits) -> list[FieldError]:
    errs: list[FieldError] = []
    max_jobs, max_pods = limits.max_jobs_per_jobset, limits.max_pods_per_job
    total = 0
    single = False  # one ReplicatedJob alone is over the limit: that error says it all
    for idx, rjob in enumerate(rjobs):
        path = f"spec.replicatedJobs[{idx}]"
        reps = t.replicas(rjob)
        total += max(0, reps)
        if max_jobs is not None and reps > max_jobs:
            single = True
            errs.append(
                invalid(
                    f"{path}.replicas",
                    reps,
                    f"must be no more than {max_jobs}: a JobSet may have at most {max_jobs} "
                    f"Jobs (the sum of replicas over spec.replicatedJobs; the controller's "
                    f"{MAX_JOBS_FLAG} flag sets this limit)",
                )
            )
        if max_pods is None:
            continue
        job_spec = t.job_spec(rjob)
        for key in ("parallelism", "completions"):
            value = job_spec.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > max_pods:
                errs.append(
                    invalid(
                        f"{path}.template.spec.{key}",
                        value,
                        f"must be no more than {max_pods}: a Job of a JobSet may have at most "
                        f"{max_pods} pods (the controller's {MAX_PODS_FLAG} flag sets this "
                        "limit)",
                    )
                )
    if max_jobs is not None and total > max_jobs and not single:
        errs.append(
            FieldError(
                "spec.replicatedJobs",
                ErrorType.TOO_MANY,
                f"must have at most {max_jobs} Jobs in total (the sum of replicas over "
                f"spec.replicatedJobs; the controller's {MAX_JOBS_FLAG} flag sets this limit)",
                total,
            )
        )
    return errs
