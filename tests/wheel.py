"""The packages as a user installs them: wheels built from the image's build context (the
controller, jobset-py, and the helpers it shares, jobset-kubeutil) and from the simulator's
project (kubesim), in a fresh venv outside the checkout.

Shared by the packaging tests and the in-cluster tests (whose controller pods run
`jobset controller` from such a venv, mapped with `--run-image`). The controller's build
context is exactly what the Dockerfile's build stage copies, so a file the image would lack
is missing here too. The wheels land in one directory, which `install` gives pip as
`--find-links`: the pins between them (`jobset-kubeutil==`, the `[sim]` extra's `kubesim==`)
resolve to these wheels, the other dependencies to the package registry.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = [
    "REPO",
    "build_sim_wheel",
    "build_wheel",
    "dockerfile_copies",
    "export_commit",
    "install",
    "run",
]

REPO = Path(__file__).resolve().parents[1]


def dockerfile_copies(root: Path = REPO) -> list[tuple[str, str]]:
    """(source, destination) of each COPY of the build stage, destination relative to WORKDIR."""
    copies: list[tuple[str, str]] = []
    for line in (root / "Dockerfile").read_text().replace("\\\n", " ").splitlines():
        word, _, rest = line.strip().partition(" ")
        if word.upper() == "COPY" and "--from" not in rest:
            *sources, dest = shlex.split(rest)
            for source in sources:
                copies.append((source, dest + Path(source).name if dest.endswith("/") else dest))
    return copies


def run(*cmd: str | Path, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run `cmd` outside the checkout with PYTHONPATH unset; fail with its output."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
    }
    result = subprocess.run(
        [str(c) for c in cmd], capture_output=True, text=True, cwd=cwd, timeout=timeout, env=env
    )
    assert result.returncode == 0, f"{cmd}:\n{result.stdout}\n{result.stderr}"
    return result


def export_commit(commit: str, dest: Path) -> Path:
    """The tree of `commit` of this repository, as `git archive` exports it, under `dest`
    (for building an older release's wheel: what was committed, nothing of the work tree)."""
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", commit],
        capture_output=True,
        check=True,
        timeout=120,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True, timeout=120)
    return dest


def build_wheel(outside: Path, root: Path = REPO) -> Path:
    """`pip wheel` of the Dockerfile's build context of the tree at `root` (this checkout,
    or an exported commit), copied under `outside`: the controller's wheel, returned, and
    beside it in `outside/dist` the jobset-kubeutil wheel where the tree has that project."""
    context = outside / "context"
    for source, dest in dockerfile_copies(root):
        _copy(root / source, context / dest)
    assert (context / "src" / "jobset" / "data" / "examples").is_symlink()
    dist = outside / "dist"
    projects = [context]
    if (context / "packaging" / "kubeutil").is_dir():
        projects.append(context / "packaging" / "kubeutil")
    run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", dist, *projects, cwd=outside)
    # Not by name: commits before the distribution was renamed jobset-py (57c3578) build
    # jobset-*.whl, and the upgrade test builds one.
    (built,) = [w for w in dist.glob("*.whl") if not w.name.startswith("jobset_kubeutil-")]
    return built


def build_sim_wheel(outside: Path, root: Path = REPO) -> Path:
    """`pip wheel` of the simulator's project (packaging/kubesim, whose sources are
    src/kubesim), from a copy under `outside` so that the build writes nothing into `root`;
    the wheel lands in `outside/dist`, beside `build_wheel`'s."""
    context = outside / "sim-context"
    for source in ("packaging/kubesim", "src/kubesim", "LICENSE"):
        _copy(root / source, context / source)
    dist = outside / "dist"
    project = context / "packaging" / "kubesim"
    run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", dist, project, cwd=outside)
    (built,) = dist.glob("kubesim-*.whl")
    return built


def _copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(
            source,
            target,
            symlinks=True,  # src/jobset/data links to config/ and examples/, as in git
            ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"),
        )
    else:
        shutil.copy2(source, target, follow_symlinks=False)


def install(venv: Path, wheel: Path, extras: str = "", python: str | Path = sys.executable) -> Path:
    """A fresh venv at `venv`, made by `python`, with `wheel` (plus `extras`) and its
    dependencies; this tree's other wheels are found beside `wheel`."""
    run(python, "-m", "venv", venv, cwd=venv.parent)
    spec = f"{wheel}[{extras}]" if extras else str(wheel)
    pip = (venv / "bin" / "python", "-m", "pip", "install", "-q", "--find-links", wheel.parent)
    run(*pip, spec, cwd=venv.parent, timeout=600)
    return venv
