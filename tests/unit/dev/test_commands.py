"""`jobset sim` / `jobset dev` (jobset/dev/commands.py) and the `[sim]` extra they need.

The controller image and a plain `pip install jobset-py` have no `[sim]` extra. Rather than
uninstall packages from the shared venv, each run here starts the CLI in a subprocess whose
`-c` program first puts an import blocker on `sys.meta_path` that refuses the extra's modules
(as if they were not installed), then calls `jobset.cli.main`. tests/integration/packaging
does the same with a real wheel installed without the extra.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from jobset.dev.commands import SIM_EXTRA_MODULES

REPO = Path(__file__).resolve().parents[3]

_BLOCKED_MAIN = """
import sys
BLOCKED = set(sys.argv[1].split(","))
class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Blocker())
from jobset.cli import main
sys.exit(main(sys.argv[2:]))
"""


def _run_without(blocked: set[str], *argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _BLOCKED_MAIN, ",".join(sorted(blocked)), *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
    )


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!\[; ]", req, maxsplit=1)[0].lower() for req in requirements}


def _closure(names: set[str]) -> set[str]:
    """`names` and what they require, as the installed distributions declare it."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        todo += [r for r in _names([q for q in requires if "extra ==" not in q])]
    return seen


def test_the_module_list_is_the_sim_extra() -> None:
    """The extra is the `kubesim` distribution; the modules are its own and those of its
    dependencies that the controller's installation does not bring."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    simulator = tomllib.loads((REPO / "packaging" / "kubesim" / "pyproject.toml").read_text())
    assert _names(project["optional-dependencies"]["sim"]) == {"kubesim"}
    controller = _closure(_names(project["dependencies"]))
    dists = _names(simulator["project"]["dependencies"]) - controller
    modules = {
        module
        for module, owners in importlib.metadata.packages_distributions().items()
        if {o.lower() for o in owners} & dists and module.isidentifier()
    }
    assert {"kubesim", *modules} == set(SIM_EXTRA_MODULES)


@pytest.mark.parametrize("command", ["sim", "dev"])
@pytest.mark.parametrize("module", SIM_EXTRA_MODULES)
def test_sim_commands_name_the_extra_in_one_line(tmp_path: Path, command: str, module: str) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    result = _run_without({module}, command, "--kubeconfig", str(kubeconfig), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"jobset {command}: ") and "pip install 'jobset-py[sim]'" in lines[0]
    assert repr(module) in lines[0]
    assert not kubeconfig.exists(), "nothing may start before the check"


def test_the_missing_extra_line_is_json_under_json_logs(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    result = _run_without(
        {SIM_EXTRA_MODULES[0]}, "dev", "--kubeconfig", str(kubeconfig), "--log-format", "json",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2 and result.stdout == "", result.stderr
    (line,) = result.stderr.splitlines()
    rec = json.loads(line)
    assert rec["level"] == "error" and rec["event"].startswith("jobset dev: ")
    assert "pip install 'jobset-py[sim]'" in rec["event"]


def test_controller_and_user_commands_need_no_sim_extra(tmp_path: Path) -> None:
    blocked = set(SIM_EXTRA_MODULES)
    for argv in (["controller", "--help"], ["get", "--help"], ["sim", "--help"]):
        result = _run_without(blocked, *argv, cwd=tmp_path)
        assert result.returncode == 0, (argv, result.stderr)
        assert result.stdout.startswith("usage: jobset"), result.stdout
