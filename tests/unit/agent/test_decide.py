"""The in-place restart agent's decisions and environment contract (upstream's agent
main_test.go cases)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jobset.agent.decide import AgentState, Step, decide
from jobset.agent.environment import AgentConfigError, parse_env


def js(status: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "js", **meta},
        "spec": {"failurePolicy": {"maxRestarts": 3, "restartStrategy": "InPlaceRestart"}},
        "status": status or {},
    }


def test_first_start_writes_attempt_zero_then_waits_for_the_barrier() -> None:
    state = AgentState()
    assert decide(state, js()) == Step(write_attempt=0)
    state.attempt = 0
    assert decide(state, js()) == Step()
    assert decide(state, js({"currentInPlaceRestartAttempt": 0})) == Step(lift=True)
    state.barrier_up = False
    assert decide(state, js({"currentInPlaceRestartAttempt": 0})) == Step()


def test_restarted_pod_joins_at_current_plus_one() -> None:
    status = {"currentInPlaceRestartAttempt": 2, "previousInPlaceRestartAttempt": 1}
    state = AgentState()
    assert decide(state, js(status)) == Step(write_attempt=3)
    state.attempt = 3
    assert decide(state, js(status)) == Step()  # barrier up until all pods reach 3


def test_outdated_attempt_exits_to_restart_in_place() -> None:
    state = AgentState(attempt=2, barrier_up=False)
    status = {"currentInPlaceRestartAttempt": 2, "previousInPlaceRestartAttempt": 2}
    assert decide(state, js(status)) == Step(restart=True)
    state = AgentState(attempt=3)
    assert decide(state, js(status)) == Step()


@pytest.mark.parametrize(
    "jobset",
    [
        js(annotations={"jobset.sigs.k8s.io/disable-in-place-restart": "true"}),
        {"metadata": {"name": "js"}, "spec": {"failurePolicy": {"restartStrategy": "Recreate"}}},
        {"metadata": {"name": "js"}, "spec": {}},
    ],
)
def test_bypass_lifts_the_barrier_and_nothing_else(jobset: dict[str, Any]) -> None:
    state = AgentState()
    assert decide(state, jobset) == Step(lift=True)
    state.barrier_up = False
    assert decide(state, jobset) == Step()


@pytest.fixture
def ns_file(tmp_path: Path) -> Path:
    f = tmp_path / "namespace"
    f.write_text("team-a")
    return f


def test_env_sidecar_defaults(ns_file: Path) -> None:
    env = parse_env({"JOBSET_NAME": "js", "POD_NAME": "p"}, ns_file)
    assert (env.namespace, env.jobset_name, env.pod_name) == ("team-a", "js", "p")
    assert env.sidecar_mode
    assert (env.startup_probe_path, env.startup_probe_port, env.exit_code) == (
        "/barrier-is-down",
        8081,
        1,
    )


def test_env_main_container_mode(ns_file: Path) -> None:
    env = parse_env(
        {
            "JOBSET_NAME": "js",
            "POD_NAME": "p",
            "WORKER_COMMAND": "train",
            "IN_PLACE_RESTART_EXIT_CODE": "88",
        },
        ns_file,
    )
    assert not env.sidecar_mode and env.worker_command == "train" and env.exit_code == 88


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"POD_NAME": "p"}, "JOBSET_NAME must be set"),
        ({"JOBSET_NAME": "js"}, "POD_NAME must be set"),
        (
            {
                "JOBSET_NAME": "js",
                "POD_NAME": "p",
                "WORKER_COMMAND": "x",
                "STARTUP_PROBE_PORT": "1",
            },
            "WORKER_COMMAND cannot be set with STARTUP_PROBE_PATH or STARTUP_PROBE_PORT",
        ),
        (
            {"JOBSET_NAME": "js", "POD_NAME": "p", "IN_PLACE_RESTART_EXIT_CODE": "x"},
            "IN_PLACE_RESTART_EXIT_CODE='x': must be an integer",
        ),
        (
            {"JOBSET_NAME": "js", "POD_NAME": "p", "STARTUP_PROBE_PORT": "70000"},
            "STARTUP_PROBE_PORT=70000: must be between 1 and 65535",
        ),
    ],
    ids=[
        "no JOBSET_NAME",
        "no POD_NAME",
        "worker command with a startup probe",
        "exit code not an integer",
        "probe port out of range",
    ],
)
def test_env_errors_name_the_variable(ns_file: Path, environ: dict[str, str], message: str) -> None:
    with pytest.raises(AgentConfigError, match=message):
        parse_env(environ, ns_file)


def test_env_without_namespace_file(tmp_path: Path) -> None:
    with pytest.raises(AgentConfigError, match="automountServiceAccountToken"):
        parse_env({"JOBSET_NAME": "js", "POD_NAME": "p"}, tmp_path / "missing")
