"""The restart policy: what a failed child Job does to its JobSet, and how restarts count.

Runs only when at least one current child Job has failed (upstream `executeFailurePolicy`):

- no `failurePolicy`: the JobSet fails (`FailedJobs`), naming the earliest failed Job;
- otherwise the first rule that applies (see `failure_rules`, which matches rules to
  failed Jobs) decides the action; no rule applies: `RestartJobSet` with the earliest
  failed Job.

Actions: `FailJobSet`; `RestartJobSet` (fails with `ReachedMaxRestarts` once the counted
restarts reach maxRestarts); `RestartJobSetAndIgnoreMaxRestarts`; and, behind the
`RestartJob` feature gate, `RestartJob` / `RestartJobAndIgnoreMaxRestarts`, which bump one
Job's per-Job attempt so only that Job is recreated. A JobSet restart sets
RestartingJobSet=True (reason `FailurePolicy_<rule>` or `DefaultFailurePolicy`); a per-Job
restart does not touch that condition, as upstream.

The restart itself is only a counter: bumping `status.restarts` makes every current Job
*previous* on the next pass (see `classify`), and those are deleted and recreated. Nothing
is deleted here, so writing the counter is the single commit point of a restart: a crash
before the status write loses the decision (it is made again from the same failed Job), a
crash after it cannot count it twice (the failed Job is then previous, not failed).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jobset.api import constants as c
from jobset.controllers.classify import ChildLists, job_restarts, job_restarts_count_towards_max
from jobset.controllers.conditions import WARNING, StatusUpdate
from jobset.controllers.failure_rules import first_failed_job, first_matching_rule

__all__ = [
    "FailureOutcome",
    "FailurePolicyError",
    "execute_failure_policy",
    "message_with_first_failed_job",
    "total_restarts_count_towards_max",
]

Job = dict[str, Any]


class FailurePolicyError(Exception):
    """The failure policy cannot be applied (e.g. a RestartJob action with the gate off)."""


@dataclass(frozen=True, slots=True)
class FailureOutcome:
    """What the failure policy decided, for logs and metrics."""

    action: str
    job: str
    rule: str | None = None
    failed: bool = False
    restarted_jobset: bool = False
    restarted_job: bool = False


def message_with_first_failed_job(message: str, job_name: str) -> str:
    return f"{message} (first failed job: {job_name})"


def total_restarts_count_towards_max(status: Mapping[str, Any]) -> int:
    """JobSet restarts plus per-Job restarts that count toward maxRestarts."""
    total = int(status.get("restartsCountTowardsMax") or 0)
    for rjs in status.get("replicatedJobsStatus") or []:
        total += sum(int(v) for v in rjs.get("jobRestartsCountTowardsMax") or ())
    return total


def _job_name(job: Mapping[str, Any]) -> str:
    return str(job["metadata"]["name"])


def execute_failure_policy(
    js: Mapping[str, Any], children: ChildLists, update: StatusUpdate, *, restart_job: bool = False
) -> FailureOutcome:
    """Apply the failure policy to `update`; `children.failed` must not be empty."""
    spec = js.get("spec") or {}
    policy: Mapping[str, Any] | None = spec.get("failurePolicy")
    if policy is None:
        first = first_failed_job(children.failed) or children.failed[0]
        update.set_failed(
            c.FAILED_JOBS_REASON,
            message_with_first_failed_job(c.FAILED_JOBS_MESSAGE, _job_name(first)),
        )
        return FailureOutcome("", _job_name(first), failed=True)

    found = first_matching_rule(policy.get("rules") or [], children.failed)
    rule: Mapping[str, Any] | None
    if found is None:
        rule = None
        action = c.RESTART_JOBSET
        job = first_failed_job(children.failed) or children.failed[0]
    else:
        rule, job = found
        action = str(rule.get("action") or "")
    rule_name = str(rule.get("name") or "") if rule is not None else None
    max_restarts = int(policy.get("maxRestarts") or 0)
    name = _job_name(job)

    if action == c.FAIL_JOBSET:
        update.set_failed(
            c.FAIL_JOBSET_ACTION_REASON,
            message_with_first_failed_job(c.FAIL_JOBSET_ACTION_MESSAGE, name),
        )
        return FailureOutcome(action, name, rule_name, failed=True)

    if action in (c.RESTART_JOBSET, c.RESTART_JOBSET_AND_IGNORE_MAX_RESTARTS):
        counts = action == c.RESTART_JOBSET
        if counts and _reached_max(update, max_restarts, restart_job):
            update.set_failed(
                c.REACHED_MAX_RESTARTS_REASON,
                message_with_first_failed_job(c.REACHED_MAX_RESTARTS_MESSAGE, name),
            )
            return FailureOutcome(action, name, rule_name, failed=True)
        if counts:
            reason, message = c.RESTART_JOBSET_ACTION_REASON, c.RESTART_JOBSET_ACTION_MESSAGE
        else:
            reason = c.RESTART_JOBSET_AND_IGNORE_MAX_RESTARTS_ACTION_REASON
            message = c.RESTART_JOBSET_AND_IGNORE_MAX_RESTARTS_ACTION_MESSAGE
        _restart_jobset(
            update, rule_name, counts, reason, message_with_first_failed_job(message, name)
        )
        return FailureOutcome(action, name, rule_name, restarted_jobset=True)

    if action in (c.RESTART_JOB, c.RESTART_JOB_AND_IGNORE_MAX_RESTARTS):
        if not restart_job:
            raise FailurePolicyError(
                f"{action} failure policy action cannot be used when the feature gate "
                f"{c.FEATURE_RESTART_JOB} is disabled"
            )
        counts = action == c.RESTART_JOB
        if counts and total_restarts_count_towards_max(update.status) >= max_restarts:
            update.set_failed(
                c.REACHED_MAX_RESTARTS_REASON,
                message_with_first_failed_job(c.REACHED_MAX_RESTARTS_MESSAGE, name),
            )
            return FailureOutcome(action, name, rule_name, failed=True)
        if counts:
            reason, message = c.RESTART_JOB_ACTION_REASON, c.RESTART_JOB_ACTION_MESSAGE
        else:
            reason = c.RESTART_JOB_AND_IGNORE_MAX_RESTARTS_ACTION_REASON
            message = c.RESTART_JOB_AND_IGNORE_MAX_RESTARTS_ACTION_MESSAGE
        _restart_job(js, update, job, counts)
        update.add_event(WARNING, reason, message_with_first_failed_job(message, name))
        return FailureOutcome(action, name, rule_name, restarted_job=True)

    raise FailurePolicyError(
        f"failed to find a corresponding action for the FailurePolicyRuleAction {action}"
    )


def _reached_max(update: StatusUpdate, max_restarts: int, restart_job: bool) -> bool:
    if restart_job and total_restarts_count_towards_max(update.status) >= max_restarts:
        return True
    return update.restarts_count_towards_max >= max_restarts


def _restart_jobset(
    update: StatusUpdate, rule_name: str | None, counts: bool, event_reason: str, message: str
) -> None:
    update.status["restarts"] = update.restarts + 1
    if counts:
        update.status["restartsCountTowardsMax"] = update.restarts_count_towards_max + 1
    update.changed = True
    reason = (
        c.restarting_reason_for_rule(rule_name)
        if rule_name is not None
        else c.RESTARTING_REASON_DEFAULT_FAILURE_POLICY
    )
    update.set_condition(c.CONDITION_RESTARTING, True, reason, message, WARNING)
    update.add_event(WARNING, event_reason, message)


def _restart_job(js: Mapping[str, Any], update: StatusUpdate, job: Job, counts: bool) -> None:
    labels = (job.get("metadata") or {}).get("labels") or {}
    rjob = labels.get(c.REPLICATED_JOB_NAME_KEY)
    try:
        index = int(labels.get(c.JOB_INDEX_KEY, ""))
    except ValueError:
        raise FailurePolicyError(
            f"failed job {_job_name(job)} has an invalid {c.JOB_INDEX_KEY} label"
        ) from None
    if not rjob:
        raise FailurePolicyError(f"failed job {_job_name(job)} has no {c.REPLICATED_JOB_NAME_KEY}")
    entry = next(
        (s for s in update.status.get("replicatedJobsStatus") or [] if s.get("name") == rjob),
        None,
    )
    restarts = job_restarts(js, update.status, rjob)
    if not 0 <= index < len(restarts):
        raise FailurePolicyError(
            f"failed job {_job_name(job)} has index {index} out of bounds for replicated job "
            f"{rjob} (replicas: {len(restarts)})"
        )
    restarts[index] += 1
    towards = job_restarts_count_towards_max(js, update.status, rjob)
    if counts:
        towards[index] += 1
    if entry is not None:
        entry["jobRestarts"] = restarts
        if counts:
            entry["jobRestartsCountTowardsMax"] = towards
    update.changed = True
