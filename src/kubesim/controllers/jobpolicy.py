"""Facts about batch/v1 Jobs and their pods, as pure functions over plain dicts.

The Job controller (`job.py`, both levels) and its pure sync decision (`jobplan.py`) read
Jobs and pods through these: completion indexes and their "1,3-5" format, pod failure and
success policies, conditions, the pod predicates upstream uses (`IsPodReady`, terminating,
counted by the tracking finalizer), and the names and env of the pods a Job creates.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kubesim.clock import parse_rfc3339

__all__ = [
    "COMPLETION_INDEX_ANNOTATION",
    "JOB_TRACKING_FINALIZER",
    "Backoff",
    "Finish",
    "format_indexes",
    "match_pod_failure_policy",
    "match_success_policy",
    "parse_indexes",
]

JOB_TRACKING_FINALIZER: Final = "batch.kubernetes.io/job-tracking"
COMPLETION_INDEX_ANNOTATION: Final = "batch.kubernetes.io/job-completion-index"
INDEX_FAILURE_COUNT_ANNOTATION: Final = "batch.kubernetes.io/job-index-failure-count"
INDEX_IGNORED_FAILURE_COUNT_ANNOTATION: Final = (
    "batch.kubernetes.io/job-index-ignored-failure-count"
)
COMPLETION_INDEX_ENV: Final = "JOB_COMPLETION_INDEX"
JOB_CONTROLLER_NAME: Final = "kubernetes.io/job-controller"

# Upstream constants (pkg/controller/job): pod-failure back-off, and how much one sync does.
DEFAULT_POD_FAILURE_BACKOFF: Final = 10.0
MAX_POD_FAILURE_BACKOFF: Final = 360.0
MAX_POD_CREATE_DELETE_PER_SYNC: Final = 500
# kube-apiserver's generateName: 5 random characters after at most 58 of prefix.
MAX_GENERATED_NAME_PREFIX: Final = 58
_TERMINAL: Final = frozenset({"Succeeded", "Failed"})


def parse_indexes(text: str | None, limit: int | None = None) -> set[int]:
    """Parse "1,3-5,7" (the format of `completedIndexes` and `successPolicy`); indexes at or
    above `limit` and malformed parts are dropped, as upstream does."""
    out: set[int] = set()
    if not text:
        return out
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        lo_s, sep, hi_s = part.partition("-")
        try:
            lo = int(lo_s)
            hi = int(hi_s) if sep else lo
        except ValueError:
            continue
        if lo < 0 or hi < lo:
            continue
        if limit is not None:
            hi = min(hi, limit - 1)
        out.update(range(lo, hi + 1))
    return out


def format_indexes(indexes: Iterable[int]) -> str:
    """Sorted, with consecutive runs collapsed: {0,1,2,3,5} -> "0-3,5"."""
    parts: list[str] = []
    start = prev = -2
    for ix in sorted(set(indexes)):
        if ix == prev + 1:
            prev = ix
            continue
        if start >= 0:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = ix
    if start >= 0:
        parts.append(str(start) if start == prev else f"{start}-{prev}")
    return ",".join(parts)


def exit_code_matches(code: int, requirement: Mapping[str, Any]) -> bool:
    values = requirement.get("values") or []
    op = requirement.get("operator")
    if op == "In":
        return code in values
    if op == "NotIn":
        return code not in values
    return False


def matching_container(
    statuses: Sequence[Mapping[str, Any]], requirement: Mapping[str, Any]
) -> Mapping[str, Any] | None:
    want = requirement.get("containerName")
    for cs in statuses:
        term = (cs.get("state") or {}).get("terminated")
        if term is None:
            continue
        if want is not None and want != cs.get("name"):
            continue
        code = int(term.get("exitCode") or 0)
        if code != 0 and exit_code_matches(code, requirement):
            return cs
    return None


def match_pod_failure_policy(
    policy: Mapping[str, Any] | None, pod: Mapping[str, Any]
) -> tuple[str | None, bool, str | None]:
    """(FailJob message or None, whether the failure counts, matched action or None) for a
    failed pod, rule by rule as `matchPodFailurePolicy` does."""
    if not policy:
        return None, True, None
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    who = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
    for index, rule in enumerate(policy.get("rules") or []):
        action = rule.get("action")
        on_codes = rule.get("onExitCodes")
        if on_codes is not None:
            cs = matching_container(status.get("containerStatuses") or [], on_codes)
            if cs is None:
                cs = matching_container(status.get("initContainerStatuses") or [], on_codes)
            if cs is None:
                continue
            code = ((cs.get("state") or {}).get("terminated") or {}).get("exitCode")
            message = (
                f"Container {cs.get('name')} for pod {who} failed with exit code {code} "
                f"matching {action} rule at index {index}"
            )
        else:
            patterns = rule.get("onPodConditions") or []
            matched = None
            for cond in status.get("conditions") or []:
                for pattern in patterns:
                    if cond.get("type") == pattern.get("type") and cond.get("status") == (
                        pattern.get("status") or "True"
                    ):
                        matched = cond
                        break
                if matched is not None:
                    break
            if matched is None:
                continue
            message = (
                f"Pod {who} has condition {matched.get('type')} matching {action} rule at "
                f"index {index}"
            )
        if action == "Ignore":
            return None, False, action
        if action == "FailJob":
            return message, True, action
        if action in ("Count", "FailIndex"):
            return None, True, action
    return None, True, None


def match_success_policy(
    policy: Mapping[str, Any] | None, completions: int, succeeded: set[int]
) -> str | None:
    """The `SuccessCriteriaMet` message if a `successPolicy` rule is satisfied, else None."""
    if not policy:
        return None
    for index, rule in enumerate(policy.get("rules") or []):
        wanted = rule.get("succeededIndexes")
        count = rule.get("succeededCount")
        if wanted is not None:
            rule_indexes = parse_indexes(wanted, completions)
            matched = len(rule_indexes & succeeded)
            met = matched >= count if count is not None else matched == len(rule_indexes)
        elif count is not None:
            met = len(succeeded) >= count
        else:
            met = False
        if met:
            return f"Matched rules at index {index}"
    return None


def controller_ref(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref  # type: ignore[no-any-return]
    return None


def job_ref(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    ref = controller_ref(obj)
    if ref is not None and ref.get("kind") == "Job" and ref.get("apiVersion") == "batch/v1":
        return ref
    return None


def find_condition(conds: Sequence[Mapping[str, Any]], ctype: str) -> Mapping[str, Any] | None:
    for c in conds:
        if c.get("type") == ctype:
            return c
    return None


def new_condition(ctype: str, status: str, reason: str, message: str, now: str) -> dict[str, Any]:
    return {
        "type": ctype,
        "status": status,
        "lastProbeTime": now,
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    }


def ensure_condition(
    conds: list[dict[str, Any]], ctype: str, status: str, reason: str, message: str, now: str
) -> bool:
    """`ensureJobConditionStatus`: update the condition of that type, or append it unless it
    would be a new False (going from nothing to False means nothing). True if changed."""
    for i, c in enumerate(conds):
        if c.get("type") == ctype:
            if (
                c.get("status") != status
                or c.get("reason") != reason
                or c.get("message") != message
            ):
                conds[i] = new_condition(ctype, status, reason, message, now)
                return True
            return False
    if status != "False":
        conds.append(new_condition(ctype, status, reason, message, now))
        return True
    return False


def is_job_finished(job: Mapping[str, Any]) -> bool:
    for c in (job.get("status") or {}).get("conditions") or ():
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            return True
    return False


def has_tracking_finalizer(pod: Mapping[str, Any]) -> bool:
    return JOB_TRACKING_FINALIZER in ((pod.get("metadata") or {}).get("finalizers") or ())


def pod_phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def is_terminal(pod: Mapping[str, Any]) -> bool:
    return pod_phase(pod) in _TERMINAL


def is_deleting(obj: Mapping[str, Any]) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def pod_ready(pod: Mapping[str, Any]) -> bool:
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Ready":
            return bool(c.get("status") == "True")
    return False


def completion_index(pod: Mapping[str, Any]) -> int | None:
    meta = pod.get("metadata") or {}
    raw = (meta.get("annotations") or {}).get(COMPLETION_INDEX_ANNOTATION)
    if raw is None:
        raw = (meta.get("labels") or {}).get(COMPLETION_INDEX_ANNOTATION)
    try:
        return int(raw) if raw is not None else None
    except (TypeError, ValueError):
        return None


def int_annotation(pod: Mapping[str, Any], key: str) -> int:
    raw = ((pod.get("metadata") or {}).get("annotations") or {}).get(key)
    try:
        return max(int(raw), 0) if raw is not None else 0
    except (TypeError, ValueError):
        return 0


def is_pod_failed(pod: Mapping[str, Any], only_failed: bool) -> bool:
    """Upstream `isPodFailed`: Failed, or — unless only failed pods are replaced — deleted
    before it succeeded (orphans never get the chance to reach Failed)."""
    phase = pod_phase(pod)
    if phase == "Failed":
        return True
    if only_failed:
        return False
    return is_deleting(pod) and phase != "Succeeded"


def restart_count(pod: Mapping[str, Any]) -> int:
    status = pod.get("status") or {}
    total = 0
    for key in ("initContainerStatuses", "containerStatuses"):
        for cs in status.get(key) or ():
            total += int(cs.get("restartCount") or 0)
    return total


def past_backoff_limit_on_failure(
    spec: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]
) -> bool:
    """With restartPolicy OnFailure the kubelet restarts containers in place; their restarts
    count against backoffLimit."""
    template = (spec.get("template") or {}).get("spec") or {}
    if template.get("restartPolicy") != "OnFailure":
        return False
    restarts = sum(restart_count(p) for p in pods if pod_phase(p) in ("Pending", "Running"))
    limit = spec_int(spec, "backoffLimit", 6)
    return restarts > 0 if limit == 0 else restarts >= limit


def active_pod_rank(pod: Mapping[str, Any]) -> tuple[Any, ...]:
    """controller.ActivePods ordering: the pods earliest in their life sort first, so they
    are the ones removed when there are too many."""
    spec = pod.get("spec") or {}
    phase_rank = {"Pending": 0, "Unknown": 1, "Running": 2}.get(pod_phase(pod), 1)
    return (
        1 if spec.get("nodeName") else 0,
        phase_rank,
        1 if pod_ready(pod) else 0,
        -restart_count(pod),
        -created_at(pod),  # newer pods first
    )


def created_at(obj: Mapping[str, Any]) -> float:
    stamp = (obj.get("metadata") or {}).get("creationTimestamp")
    try:
        return parse_rfc3339(stamp) if stamp else 0.0
    except ValueError:
        return 0.0


def truncate_prefix(prefix: str) -> str:
    return (
        prefix if len(prefix) <= MAX_GENERATED_NAME_PREFIX else prefix[:MAX_GENERATED_NAME_PREFIX]
    )


def indexed_generate_name(job_name: str, index: int) -> str:
    """`podGenerateNameWithIndex`: `<job>-<index>-`, trimming the job name, never the index."""
    suffix = f"-{index}-"
    prefix = job_name + suffix
    if len(prefix) > MAX_GENERATED_NAME_PREFIX:
        prefix = prefix[: MAX_GENERATED_NAME_PREFIX - len(suffix)] + suffix
    return prefix


def with_index_env(container: Mapping[str, Any]) -> dict[str, Any]:
    env = list(container.get("env") or [])
    if any(e.get("name") == COMPLETION_INDEX_ENV for e in env):
        return dict(container)
    env.append(
        {
            "name": COMPLETION_INDEX_ENV,
            "valueFrom": {
                "fieldRef": {
                    "apiVersion": "v1",
                    "fieldPath": f"metadata.labels['{COMPLETION_INDEX_ANNOTATION}']",
                }
            },
        }
    )
    return {**container, "env": env}


def spec_int(spec: Mapping[str, Any], key: str, default: int) -> int:
    """An int32 field of a spec with its API default (backoffLimit 6, parallelism 1, ...)."""
    value = spec.get(key)
    try:
        return int(value) if value is not None else default
    except (TypeError, ValueError):
        return default


def backoff_delay(failures: int) -> float:
    if failures <= 0:
        return 0.0
    return float(
        min(DEFAULT_POD_FAILURE_BACKOFF * 2.0 ** min(failures - 1, 32), MAX_POD_FAILURE_BACKOFF)
    )


def omit_zero(status: dict[str, Any], key: str, value: int) -> None:
    """Go's `omitempty` on int32 counters: a zero counter is absent from the JSON."""
    if value:
        status[key] = value
    else:
        status.pop(key, None)


