"""Failure policy end to end: actions, rule order, targets, max restarts, Recreate vs
BlockingRecreate, RestartingJobSet transitions (upstream's "[failure policy]" entries)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from jobset.runtime.client import JOBS

from .helpers import Env, condition, has_condition, jobset, rjob

PFP = "PodFailurePolicy"


def _attempts(jobs: list[dict[str, Any]]) -> dict[int, int]:
    return dict(
        Counter(int(j["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"]) for j in jobs)
    )


async def test_restart_recreates_all_jobs_and_restarting_condition_transitions(env: Env) -> None:
    fp = {
        "maxRestarts": 1,
        "rules": [{"name": "Rule1", "action": "RestartJobSet", "onJobFailureReasons": [PFP]}],
    }
    await env.create(jobset("rs", failurePolicy=fp))
    jobs = await env.wait_jobs("rs", 4)
    await env.fail_job(jobs[0], reason=PFP)
    js = await env.wait_jobset(
        "rs", lambda o: has_condition(o, "RestartingJobSet", "True", "FailurePolicy_Rule1")
    )
    assert js["status"]["restarts"] == 1 and js["status"]["restartsCountTowardsMax"] == 1
    assert not has_condition(js, "Failed")
    jobs = await env.wait_jobs("rs", 4, lambda jobs: _attempts(jobs) == {1: 4})
    for job in jobs:
        await env.ready_job(job)
    js = await env.wait_jobset(
        "rs", lambda o: has_condition(o, "RestartingJobSet", "False", "JobsReady")
    )
    assert condition(js, "RestartingJobSet")["message"] == "all jobs are ready"  # type: ignore[index]


async def test_fails_after_reaching_max_restarts(env: Env) -> None:
    await env.create(jobset("max", rjob("a", 2), failurePolicy={"maxRestarts": 1}))
    jobs = await env.wait_jobs("max", 2)
    await env.fail_job(jobs[0])
    jobs = await env.wait_jobs("max", 2, lambda jobs: _attempts(jobs) == {1: 2})
    await env.fail_job(jobs[1])
    js = await env.wait_jobset(
        "max", lambda o: has_condition(o, "Failed", reason="ReachedMaxRestarts")
    )
    assert js["status"]["restarts"] == 1
    assert has_condition(js, "RestartingJobSet", "False", "JobSetFailed")


@pytest.mark.parametrize(
    ("rule", "reason", "message", "fails"),
    [
        ({"onJobFailureReasons": [PFP]}, PFP, "", True),
        ({"onJobFailureReasons": [PFP]}, "BackoffLimitExceeded", "", False),
        ({"onJobFailureMessagePatterns": [".*critical.*"]}, PFP, "a non-fatal error", False),
        (
            {"onJobFailureReasons": [PFP], "onJobFailureMessagePatterns": ["critical"]},
            PFP,
            "this is some message with critical error",
            True,
        ),
    ],
    ids=[
        "[failure policy] jobset fails immediately with FailJobSet failure policy action.",
        "[failure policy] jobset does not fail immediately with FailJobSet failure policy action as the failure reason is not matched.",
        "[failure policy] jobset does not fail immediately with FailJobSet failure policy action as the failure message is not matched.",
        "[failure policy] jobset fails immediately with FailJobSet failure policy action as the failure reason and message are matched, even if message string is not exactly equal to pattern string.",
    ],
)
async def test_fail_jobset_action_matching(
    env: Env, rule: dict[str, Any], reason: str, message: str, fails: bool
) -> None:
    fp = {"maxRestarts": 1, "rules": [{"action": "FailJobSet", **rule}]}
    await env.create(jobset("fj", failurePolicy=fp))
    jobs = await env.wait_jobs("fj", 4)
    await env.fail_job(jobs[0], reason=reason, message=message)
    if fails:
        js = await env.wait_jobset(
            "fj", lambda o: has_condition(o, "Failed", reason="FailJobSetFailurePolicyAction")
        )
        assert js["status"].get("restarts", 0) == 0
    else:
        js = await env.wait_jobset("fj", lambda o: o["status"].get("restarts") == 1)
        assert not has_condition(js, "Failed")


async def test_rule_targets_and_order(env: Env) -> None:
    fp = {
        "maxRestarts": 5,
        "rules": [
            {"name": "onlyB", "action": "FailJobSet", "targetReplicatedJobs": ["b"]},
            {"name": "others", "action": "RestartJobSetAndIgnoreMaxRestarts"},
        ],
    }
    await env.create(jobset("tg", failurePolicy=fp))
    jobs = await env.wait_jobs("tg", 4)
    await env.fail_job(jobs[0])  # a: not a target of rule 0 → rule 1 restarts
    js = await env.wait_jobset(
        "tg", lambda o: has_condition(o, "RestartingJobSet", reason="FailurePolicy_others")
    )
    assert js["status"]["restarts"] == 1
    assert js["status"].get("restartsCountTowardsMax", 0) == 0
    jobs = await env.wait_jobs("tg", 4, lambda jobs: _attempts(jobs) == {1: 4})
    await env.fail_job(jobs[2])  # b → FailJobSet
    await env.wait_jobset(
        "tg", lambda o: has_condition(o, "Failed", reason="FailJobSetFailurePolicyAction")
    )


async def _hold(env: Env, jobs: list[dict[str, Any]]) -> None:
    """Keep Jobs from disappearing on deletion (like envtest, which has no GC)."""
    for job in jobs:
        await env.client.patch(
            JOBS, job["metadata"]["name"], {"metadata": {"finalizers": ["test/hold"]}}, env.ns
        )


@pytest.mark.parametrize(
    ("strategy", "after_partial"),
    [("Recreate", {0: 1, 1: 3}), ("BlockingRecreate", {0: 1})],
    ids=[
        "[failure policy] jobs are restarted individually with Recreate strategy.",
        "[failure policy] jobs are recreated after all Jobs are deleted with BlockingRecreate strategy.",
    ],
)
async def test_recreate_strategies(env: Env, strategy: str, after_partial: dict[int, int]) -> None:
    await env.create(jobset("rc", failurePolicy={"maxRestarts": 1, "restartStrategy": strategy}))
    jobs = await env.wait_jobs("rc", 4)
    await _hold(env, jobs)
    await env.fail_job(jobs[0])
    await env.wait_jobset("rc", lambda o: o["status"].get("restarts") == 1)
    await env.wait_jobs("rc", 4, lambda js: all(j["metadata"].get("deletionTimestamp") for j in js))
    for job in jobs[1:]:
        await env.remove_finalizers(job)
    n = sum(after_partial.values())
    await env.wait_jobs("rc", n, lambda js: _attempts(js) == after_partial)
    await env.remove_finalizers(jobs[0])
    await env.wait_jobs("rc", 4, lambda js: _attempts(js) == {1: 4})


class TestRestartJobGate:
    @pytest.fixture
    def features(self) -> dict[str, bool]:
        return {"RestartJob": True}

    async def test_restart_job_recreates_only_that_job(self, env: Env) -> None:
        fp = {
            "maxRestarts": 1,
            "rules": [
                {"action": "RestartJob", "onJobFailureReasons": [PFP]},
                {"action": "FailJobSet"},
            ],
        }
        await env.create(jobset("rj", failurePolicy=fp))
        jobs = await env.wait_jobs("rj", 4)
        uids = {j["metadata"]["name"]: j["metadata"]["uid"] for j in jobs}
        assert all(
            j["metadata"]["labels"]["jobset.sigs.k8s.io/job-restart-attempt"] == "0" for j in jobs
        )
        await env.fail_job(jobs[1], reason=PFP)  # rj-b-0
        js = await env.wait_jobset(
            "rj",
            lambda o: any(
                s.get("jobRestarts") == [1, 0, 0]
                for s in o["status"].get("replicatedJobsStatus", [])
            ),
        )
        assert js["status"].get("restarts", 0) == 0
        b = next(s for s in js["status"]["replicatedJobsStatus"] if s["name"] == "b")
        assert b["jobRestartsCountTowardsMax"] == [1, 0, 0]

        def recreated(jobs: list[dict[str, Any]]) -> bool:
            by = {j["metadata"]["name"]: j for j in jobs}
            return "rj-b-0" in by and by["rj-b-0"]["metadata"]["uid"] != uids["rj-b-0"]

        jobs = await env.wait_jobs("rj", 4, recreated)
        by = {j["metadata"]["name"]: j for j in jobs}
        assert by["rj-b-0"]["metadata"]["labels"]["jobset.sigs.k8s.io/job-restart-attempt"] == "1"
        for name in ("rj-a-0", "rj-b-1", "rj-b-2"):
            assert by[name]["metadata"]["uid"] == uids[name]
        # the next counted restart reaches maxRestarts: 1
        await env.fail_job(by["rj-b-1"], reason=PFP)
        await env.wait_jobset(
            "rj", lambda o: has_condition(o, "Failed", reason="ReachedMaxRestarts")
        )

    async def test_restart_jobset_with_gate(self, env: Env) -> None:
        fp = {"maxRestarts": 1, "rules": [{"action": "RestartJobSet"}]}
        await env.create(jobset("rg", rjob("a", 2), failurePolicy=fp))
        jobs = await env.wait_jobs("rg", 2)
        await env.fail_job(jobs[0])
        js = await env.wait_jobset("rg", lambda o: o["status"].get("restarts") == 1)
        assert all("jobRestarts" not in s for s in js["status"]["replicatedJobsStatus"])
        await env.wait_jobs("rg", 2, lambda jobs: _attempts(jobs) == {1: 2})


@pytest.mark.timeout(120)  # with a backtracking engine the loop stalls for hours: fail fast
async def test_catastrophic_message_pattern_does_not_stall_other_jobsets(env: Env) -> None:
    # The reproduction from the security report: a tenant's rule with `(a+)+$` and a Job
    # failure message of 40 `a`s and `!`. Python's re backtracks ~2**40 steps on it; the
    # controller shares one event loop with this test, so without RE2 nothing below runs.
    fp = {
        "maxRestarts": 3,
        "rules": [{"action": "FailJobSet", "onJobFailureMessagePatterns": ["(a+)+$"]}],
    }
    await env.create(jobset("evil", rjob("a", 1), failurePolicy=fp))
    jobs = await env.wait_jobs("evil", 1)
    await env.fail_job(jobs[0], reason=PFP, message="a" * 40 + "!")
    # The pattern does not match (the message ends in `!`): the default action restarts.
    js = await env.wait_jobset("evil", lambda o: (o.get("status") or {}).get("restarts") == 1)
    assert not has_condition(js, "Failed")
    await env.create(jobset("normal", rjob("a", 2)))
    await env.wait_jobs("normal", 2)


async def test_invalid_message_pattern_is_skipped_like_upstream(env: Env) -> None:
    # `(?=x)` is Python-only syntax (lookahead); Go's regexp refuses it and upstream skips
    # the pattern, so the rule's other pattern decides.
    fp = {
        "maxRestarts": 1,
        "rules": [{"action": "FailJobSet", "onJobFailureMessagePatterns": ["(?=fatal)", "fat"]}],
    }
    await env.create(jobset("inv", rjob("a", 1), failurePolicy=fp))
    jobs = await env.wait_jobs("inv", 1)
    await env.fail_job(jobs[0], reason=PFP, message="fatal error")
    await env.wait_jobset(
        "inv", lambda o: has_condition(o, "Failed", reason="FailJobSetFailurePolicyAction")
    )
