"""The failure policy (upstream failure_policy.go and its unit/integration checklist)."""

from __future__ import annotations

from typing import Any

import pytest

from jobset.controllers.classify import classify, replicated_job_statuses
from jobset.controllers.conditions import WARNING, Event, StatusUpdate
from jobset.controllers.failure_rules import first_failed_job, rule_applies
from jobset.controllers.restart_policy import FailurePolicyError, execute_failure_policy

from .helpers import NOW, child, cond, jobset, rjob

PFP = "PodFailurePolicy"
BLE = "BackoffLimitExceeded"
UPSTREAM_RULE = "a job has failed and the failure policy rule "
ALL_RJOBS = "matches all possible parent replicated jobs and "


def _run(
    js: dict[str, Any], jobs: list[dict[str, Any]], restart_job: bool = False
) -> tuple[StatusUpdate, Any]:
    children = classify(js, jobs, restart_job=restart_job)
    update = StatusUpdate.of(js, NOW)
    update.status["replicatedJobsStatus"] = replicated_job_statuses(
        js, children, restart_job=restart_job
    )
    return update, execute_failure_policy(js, children, update, restart_job=restart_job)


def _fp(*rules: dict[str, Any], max_restarts: int = 1) -> dict[str, Any]:
    return {"maxRestarts": max_restarts, "rules": list(rules)}


def test_no_failure_policy_fails_with_first_failed_job() -> None:
    js = jobset(rjob("a", 3))
    jobs = [
        child(js, "a", 0, state="failed", failed_at=20),
        child(js, "a", 1, state="failed", failed_at=10),
        child(js, "a", 2),
    ]
    update, outcome = _run(js, jobs)
    failed = cond(update.status, "Failed")
    assert failed is not None
    assert failed["reason"] == "FailedJobs"
    assert failed["message"] == (
        "jobset failed due to one or more job failures (first failed job: js-a-1)"
    )
    assert update.status["terminalState"] == "Failed"
    assert outcome.failed
    assert update.restarts == 0


@pytest.mark.parametrize(
    ("rule", "reason", "message", "rjob_name", "applies"),
    # The ids are upstream's case names (TestFailurePolicyRuleIsApplicable), so the two
    # tables can be compared; a case of this project's own says so.
    [
        pytest.param(
            {},
            BLE,
            "x",
            "a",
            True,
            id=UPSTREAM_RULE + ALL_RJOBS + "matches all possible job failure reasons",
        ),
        pytest.param(
            {"onJobFailureReasons": [PFP]},
            PFP,
            "x",
            "a",
            True,
            id=UPSTREAM_RULE + ALL_RJOBS + "matches the job failure reason",
        ),
        pytest.param(
            {"onJobFailureReasons": [PFP]},
            BLE,
            "x",
            "a",
            False,
            id=UPSTREAM_RULE + ALL_RJOBS + "does not match the job failure reason",
        ),
        pytest.param(
            {"onJobFailureMessagePatterns": ["critical"]},
            BLE,
            "a critical error",
            "a",
            True,
            id=UPSTREAM_RULE + "matches the job failure message pattern",
        ),
        pytest.param(
            {"onJobFailureMessagePatterns": ["^critical$"]},
            BLE,
            "a critical error",
            "a",
            False,
            id=UPSTREAM_RULE + "does not match the job failure message pattern",
        ),
        pytest.param(
            {"onJobFailureMessagePatterns": ["[", "err.r"]},
            BLE,
            "error",
            "a",
            True,
            id="not upstream: a pattern Go refuses is skipped, a later one matches",
        ),
        pytest.param(
            {"onJobFailureReasons": [PFP], "onJobFailureMessagePatterns": ["nope"]},
            PFP,
            "critical",
            "a",
            False,
            id=UPSTREAM_RULE + "matches the job failure reason but not the message pattern",
        ),
        pytest.param(
            {"targetReplicatedJobs": ["a"]},
            BLE,
            "x",
            "a",
            True,
            id=UPSTREAM_RULE
            + "matches the parent replicatedJob and matches all possible job failure reasons",
        ),
        pytest.param(
            {"targetReplicatedJobs": ["b"]},
            BLE,
            "x",
            "a",
            False,
            id=UPSTREAM_RULE
            + "does not match the parent replicatedJob and matches all possible job failure reasons",
        ),
    ],
)
def test_rule_applies(
    rule: dict[str, Any], reason: str, message: str, rjob_name: str, applies: bool
) -> None:
    js = jobset(rjob("a"), rjob("b"))
    job = child(js, rjob_name, 0, state="failed", reason=reason, message=message)
    assert rule_applies(rule, job) is applies