@dataclass
class Backoff:
    """Upstream's podBackoffStore record: failures since the last success, and when."""

    failures: int = 0
    last_failure: float = 0.0


@dataclass
class Finish:
    interim: str  # FailureTarget | SuccessCriteriaMet
    final: str  # Failed | Complete
    reason: str
    message: str

    @property
    def failed(self) -> bool:
        return self.final == "Failed"


def _true_condition(status: Mapping[str, Any] | None, type_: str) -> Mapping[str, Any] | None:
    for cond in (status or {}).get("conditions") or ():
        if cond.get("type") == type_ and cond.get("status") == "True":
            return cond  # type: ignore[no-any-return]
    return None


def condition_events(
    old: Mapping[str, Any] | None, new: Mapping[str, Any]
) -> list[tuple[str, str, str]]:
    """The events the Job controller records when a status write changes these conditions,
    as (type, reason, message): `Completed` "Job completed" when `Complete` turns True, the
    `Failed` condition's own reason and message (BackoffLimitExceeded "Job has reached the
    specified backoff limit", DeadlineExceeded, PodFailurePolicy, ...) as a Warning when it
    turns True, `Suspended` "Job suspended" / `Resumed` "Job resumed" when `Suspended` turns
    True / stops being True."""
    out: list[tuple[str, str, str]] = []
    if _true_condition(new, "Complete") and not _true_condition(old, "Complete"):
        out.append(("Normal", "Completed", "Job completed"))
    failed = _true_condition(new, "Failed")
    if failed is not None and not _true_condition(old, "Failed"):
        out.append(
            ("Warning", str(failed.get("reason") or "Failed"), str(failed.get("message") or ""))
        )
    was_suspended = _true_condition(old, "Suspended") is not None
    is_suspended = _true_condition(new, "Suspended") is not None
    if is_suspended and not was_suspended:
        out.append(("Normal", "Suspended", "Job suspended"))
    elif (
        was_suspended
        and not is_suspended
        and any(c.get("type") == "Suspended" for c in new.get("conditions") or ())
    ):
        out.append(("Normal", "Resumed", "Job resumed"))
    return out
