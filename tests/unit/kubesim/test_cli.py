"""`kubesim`, the simulator's own console script (src/kubesim/cli.py): `kubesim serve` is the
server `jobset sim` runs, with the same flags."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import jobset.cli
import kubesim
import kubesim.cli


def _options(parser: argparse.ArgumentParser, command: str) -> dict[str, object]:
    """Each option of `command` (by its longest spelling) -> its default."""
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return {
        max(action.option_strings, key=len): sub.choices[command].get_default(action.dest)
        for action in sub.choices[command]._actions
        if action.option_strings and action.dest != "help"
    }


def test_kubesim_serve_takes_the_flags_and_defaults_of_jobset_sim() -> None:
    serve = _options(kubesim.cli.build_parser(), "serve")
    sim = _options(jobset.cli.build_parser(), "sim")
    assert serve == sim
    assert {"--kubeconfig", "--sim-level", "--nodes", "--run-image"} <= serve.keys()


def _kubesim(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubesim.cli", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
    )


def test_version_is_the_simulators_own(tmp_path: Path) -> None:
    result = _kubesim("--version", cwd=tmp_path)
    assert result.returncode == 0 and result.stdout == f"kubesim {kubesim.__version__}\n"


def test_a_bad_flag_value_is_one_line_naming_it(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    result = _kubesim(
        "serve", "--kubeconfig", str(kubeconfig), "--kube-feature-gates", "X=maybe", cwd=tmp_path
    )
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [
        "kubesim serve: invalid value of 'X=maybe': must be NAME=true or NAME=false"
    ]
    assert not kubeconfig.exists()
