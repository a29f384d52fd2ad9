"""Every Python name the docs cite in backticks must exist in the code.

The path check (`tools/check_paths.py`) sees files, not names: a doc that cites
`JobSetReconciler.reconcile` where the class is `JobSetController` sends a reader nowhere as
surely as a missing file does. Three forms are checked, in the Markdown files that
`check_paths.py` scans:

- `Class.member` (a CamelCase class, a snake_case member, with or without a call): a class of
  that name in `src/`, `benchmarks/` or `tools/` that defines the member (a method, a class
  attribute or field, or `self.member = ...` in a method), itself or through a base class of
  ours. A Go method is capitalised (`JobSetReconciler.Reconcile`) and is not ours to check.
- `function(...)` (a snake_case name called): a function or method of that name, a Python
  builtin, or one of the CEL functions docs/api.md quotes from validation rules.
- `package.module.name` under `jobset`, `kubesim` or `kubeutil`: the module exists and
  defines each name after it (a class's member as above).

    python tools/check_names.py        # exit 1 and one line per name that is not there

Hand-written on `ast`: importing the code to look names up would run it.
"""

from __future__ import annotations

import ast
import builtins
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CODE = ("src", "benchmarks", "tools")
PACKAGES = ("jobset", "kubesim", "kubeutil")
MARKDOWN = ("*.md", "docs/**/*.md", "examples/**/*.md", "charts/**/*.md", "benchmarks/*.md")
# CHANGELOG.md names removed code on purpose; RESULTS.md is generated from profiles.
SKIPPED = {"CHANGELOG.md", "RESULTS.md"}
# Functions of CEL (the language of x-kubernetes-validations rules), not of Python.
CEL_FUNCTIONS = frozenset({"has", "size", "matches", "exists", "all", "quantity"})

_SPAN = re.compile(r"`([^`\n]+)`")
_MEMBER = re.compile(r"([A-Z][A-Za-z0-9_]*)\.([a-z_][a-z0-9_]*)(?:\(.*\))?")
_CALL = re.compile(r"([a-z_][a-z0-9_]*)\(.*\)")
_DOTTED = re.compile(r"((?:" + "|".join(PACKAGES) + r")(?:\.[A-Za-z_]\w*)+)(?:\(.*\))?")
# Dotted words under a package name that are not module paths: API groups, file names.
_NOT_PYTHON = re.compile(r"\.(io|com|org|yaml|yml|json|md|py|txt)$|\.k8s\.")


@dataclass
class ClassInfo:
    members: set[str] = field(default_factory=set)
    bases: list[str] = field(default_factory=list)


@dataclass
class Index:
    """What the code defines: classes by name, every function name, each module's names."""

    classes: dict[str, list[ClassInfo]] = field(default_factory=dict)
    functions: set[str] = field(default_factory=set)
    modules: dict[str, set[str]] = field(default_factory=dict)

    def has_member(self, cls: str, member: str, seen: frozenset[str] = frozenset()) -> bool:
        for info in self.classes.get(cls, ()):
            if member in info.members:
                return True
            if any(self.has_member(b, member, seen | {cls}) for b in info.bases if b not in seen):
                return True
        return False


def _class_info(node: ast.ClassDef) -> ClassInfo:
    info = ClassInfo(
        bases=[b.id if isinstance(b, ast.Name) else ast.unparse(b) for b in node.bases]
    )
    for item in node.body:
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            info.members.add(item.name)
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            info.members.add(item.target.id)
        elif isinstance(item, ast.Assign):
            info.members.update(t.id for t in item.targets if isinstance(t, ast.Name))
    for sub in ast.walk(node):
        targets = sub.targets if isinstance(sub, ast.Assign) else []
        if isinstance(sub, ast.AnnAssign | ast.AugAssign):
            targets = [sub.target]
        for target in targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                if target.value.id in ("self", "cls"):
                    info.members.add(target.attr)
    return info


def _top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def build_index(repo: Path) -> Index:
    index = Index()
    for top in CODE:
        for path in sorted((repo / top).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    index.classes.setdefault(node.name, []).append(_class_info(node))
                elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    index.functions.add(node.name)
            if top == "src":
                parts = list(path.relative_to(repo / "src").with_suffix("").parts)
                if parts[-1] == "__init__":
                    parts.pop()
                index.modules[".".join(parts)] = _top_level_names(tree)
    return index


def _dotted_problem(index: Index, dotted: str) -> str | None:
    parts = dotted.split(".")
    cut = max(i for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in index.modules)
    module, rest = ".".join(parts[:cut]), parts[cut:]
    if not rest:
        return None
    if rest[0] not in index.modules[module]:
        return f"{module} defines no {rest[0]}"
    if len(rest) > 1 and not index.has_member(rest[0], rest[1]):
        return f"class {rest[0]} has no member {rest[1]}"
    return None


def problem(index: Index, span: str) -> str | None:
    """Why the name cited as `span` is not there, or None (also for what is not a name)."""
    if m := _MEMBER.fullmatch(span):
        cls, member = m[1], m[2]
        if cls not in index.classes:
            return f"no class {cls}"
        return None if index.has_member(cls, member) else f"class {cls} has no member {member}"
    if m := _CALL.fullmatch(span):
        name = m[1]
        known = name in index.functions or hasattr(builtins, name) or name in CEL_FUNCTIONS
        return None if known else f"no function {name}"
    if (m := _DOTTED.fullmatch(span)) and not _NOT_PYTHON.search(m[1]):
        return _dotted_problem(index, m[1])
    return None


def cited(repo: Path) -> Iterator[tuple[str, str]]:
    """(doc, backticked span) for every code span of the scanned Markdown files."""
    seen: set[Path] = set()
    for pattern in MARKDOWN:
        for path in sorted(repo.glob(pattern)):
            if path in seen or path.name in SKIPPED or ".venv" in path.parts:
                continue
            seen.add(path)
            for m in _SPAN.finditer(path.read_text()):
                yield str(path.relative_to(repo)), m[1].strip()


def missing(repo: Path = REPO) -> list[str]:
    index = build_index(repo)
    found = []
    for doc, span in cited(repo):
        why = problem(index, span)
        if why is not None:
            found.append(f"{doc}: `{span}`: {why}")
    return sorted(set(found))


def main() -> int:
    found = missing()
    for line in found:
        print(line)
    if found:
        print(f"{len(found)} cited name(s) not in the code")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
