"""Failure-policy rule matching: which rule applies to which failed Job.

A rule applies to a failed Job (upstream `ruleIsApplicable`) when its reasons are empty or
hold the Job's Failed-condition reason, its message patterns are empty or one matches the
condition message (unanchored search, Go's `regexp.MatchString`), and its targets are
empty or hold the Job's ReplicatedJob. The first rule that applies to any failed Job wins;
among the Jobs it applies to, the earliest failure.

Message patterns are tenant input evaluated on the controller's one event loop: they are
RE2 (`jobset.api.regex`), linear in the message, so `(a+)+$` cannot stall other
namespaces. A pattern Go would not compile never matches and is skipped (logged once), as
upstream does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from jobset.api.regex import compile_go_regexp, go_regexp_error
from jobset.controllers.classify import failed_condition, rjob_name_of
from jobset.runtime.logging import get_logger
from kubeutil.rfc3339 import parse_rfc3339

__all__ = [
    "first_failed_job",
    "first_matching_rule",
    "rule_applies",
]

Job = dict[str, Any]

_log = get_logger("failure-policy")

_warned: set[str] = set()  # invalid patterns already logged (bounded below)


def _compiled(pattern: str) -> Any | None:
    compiled = compile_go_regexp(pattern)
    if compiled is None and pattern not in _warned and len(_warned) < 1024:
        _warned.add(pattern)  # once per pattern, not once per reconcile
        _log.warning(
            "invalid regex for onJobFailureMessagePatterns, skipped",
            pattern=pattern[:200],
            error=go_regexp_error(pattern),
        )
    return compiled


def _any_pattern_matches(patterns: Sequence[str], message: str) -> bool:
    for pattern in patterns:
        compiled = _compiled(pattern)
        if compiled is not None and compiled.search(message) is not None:
            return True
    return False


def rule_applies(rule: Mapping[str, Any], job: Mapping[str, Any]) -> bool:
    """Whether a failure-policy rule applies to this failed Job."""
    cond = failed_condition(job)
    if cond is None:
        return False
    reasons = rule.get("onJobFailureReasons") or []
    if reasons and cond.get("reason", "") not in reasons:
        return False
    patterns = rule.get("onJobFailureMessagePatterns") or []
    if patterns and not _any_pattern_matches(patterns, str(cond.get("message") or "")):
        return False
    rjob = rjob_name_of(job)
    if not rjob:
        return False
    targets = rule.get("targetReplicatedJobs") or []
    return not targets or rjob in targets


def _failure_time(job: Mapping[str, Any]) -> datetime | None:
    cond = failed_condition(job)
    if cond is None:
        return None
    # A missing time is Go's zero time: earlier than any real failure.
    return parse_rfc3339(cond.get("lastTransitionTime")) or datetime.min.replace(tzinfo=UTC)


def first_failed_job(failed: Sequence[Job]) -> Job | None:
    """The failed Job whose Failed condition is oldest (ties: the first in order)."""
    best: Job | None = None
    best_time: datetime | None = None
    for job in failed:
        t = _failure_time(job)
        if t is not None and (best_time is None or t < best_time):
            best, best_time = job, t
    return best


def first_matching_rule(
    rules: Sequence[Mapping[str, Any]], failed: Sequence[Job]
) -> tuple[Mapping[str, Any], Job] | None:
    """The first rule that applies to any failed Job, with the earliest such failure."""
    for rule in rules:
        matched = first_failed_job([j for j in failed if rule_applies(rule, j)])
        if matched is not None:
            return rule, matched
    return None
