"""The package as a user installs it: a wheel built from the image's build context, in a
fresh venv outside the checkout.

Shared by the packaging tests and the in-cluster tests (whose controller pods run
`jobset controller` from such a venv, mapped with `--run-image`). The build context is
exactly what the Dockerfile's build stage copies, so a file the image would lack is missing
here too.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["REPO", "build_wheel", "dockerfile_copies", "export_commit", "install", "run"]

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
    or an exported commit), copied under `outside`."""
    context = outside / "context"
    for source, dest in dockerfile_copies(root):
        target = context / dest
        target.parent.mkdir(parents=True, exist_ok=True)
        if (root / source).is_dir():
            shutil.copytree(
                root / source,
                target,
                symlinks=True,  # src/jobset/data links to config/ and examples/, as in git
                ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"),
            )
        else:
            shutil.copy2(root / source, target)
    assert (context / "src" / "jobset" / "data" / "examples").is_symlink()
    dist = outside / "dist"
    run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", dist, context, cwd=outside)
    # The only wheel in `dist` (--no-deps). Not by name: commits before the distribution
    # was renamed jobset-py (57c3578) build jobset-*.whl, and the upgrade test builds one.
    (built,) = dist.glob("*.whl")
    return built


def install(venv: Path, wheel: Path, extras: str = "", python: str | Path = sys.executable) -> Path:
    """A fresh venv at `venv`, made by `python`, with `wheel` (plus `extras`) and its
    dependencies."""
    run(python, "-m", "venv", venv, cwd=venv.parent)
    spec = f"{wheel}[{extras}]" if extras else str(wheel)
    run(venv / "bin" / "python", "-m", "pip", "install", "-q", spec, cwd=venv.parent, timeout=600)
    return venv
