"""The demo's story of a run, told from its pods' kept logs (pure: no cluster)."""

from __future__ import annotations

from pathlib import Path

from jobset.dev.podlogs import (
    ATTEMPT_KEY,
    JOBSET_KEY,
    POD_INDEX_KEY,
    PodLog,
    PodLogKeeper,
    failure_of,
    story,
)


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


def test_hostile_log_output_reaches_the_terminal_escaped() -> None:
    """A pod's output is the pod's to choose: escape sequences (clear the screen, move the
    cursor, retitle the terminal), carriage returns and C1 controls are shown escaped."""
    text = "ok\x1b[2J\x1b]0;owned\x07\rover\x9b31m\tend\n"
    logs = [PodLog("p", "t", 0, "", "failed", text)]
    shown = story(logs, [])
    assert shown[-1] == "      ok\\x1b[2J\\x1b]0;owned\\x07\\x0dover\\x9b31m    end"
    assert not any(ch in line for line in shown for ch in "\x1b\x07\r\x9b")


def test_keeper_reads_hostile_pod_metadata_without_following_unstarted_pods(
    tmp_path: Path,
) -> None:
    """Labels are the pod's (its template's) to set: a restart attempt that is not a number
    is attempt 0; pods of other JobSets, without metadata or not started are not followed
    (no kubectl is started: the kubeconfig does not even exist)."""

    def pod(name: str, labels: dict[str, str], phase: str = "Pending") -> dict[str, object]:
        return {"metadata": {"name": name, "labels": labels}, "status": {"phase": phase}}

    keeper = PodLogKeeper(tmp_path / "missing.kubeconfig", "ns", ["t"], tmp_path / "logs")
    keeper.update(
        [
            pod("a", {JOBSET_KEY: "t", ATTEMPT_KEY: "x" * 300, POD_INDEX_KEY: "1"}),
            pod("b", {JOBSET_KEY: "t", ATTEMPT_KEY: "-1"}, phase="Failed"),
            pod("c", {JOBSET_KEY: "other", ATTEMPT_KEY: "2"}),
            {},
            {"metadata": None, "status": None},
        ]
    )
    logs = keeper.stop()
    assert [(p.name, p.attempt, p.index, p.failure) for p in logs] == [
        ("b", 0, "", "failed"),
        ("a", 0, "1", ""),
    ]
    assert not (tmp_path / "logs").exists()