def test_rule_never_applies_to_job_without_replicated_job_label() -> None:
    js = jobset(rjob("a"))
    job = child(js, "a", 0, state="failed")
    del job["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"]
    assert not rule_applies({}, job)


def test_first_failed_job_ties_keep_order() -> None:
    js = jobset(rjob("a", 2))
    jobs = [child(js, "a", 0, state="failed"), child(js, "a", 1, state="failed")]
    assert first_failed_job(jobs) is jobs[0]


def test_fail_jobset_action() -> None:
    js = jobset(
        rjob("a", 2), failurePolicy=_fp({"action": "FailJobSet", "onJobFailureReasons": [PFP]})
    )
    update, outcome = _run(js, [child(js, "a", 0, state="failed", reason=PFP), child(js, "a", 1)])
    failed = cond(update.status, "Failed")
    assert failed is not None and failed["reason"] == "FailJobSetFailurePolicyAction"
    assert (
        failed["message"] == "applying FailJobSet failure policy action (first failed job: js-a-0)"
    )
    assert outcome.rule == "failurePolicyRule0"


def test_unmatched_rules_default_to_restart_jobset() -> None:
    js = jobset(
        rjob("a", 2), failurePolicy=_fp({"action": "FailJobSet", "onJobFailureReasons": [PFP]})
    )
    update, outcome = _run(js, [child(js, "a", 0, state="failed", reason=BLE)])
    assert outcome.action == "RestartJobSet" and outcome.rule is None
    assert update.status["restarts"] == 1
    assert update.status["restartsCountTowardsMax"] == 1
    restarting = cond(update.status, "RestartingJobSet")
    assert restarting is not None
    assert (restarting["status"], restarting["reason"]) == ("True", "DefaultFailurePolicy")
    assert cond(update.status, "Failed") is None


def test_restart_jobset_named_rule_reason_and_events() -> None:
    js = jobset(
        rjob("a", 1),
        failurePolicy=_fp(
            {"name": "Rule1", "action": "RestartJobSet", "onJobFailureReasons": [PFP]}
        ),
    )
    update, _ = _run(js, [child(js, "a", 0, state="failed", reason=PFP)])
    msg = "applying RestartJobSet failure policy action (first failed job: js-a-0)"
    restarting = cond(update.status, "RestartingJobSet")
    assert restarting is not None
    assert (restarting["reason"], restarting["message"]) == ("FailurePolicy_Rule1", msg)
    assert update.events == [
        Event(WARNING, "FailurePolicy_Rule1", msg),
        Event(WARNING, "RestartJobSetFailurePolicyAction", msg),
    ]


@pytest.mark.parametrize(
    ("counted", "restarts", "fails"),
    [
        pytest.param(0, 0, False, id="first restart"),
        pytest.param(1, 5, True, id="max reached by restarts counted towards it"),
        pytest.param(0, 5, False, id="restarts not counted towards max"),
    ],
)
def test_restart_jobset_max_restarts(counted: int, restarts: int, fails: bool) -> None:
    js = jobset(
        rjob("a", 1),
        failurePolicy=_fp(max_restarts=1),
        status={"restarts": restarts, "restartsCountTowardsMax": counted},
    )
    job = child(js, "a", 0, state="failed")
    update, outcome = _run(js, [job])
    assert outcome.failed is fails
    if fails:
        failed = cond(update.status, "Failed")
        assert failed is not None and failed["reason"] == "ReachedMaxRestarts"
        assert failed["message"] == (
            "jobset failed due to reaching max number of restarts (first failed job: js-a-0)"
        )
        assert update.restarts == restarts
    else:
        assert update.restarts == restarts + 1
        assert update.restarts_count_towards_max == counted + 1


def test_restart_ignoring_max_restarts_does_not_count() -> None:
    js = jobset(
        rjob("a", 1),
        failurePolicy=_fp({"action": "RestartJobSetAndIgnoreMaxRestarts"}, max_restarts=0),
        status={"restarts": 3, "restartsCountTowardsMax": 0},
    )
    update, outcome = _run(js, [child(js, "a", 0, state="failed")])
    assert outcome.restarted_jobset and not outcome.failed
    assert (update.restarts, update.restarts_count_towards_max) == (4, 0)
    assert update.events[-1].reason == "RestartJobSetAndIgnoreMaxRestartsFailurePolicyAction"


