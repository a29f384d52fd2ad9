"""Unit tests for what simulated containers do (kubesim.programs.programs)."""

from __future__ import annotations

import math
import random
import string
from typing import Any

import pytest

from kubesim.programs.programs import Program, program_for


def run(*argv: str, env: dict[str, str] | None = None, **container: Any) -> Program:
    c: dict[str, Any] = {"name": "main", "image": "bash:5", "command": list(argv), **container}
    if env:
        c["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return program_for(c)


# upstream JobSet's failure-policy examples run exactly this
UPSTREAM_SCRIPT = """\
echo "JOB_COMPLETION_INDEX=$JOB_COMPLETION_INDEX"
if [[ "$JOB_COMPLETION_INDEX" == "0" ]]; then
  for i in $(seq 10 -1 1)
  do
    echo "Sleeping in $i"
    sleep 1
  done
  exit 1
fi
for i in $(seq 1 1000)
do
  echo "$i"
  sleep 1
done
"""


@pytest.mark.parametrize(
    ("argv", "duration"),
    [
        (["sleep", "100s"], 100.0),
        (["sleep", "100"], 100.0),
        (["sleep", "1m"], 60.0),
        (["sleep", "1.5h"], 5400.0),
        (["sleep", "0.5"], 0.5),
        (["sleep", "1m", "30s"], 90.0),
        (["/bin/sleep", "3"], 3.0),
        (["sleep", "infinity"], math.inf),
    ],
    ids=[
        "sleep 100s",
        "sleep 100",
        "sleep 1m",
        "sleep 1.5h",
        "sleep 0.5",
        "sleep 1m 30s",
        "/bin/sleep 3",
        "sleep infinity",
    ],
)
def test_plain_sleep(argv: list[str], duration: float) -> None:
    assert run(*argv) == Program(duration, 0, "")


def test_command_and_args_are_joined() -> None:
    assert program_for({"command": ["sleep"], "args": ["7"]}).duration == 7.0
    assert program_for({"command": ["/bin/sh", "-c"], "args": ["sleep 2; exit 3"]}) == Program(
        2.0, 3, ""
    )


def test_exit_alone() -> None:
    assert run("exit", "1") == Program(0.0, 1, "")


def test_invalid_sleep_fails_like_gnu_sleep() -> None:
    p = run("sleep", "soon")
    assert p.exit_code == 1
    assert "invalid time interval" in p.log


@pytest.mark.parametrize("shell", ["sh", "bash", "/bin/bash", "/bin/sh", "ash", "dash"])
def test_shell_scripts_sum_sleeps_and_exit(shell: str) -> None:
    assert run(shell, "-c", "sleep 10; sleep 5s; exit 3") == Program(15.0, 3, "")
    assert run(shell, "-c", "sleep 1\nfalse") == Program(1.0, 1, "")
    assert run(shell, "-c", "false; true") == Program(0.0, 0, "")


def test_echo_lines_become_the_log() -> None:
    p = run("sh", "-c", 'echo "hello world"; echo -n a; echo b; printf "%s-%d\\n" x 4 y 5')
    assert p.log == "hello world\nab\nx-4\ny-5\n"


def test_upstream_failure_policy_example() -> None:
    zero = program_for(
        {
            "name": "leader",
            "command": ["bash", "-xc", UPSTREAM_SCRIPT],
            "env": [{"name": "JOB_COMPLETION_INDEX", "value": "0"}],
        }
    )
    assert (zero.duration, zero.exit_code) == (10.0, 1)
    assert "JOB_COMPLETION_INDEX=0\n" in zero.log
    assert "Sleeping in 1\n" in zero.log
    assert "+ sleep 1\n" in zero.log  # bash -x traces commands into the log
    one = program_for(
        {
            "name": "leader",
            "command": ["bash", "-xc", UPSTREAM_SCRIPT],
            "env": [{"name": "JOB_COMPLETION_INDEX", "value": "1"}],
        }
    )
    assert (one.duration, one.exit_code) == (1000.0, 0)
    assert "\n1000\n" in one.log


def test_env_from_pod_field_ref() -> None:
    container = {
        "command": ["sh", "-c", 'echo "$JOB_COMPLETION_INDEX on $HOSTNAME"; exit $((10 + I))'],
        "env": [
            {
                "name": "JOB_COMPLETION_INDEX",
                "valueFrom": {
                    "fieldRef": {
                        "fieldPath": "metadata.annotations"
                        "['batch.kubernetes.io/job-completion-index']"
                    }
                },
            },
            {"name": "I", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['idx']"}}},
        ],
    }
    pod = {
        "metadata": {
            "name": "js-w-0-3-abcde",
            "labels": {"idx": "3"},
            "annotations": {"batch.kubernetes.io/job-completion-index": "3"},
        },
        "spec": {"hostname": "js-w-0-3"},
    }
    p = program_for(container, pod=pod)
    assert p.log == "3 on js-w-0-3\n"
    assert p.exit_code == 13
    # without the pod the reference stays unresolved: empty in the shell
    assert program_for(container).log == " on \n"


def test_kubernetes_dollar_paren_expansion_in_args() -> None:
    c = {
        "command": ["sleep"],
        "args": ["$(DURATION)"],
        "env": [{"name": "DURATION", "value": "42"}],
    }
    assert program_for(c).duration == 42.0
    # undefined references and shell command substitution are left alone
    assert run("sh", "-c", "sleep $(echo 4)").duration == 4.0


def test_python_one_liners() -> None:
    assert run("python", "-c", "import time; time.sleep(10)") == Program(10.0, 0, "")
    p = run("python3", "-c", "import sys, time\nprint('hi')\ntime.sleep(2.5)\nsys.exit(4)")
    assert (p.duration, p.exit_code, p.log) == (2.5, 4, "hi\n")
    assert run("python", "-c", "raise RuntimeError('boom')").exit_code == 1


def test_unknown_program_runs_default_duration() -> None:
    p = program_for({"name": "trainer", "image": "pytorch:2", "command": ["torchrun", "t.py"]}, 7.0)
    assert (p.duration, p.exit_code) == (7.0, 0)
    assert "pytorch:2" in p.log and "torchrun t.py" in p.log
    entrypoint = program_for({"name": "x", "image": "nginx"}, 3.0)
    assert (entrypoint.duration, entrypoint.exit_code) == (3.0, 0)
    assert "nginx" in entrypoint.log
    # inside a script, unknown work takes the default once, plus the sleeps
    assert run("sh", "-c", "pip install x && python train.py; sleep 2").duration == 7.0


def test_sim_env_overrides() -> None:
    p = run("sleep", "100", env={"SIM_DURATION": "3", "SIM_EXIT_CODE": "137", "SIM_LOG": "bye"})
    assert p == Program(3.0, 137, "bye\n")
    assert run("torchrun", env={"SIM_DURATION": "2m"}).duration == 120.0
    assert run("x", env={"SIM_DURATION": "infinity"}).duration == math.inf
    # invalid overrides are ignored
    assert run("sleep", "1", env={"SIM_DURATION": "soon", "SIM_EXIT_CODE": "x"}) == Program(
        1.0, 0, ""
    )
    assert program_for({"env": [{"name": "SIM_EXIT_CODE", "value": "2"}]}).exit_code == 2


def test_control_flow() -> None:
    script = """
    set -e
    total=0
    for n in 1 2 3; do
      total=$((total + n))
    done
    i=0
    while [ $i -lt 3 ]; do
      sleep 1
      i=$((i+1))
    done
    until [ "$i" = 5 ]; do i=$((i+1)); done
    for ((k=0; k<2; k++)); do sleep 10; done
    if [ "$total" -eq 6 ] && [[ $i == 5 ]]; then echo ok; else echo bad; fi
    [ -z "$UNSET" ] || exit 9
    echo "${UNSET:-fallback} ${#total}"
    exit $total
    """
    p = run("bash", "-c", script)
    assert (p.duration, p.exit_code, p.log) == (23.0, 6, "ok\nfallback 1\n")


def test_errexit_stops_at_first_failure_but_not_in_conditions() -> None:
    assert run("sh", "-ec", "sleep 1; false; sleep 100") == Program(1.0, 1, "")
    assert run("sh", "-c", "set -e; if false; then :; fi; false || true; sleep 2") == Program(
        2.0, 0, ""
    )
    assert run("sh", "-c", "false; sleep 2; exit") == Program(2.0, 0, "")


def test_endless_scripts_run_forever() -> None:
    assert run("sh", "-c", "while true; do sleep 5; done").duration == math.inf
    assert run("sh", "-c", "echo start; sleep infinity; exit 1") == Program(math.inf, 0, "start\n")
    assert run("sh", "-c", "while :; do echo spin; done").duration == math.inf


def test_background_wait_pipes_redirections_timeout() -> None:
    assert run("sh", "-c", "sleep 5 & sleep 1; wait").duration == 5.0
    assert run("sh", "-c", "sleep 5 & sleep 1").duration == 1.0
    assert run("sh", "-c", "echo a | cat; echo b > /tmp/x; echo c >&2").log == "a\nc\n"
    assert run("sh", "-c", "timeout 3 sleep 10").exit_code == 124
    assert run("sh", "-c", "timeout 3 sleep 10").duration == 3.0
    assert run("sh", "-c", "x=$(echo hi; sleep 2); echo $x").log == "hi\n"
    assert run("sh", "-c", "x=$(echo hi; sleep 2); echo $x").duration == 2.0


def test_nested_shell_and_subshell_exit_stay_inside() -> None:
    assert run("sh", "-c", "(exit 3); echo $?; sh -c 'exit 4'; echo $?").log == "3\n4\n"
    assert run("sh", "-c", "x=$(exit 5); echo $?; y=1; echo $?").log == "5\n0\n"


def test_unsupported_syntax_falls_back_to_heuristics() -> None:
    script = "case $X in\n  a) echo a;;\nesac\nsleep 4\nexit 2\n"
    p = run("bash", "-c", script)
    assert (p.duration, p.exit_code) == (4.0, 2)
    heredoc = run("sh", "-c", "cat <<EOF\nhello\nEOF\nsleep 3")
    assert heredoc.duration == 3.0


@pytest.mark.parametrize(
    "container",
    [
        {},
        {"command": None, "args": None},
        {"command": "sleep 5"},
        {"command": [1, 2, 3]},
        {"command": ["sh", "-c"]},
        {"command": ["sh", "-c", "'unterminated"]},
        {"command": ["sh", "-c", "echo $((1/0))"]},
        {"command": ["sh", "-c", "echo ${"]},
        {"command": ["sh", "-c", "$(" * 50]},
        {"command": ["sh", "-c", "eval 'eval \"eval x\"'"]},
        {"command": ["sleep", "-1"]},
        {"env": "not a list"},
        {"env": [None, {"name": None}, {"valueFrom": 3}]},
    ],
)
def test_any_input_gives_a_program(container: dict[str, Any]) -> None:
    p = program_for(container)
    assert isinstance(p, Program)
    assert p.duration >= 0 and 0 <= p.exit_code <= 255


def test_fuzz_never_raises() -> None:
    rng = random.Random(1234)
    alphabet = string.printable + "$(){}[]|&;<>'\"`\\"
    pieces = ["sleep 1", "exit 3", "if", "then", "fi", "for", "do", "done", "$((", "))", "${x:-"]
    for _ in range(400):
        words = [
            "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
            if rng.random() < 0.5
            else rng.choice(pieces)
            for _ in range(rng.randint(0, 8))
        ]
        p = program_for({"command": ["bash", "-c", " ".join(words)]})
        assert isinstance(p, Program)
        assert 0 <= p.exit_code <= 255


# ---------------------------------------------------------------------------------------------
# emptyDir files


def test_files_in_mounts_are_written_and_read() -> None:
    script = (
        "if [ -f /mnt/done ]; then cat /mnt/done; exit 0; fi; "
        "echo first > /mnt/done; sleep 2; echo second >> /mnt/done; exit 42"
    )
    c = {"command": ["sh", "-c", script]}
    first = program_for(c, mounts=["/mnt"])
    assert (first.exit_code, first.duration) == (42, 2.0)
    assert first.writes[-1] == (2.0, "/mnt/done", "first\nsecond\n")
    again = program_for(c, mounts=["/mnt"], files={"/mnt/done": "first\nsecond\n"})
    assert (again.exit_code, again.log, again.writes) == (0, "first\nsecond\n", ())


def test_files_outside_mounts_do_not_exist() -> None:
    c = {"command": ["sh", "-c", "touch /tmp/x; [ -e /tmp/x ] && exit 1; exit 0"]}
    p = program_for(c, mounts=["/mnt"])
    assert (p.exit_code, p.writes) == (0, ())


def test_rm_and_input_redirection() -> None:
    c = {
        "command": [
            "sh",
            "-c",
            "read -r line < /w/in; echo got $line; rm -f /w/in; [ -s /w/in ] || echo gone",
        ]
    }
    p = program_for(c, mounts=["/w"], files={"/w/in": "hello\n"})
    assert p.log == "got hello\ngone\n"
    assert p.writes == ((0.0, "/w/in", None),)
