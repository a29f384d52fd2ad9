"""The image's dependencies are pinned: requirements/controller.lock holds exactly the runtime
dependencies of pyproject (no extras) and what they need, each at one version with hashes,
and the Dockerfile installs from it with --require-hashes. The distributions this tree builds
itself (jobset-kubeutil, packaging/kubeutil) are not in the lock: the image builds their
wheels from its own sources; their dependencies are."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[3]
LOCK = REPO / "requirements" / "controller.lock"
BUILD_LOCK = REPO / "requirements" / "build.lock"
PROJECT = "jobset-py (pyproject.toml)"
# Built from this tree (packaging/), not installed from the lock.
OWN = {"jobset-kubeutil"}


@dataclass
class Pin:
    name: str
    version: str
    hashes: list[str] = field(default_factory=list)
    via: list[str] = field(default_factory=list)


def parse_lock(path: Path) -> dict[str, Pin]:
    """pip-compile's output: `name==version \\` then `--hash=sha256:...` lines, then `# via`."""
    pins: dict[str, Pin] = {}
    current: Pin | None = None
    in_via = False
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line:
            continue
        pin = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)\s*\\?", line)
        if pin:
            current = Pin(canonicalize_name(pin[1]), pin[2])
            assert current.name not in pins, f"{current.name} pinned twice"
            pins[current.name] = current
            in_via = False
            continue
        assert not re.match(r"[A-Za-z0-9]", line), f"not an exact pin: {line}"
        if line.startswith("--hash="):
            assert current is not None
            current.hashes.append(line.removeprefix("--hash=").rstrip(" \\"))
        elif line.startswith("# via"):
            assert current is not None
            rest = line.removeprefix("# via").strip()
            current.via += [rest] if rest else []
            in_via = not rest
        elif in_via and line.startswith("#   "):
            assert current is not None
            current.via.append(line.removeprefix("#").strip())
        else:
            in_via = False
    return pins


def runtime_requirements() -> list[Requirement]:
    """pyproject's runtime dependencies, with each of this tree's own distributions replaced
    by its dependencies."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    out: list[Requirement] = []
    for req in map(Requirement, project["dependencies"]):
        if canonicalize_name(req.name) in OWN:
            out += [Requirement(r) for r in importlib.metadata.requires(req.name) or []]
        else:
            out.append(req)
    return out


def extra_names() -> set[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return {
        canonicalize_name(Requirement(r).name)
        for reqs in project["optional-dependencies"].values()
        for r in reqs
    }


def test_every_pin_is_exact_and_hashed() -> None:
    for path in (LOCK, BUILD_LOCK):
        pins = parse_lock(path)
        assert pins, path
        for pin in pins.values():
            assert pin.hashes, f"{path.name}: {pin.name} has no hash"
            assert all(re.fullmatch(r"sha256:[0-9a-f]{64}", h) for h in pin.hashes), pin


def test_the_lock_is_exactly_the_runtime_dependencies_and_theirs() -> None:
    pins = parse_lock(LOCK)
    direct = {canonicalize_name(r.name): r for r in runtime_requirements()}
    # The top level is pyproject's [project] dependencies, at versions they allow.
    top = {name for name, pin in pins.items() if PROJECT in pin.via}
    assert top == set(direct), (
        f"run `make lock`: only in the lock {sorted(top - set(direct))}, "
        f"not locked {sorted(set(direct) - top)}"
    )
    for name, req in direct.items():
        assert req.specifier.contains(pins[name].version, prereleases=True), (req, pins[name])
    # Everything else is there because a locked package needs it (no orphan, no extra).
    for pin in pins.values():
        parents = {canonicalize_name(v) for v in pin.via if v != PROJECT}
        assert pin.via and parents <= set(pins) | OWN, f"{pin.name} is locked via {pin.via}"
    assert not OWN & set(pins), "this tree's own distributions come from its wheels"
    reachable: set[str] = set()
    frontier = set(top)
    while frontier:
        reachable |= frontier
        frontier = {
            name
            for name, pin in pins.items()
            if name not in reachable and {canonicalize_name(v) for v in pin.via} & reachable
        }
    assert reachable == set(pins)
    # The extras' own packages stay out of the image (pytest, mypy, cel-python, ...).
    runtime_closure = _installed_closure(list(direct.values()))
    assert not (extra_names() - runtime_closure) & set(pins)


def _installed_closure(roots: list[Requirement]) -> set[str]:
    """Names of `roots` and what they require, as the installed distributions declare it
    (markers evaluated for this interpreter, no extras)."""
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if name in seen or (req.marker is not None and not req.marker.evaluate({"extra": ""})):
            continue
        seen.add(name)
        for text in importlib.metadata.requires(req.name) or []:
            todo.append(Requirement(text))
    return seen


def test_the_lock_matches_what_the_runtime_dependencies_declare() -> None:
    """The same closure computed from the installed distributions' metadata (this venv has
    the runtime dependencies installed): a dependency added or dropped upstream shows here."""
    pins = parse_lock(LOCK)
    closure = _installed_closure(runtime_requirements())
    assert closure == set(pins), (
        f"run `make lock`: needed but not locked {sorted(closure - set(pins))}, "
        f"locked but not needed {sorted(set(pins) - closure)}"
    )


def test_the_image_installs_from_the_locks_with_hashes() -> None:
    text = (REPO / "Dockerfile").read_text().replace("\\\n", " ")
    installs = [line for line in text.splitlines() if "pip install" in line]
    commands = [c.strip() for line in installs for c in line.split("&&") if "pip install" in c]
    assert commands
    for command in commands:
        if "-r requirements/" in command:
            assert "--require-hashes" in command and "--no-deps" in command, command
        else:  # the project's own wheel: its dependencies came from the lock
            assert "--no-deps" in command and ".whl" in command, command
    locks = {m for c in commands for m in re.findall(r"-r (requirements/\S+)", c)}
    assert locks == {"requirements/controller.lock", "requirements/build.lock"}
    assert "--no-build-isolation" in text  # the build backend comes from build.lock too


def test_ci_linters_are_pinned_exactly() -> None:
    """ruff, mypy and import-linter gate `make test`: a new release must not turn it red."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    tests = {
        canonicalize_name(Requirement(r).name): Requirement(r)
        for r in project["optional-dependencies"]["test"]
    }
    for name in ("ruff", "mypy", "import-linter"):
        spec = str(tests[name].specifier)
        assert re.fullmatch(r"==[0-9][0-9A-Za-z.]*", spec), f"{name}{spec}"
