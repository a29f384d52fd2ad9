"""The demo's story of a run, told from its pods' kept logs (pure: no cluster)."""

from __future__ import annotations

from jobset.dev.podlogs import PodLog, failure_of, story


def _pod(phase: str, exit_code: int | None = None) -> dict[str, object]:
    state = {"running": {}} if exit_code is None else {"terminated": {"exitCode": exit_code}}
    return {"status": {"phase": phase, "containerStatuses": [{"name": "jax", "state": state}]}}


def test_failure_of_names_the_failed_container() -> None:
    assert failure_of(_pod("Failed", 1)) == "container jax exited with code 1"
    assert failure_of(_pod("Running")) == ""
    assert failure_of(_pod("Succeeded", 0)) == ""
    assert failure_of({"status": {"phase": "Failed"}}) == "failed"


def test_story_tells_the_failure_the_restart_and_the_resumed_step() -> None:
    logs = [
        PodLog(
            "t-w-0-0-a",
            "t",
            0,
            "0",
            "",
            'step 100\nstep 200\nlost peer 1\n    @     0x7f5b  ThreadFn()\n  File "x.py"\n',
        ),
        PodLog(
            "t-w-0-0-b",
            "t",
            0,
            "1",
            "container jax exited with code 1",
            "step 100\n" + "x" * 400 + "\nrank 1: injected failure at step 1050\n",
        ),
        PodLog("t-w-0-0-c", "t", 1, "0", "", "resumed-from-step=1000\nstep 1100\ndone\n"),
        PodLog("t-w-0-0-d", "t", 1, "1", "", "step 1100\n"),
    ]
    out = story(logs, ["resumed-from-step=[1-9]"])
    assert out == [
        "  restart attempt 0:",
        "    t-w-0-0-a (pod 0):",
        "      step 200",
        "      lost peer 1",
        "    t-w-0-0-b (pod 1, container jax exited with code 1):",
        "      " + "x" * 157 + "...",
        "      rank 1: injected failure at step 1050",
        "  restart attempt 1 (after a JobSet restart):",
        "    t-w-0-0-c (pod 0):",
        "      resumed-from-step=1000",
        "    t-w-0-0-d (pod 1):",
        "      (nothing of note)",
    ]


def test_story_of_a_single_attempt_shows_only_the_named_lines() -> None:
    logs = [PodLog("p", "t", 0, "", "", "a\nb\nmatch me\nc\n")]
    assert story(logs, ["match"]) == ["  restart attempt 0:", "    p (pod):", "      match me"]
