"""Condition transitions (upstream updateCondition / setCondition).

Tests name the cases of upstream's TestUpdateConditions they cover
(`# upstream TestUpdateConditions: "<name>"`), so the two can be compared.
"""

from __future__ import annotations

from jobset.controllers.conditions import NORMAL, WARNING, Event, StatusUpdate

from .helpers import NOW, ts

T0 = "2024-06-01T00:00:00Z"


def _update(*conds: dict[str, str]) -> StatusUpdate:
    return StatusUpdate({"conditions": [dict(c) for c in conds]} if conds else {}, NOW)


def _c(ctype: str, status: str, reason: str = "R", message: str = "m") -> dict[str, str]:
    return {
        "type": ctype,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": T0,
    }


def test_new_true_condition_is_added_with_event() -> None:
    # upstream TestUpdateConditions: "no existing conditions, add a condition"
    u = _update()
    assert u.set_condition("Completed", True, "AllJobsCompleted", "done", NORMAL)
    assert u.status["conditions"] == [
        {
            "type": "Completed",
            "status": "True",
            "reason": "AllJobsCompleted",
            "message": "done",
            "lastTransitionTime": ts(),
        }
    ]
    assert u.changed
    assert u.events == [Event(NORMAL, "AllJobsCompleted", "done")]


def test_new_false_condition_is_not_added() -> None:
    # upstream TestUpdateConditions: "no existing conditions, not adding conditions"
    u = _update()
    assert not u.set_condition("RestartingJobSet", False, "JobsReady", "all jobs are ready", NORMAL)
    assert "conditions" not in u.status
    assert not u.changed and not u.events


def test_identical_condition_changes_nothing() -> None:
    # upstream TestUpdateConditions: "existing conditions, attempt to add duplicate"
    # upstream TestUpdateConditions: "suspended"
    u = _update(_c("Suspended", "True"))
    assert not u.set_condition("Suspended", True, "R", "m", NORMAL)
    assert u.status["conditions"][0]["lastTransitionTime"] == T0
    assert not u.changed


def test_status_flip_replaces_with_new_time() -> None:
    # upstream TestUpdateConditions: "resume (update suspended condition type in-place)"
    u = _update(_c("Suspended", "True"))
    assert u.set_condition("Suspended", False, "ResumeJobs", "jobset is resumed", NORMAL)
    cond = u.status["conditions"][0]
    assert (cond["status"], cond["reason"], cond["lastTransitionTime"]) == (
        "False",
        "ResumeJobs",
        ts(),
    )


def test_reason_change_keeps_transition_time() -> None:
    # upstream TestUpdateConditions: "existing conditions, update reason/message but keep status same"
    u = _update(_c("RestartingJobSet", "True", "FailurePolicy_a"))
    assert u.set_condition("RestartingJobSet", True, "FailurePolicy_b", "m", WARNING)
    cond = u.status["conditions"][0]
    assert (cond["reason"], cond["lastTransitionTime"]) == ("FailurePolicy_b", T0)
    assert u.events == [Event(WARNING, "FailurePolicy_b", "m")]


def test_startup_conditions_exclude_each_other() -> None:
    u = _update(_c("StartupPolicyInProgress", "True"))
    u.set_startup_completed()
    by_type = {c["type"]: c for c in u.status["conditions"]}
    assert by_type["StartupPolicyInProgress"]["status"] == "False"
    assert by_type["StartupPolicyInProgress"]["lastTransitionTime"] == T0
    assert by_type["StartupPolicyCompleted"]["status"] == "True"


def test_failed_sets_terminal_state_and_ends_restarting() -> None:
    u = _update(_c("RestartingJobSet", "True", "FailurePolicy_x"))
    u.set_failed("FailedJobs", "boom")
    by_type = {c["type"]: c for c in u.status["conditions"]}
    assert by_type["Failed"]["status"] == "True"
    assert by_type["RestartingJobSet"]["status"] == "False"
    assert by_type["RestartingJobSet"]["reason"] == "JobSetFailed"
    assert by_type["RestartingJobSet"]["message"] == "jobset failed"
    assert u.status["terminalState"] == "Failed"
    assert [e.type for e in u.events] == [WARNING, NORMAL]


def test_completed_sets_terminal_state() -> None:
    u = _update()
    u.set_completed()
    assert u.status["terminalState"] == "Completed"
    assert [c["type"] for c in u.status["conditions"]] == ["Completed"]


def test_only_counts_changed() -> None:
    counts = {"name": "w", "ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0}
    js: dict[str, object] = {"status": {"restarts": 1}}
    u = StatusUpdate.of(js, NOW)  # type: ignore[arg-type]
    assert not u.only_counts_changed()  # nothing changed
    u.status["replicatedJobsStatus"] = [dict(counts)]
    u.changed = True
    assert u.only_counts_changed()
    u.status["replicatedJobsStatus"][0]["jobRestarts"] = [0, 1]  # a per-Job restart
    assert not u.only_counts_changed()
    u = StatusUpdate.of(js, NOW)  # type: ignore[arg-type]
    u.status["replicatedJobsStatus"] = [dict(counts, ready=2)]
    u.set_condition("StartupPolicyInProgress", True, "R", "m", NORMAL)
    assert u.changed and not u.only_counts_changed()
    u = StatusUpdate.of(js, NOW)  # type: ignore[arg-type]
    u.set_field("restarts", 2)
    assert not u.only_counts_changed()