def test_rule_order_first_rule_wins_even_for_later_failure() -> None:
    # Upstream "rules order verification": rule 0 targets b (failed later) and wins over
    # rule 1 which matches the earlier failure of a.
    js = jobset(
        rjob("a", 1),
        rjob("b", 1),
        failurePolicy=_fp(
            {"name": "first", "action": "FailJobSet", "targetReplicatedJobs": ["b"]},
            {"name": "second", "action": "RestartJobSet", "targetReplicatedJobs": ["a"]},
        ),
    )
    jobs = [
        child(js, "a", 0, state="failed", failed_at=1),
        child(js, "b", 0, state="failed", failed_at=50),
    ]
    _, outcome = _run(js, jobs)
    assert (outcome.rule, outcome.job, outcome.failed) == ("first", "js-b-0", True)


def test_earliest_failure_among_jobs_matching_the_rule() -> None:
    js = jobset(
        rjob("a", 3), failurePolicy=_fp({"action": "FailJobSet", "onJobFailureReasons": [PFP]})
    )
    jobs = [
        child(js, "a", 0, state="failed", reason=BLE, failed_at=1),
        child(js, "a", 1, state="failed", reason=PFP, failed_at=30),
        child(js, "a", 2, state="failed", reason=PFP, failed_at=20),
    ]
    _, outcome = _run(js, jobs)
    assert outcome.job == "js-a-2"


def test_restart_job_requires_feature_gate() -> None:
    js = jobset(rjob("a", 2), failurePolicy=_fp({"action": "RestartJob"}))
    with pytest.raises(FailurePolicyError, match="feature gate RestartJob is disabled"):
        _run(js, [child(js, "a", 1, state="failed")])


def test_restart_job_bumps_only_that_job() -> None:
    js = jobset(rjob("a", 2), failurePolicy=_fp({"action": "RestartJob"}, max_restarts=1))
    update, outcome = _run(js, [child(js, "a", 1, state="failed", restart_job=True)], True)
    assert outcome.restarted_job
    entry = update.status["replicatedJobsStatus"][0]
    assert entry["jobRestarts"] == [0, 1]
    assert entry["jobRestartsCountTowardsMax"] == [0, 1]
    assert update.restarts == 0 and update.changed
    assert cond(update.status, "RestartingJobSet") is None
    assert update.events == [
        Event(
            WARNING,
            "RestartJobFailurePolicyAction",
            "applying RestartJob failure policy action (first failed job: js-a-1)",
        )
    ]


def test_restart_job_ignoring_max_does_not_count() -> None:
    js = jobset(
        rjob("a", 2),
        failurePolicy=_fp({"action": "RestartJobAndIgnoreMaxRestarts"}, max_restarts=0),
    )
    update, _ = _run(js, [child(js, "a", 0, state="failed", restart_job=True)], True)
    entry = update.status["replicatedJobsStatus"][0]
    assert entry["jobRestarts"] == [1, 0]
    assert "jobRestartsCountTowardsMax" not in entry


def test_restart_job_fails_at_max_counting_job_and_jobset_restarts() -> None:
    status = {
        "restartsCountTowardsMax": 1,
        "replicatedJobsStatus": [
            {
                "name": "a",
                "ready": 0,
                "succeeded": 0,
                "failed": 0,
                "active": 0,
                "suspended": 0,
                "jobRestarts": [1, 0],
                "jobRestartsCountTowardsMax": [1, 0],
            }
        ],
    }
    js = jobset(
        rjob("a", 2), failurePolicy=_fp({"action": "RestartJob"}, max_restarts=2), status=status
    )
    job = child(js, "a", 1, state="failed", restart_job=True)
    update, outcome = _run(js, [job], True)
    assert outcome.failed
    failed = cond(update.status, "Failed")
    assert failed is not None and failed["reason"] == "ReachedMaxRestarts"


def test_restart_jobset_with_gate_counts_per_job_restarts_toward_max() -> None:
    status = {
        "replicatedJobsStatus": [
            {
                "name": "a",
                "ready": 0,
                "succeeded": 0,
                "failed": 0,
                "active": 0,
                "suspended": 0,
                "jobRestarts": [1, 0],
                "jobRestartsCountTowardsMax": [1, 0],
            }
        ],
    }
    js = jobset(rjob("a", 2), failurePolicy=_fp(max_restarts=1), status=status)
    jobs = [child(js, "a", 1, state="failed", restart_job=True)]
    _, with_gate = _run(js, jobs, True)
    assert with_gate.failed
    _, without_gate = _run(js, jobs, False)
    assert without_gate.restarted_jobset
