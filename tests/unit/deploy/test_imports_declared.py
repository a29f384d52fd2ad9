"""Every third-party module src/ imports comes from a distribution that the project of the
importing package declares itself (src/jobset: pyproject.toml, [project] dependencies or the
`sim` extra; src/kubesim and src/kubeutil: their projects under packaging/), never only
through another package's dependencies (which may drop it in any release) nor from the test
or bench extras. `google-re2` (module `re2`) and `lark` are the two this rule was written
for."""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[3]
OWN = {"jobset", "kubesim", "kubeutil"}


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found - OWN - set(sys.stdlib_module_names) - {"__future__"}


@functools.cache
def _owners() -> dict[str, set[str]]:
    """Top-level module -> the distributions that install it (normalised names)."""
    return {
        m: {canonicalize_name(d) for d in ds}
        for m, ds in importlib.metadata.packages_distributions().items()
    }


# Each package's project: where its distribution's dependencies are declared.
PROJECTS = {
    "jobset": REPO / "pyproject.toml",
    "kubesim": REPO / "packaging" / "kubesim" / "pyproject.toml",
    "kubeutil": REPO / "packaging" / "kubeutil" / "pyproject.toml",
}


def _declared(*groups: str, package: str = "jobset") -> set[str]:
    project = tomllib.loads(PROJECTS[package].read_text())["project"]
    reqs = list(project["dependencies"])
    for group in groups:
        reqs += project["optional-dependencies"][group]
    return {canonicalize_name(Requirement(r).name) for r in reqs}


def test_every_imported_module_is_declared() -> None:
    allowed = {"jobset": _declared("sim"), **{p: _declared(package=p) for p in OWN - {"jobset"}}}
    undeclared: dict[str, set[str]] = {}
    modules: set[str] = set()
    for path in sorted((REPO / "src").rglob("*.py")):
        package = path.relative_to(REPO / "src").parts[0]
        for module in _imports(path):
            modules.add(module)
            dists = _owners().get(module, set())
            if not dists & allowed[package]:
                undeclared.setdefault(module, set()).add(str(path.relative_to(REPO)))
    assert {"re2", "lark", "celpy", "yaml", "aiohttp"} <= modules  # the walk sees imports
    assert undeclared == {}, "declare them in the importing package's project"


def test_the_controller_imports_no_sim_extra_outside_the_simulator() -> None:
    """Only kubesim (and jobset.dev, which starts it) may import what the simulator depends
    on and the controller does not: the controller image installs without it."""
    sim_only = _declared(package="kubesim") - _declared()
    offenders = []
    for path in sorted((REPO / "src").rglob("*.py")):
        rel = path.relative_to(REPO / "src")
        if rel.parts[0] == "kubesim" or rel.parts[:2] == ("jobset", "dev"):
            continue
        for module in _imports(path):
            if _owners().get(module, set()) & sim_only:
                offenders.append((str(rel), module))
    assert offenders == []
