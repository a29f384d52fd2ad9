"""Every file path the docs and the code's text name must exist in the repository.

Docs and docstrings cite files (`docs/sim.md`, `src/kubesim/cluster.py`, a Markdown link to
`runtime.md#memory`); a cited file that was renamed or never existed sends a reader nowhere.
This scans Markdown files for relative link targets and repository-relative paths, and
Python files for repository-relative paths, and lists those that do not exist.

    python tools/check_paths.py        # exit 1 and one line per missing path

Hand-written: a link checker would also fetch URLs, which this must not do.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# A path is cited from the repository's root when it starts with one of its top-level
# directories; `jobset/`, `kubesim/` and `kubeutil/` are read under `src/`.
ROOTS = (
    "docs",
    "src",
    "tests",
    "benchmarks",
    "tools",
    "config",
    "charts",
    "examples",
    "requirements",
)
PACKAGES = ("jobset", "kubesim", "kubeutil")
_PATH = re.compile(
    r"(?<![\w./-])((?:" + "|".join(ROOTS + PACKAGES) + r")/[\w./*-]*[\w/*])(?![\w(-])"
)
_LINK = re.compile(r"\]\(([^)\s]+)\)")
# Scanned: the docs and the code's own text; not generated or vendored trees.
MARKDOWN = ("*.md", "docs/**/*.md", "examples/**/*.md", "charts/**/*.md", "benchmarks/*.md")
PYTHON = ("src/**/*.py", "tests/**/*.py", "benchmarks/**/*.py", "tools/**/*.py")
# Paths that are cited as what a command writes or a user creates, not as repository files.
NOT_FILES = re.compile(r"(^|/)(dist|build|\.venv|\.cache)(/|$)")
# Upstream's trees share some top-level names (client-go's `tools/cache`, its `.go` files,
# upstream JobSet's `config/components/...`): those are cited as upstream's, not ours.
UPSTREAM = re.compile(
    r"\.go$|^tools/(cache|record|events|leaderelection|pager)\b|^config/components\b"
)
# CHANGELOG.md names removed files on purpose.
SKIPPED = {"CHANGELOG.md"}


def _exists(path: str, repo: Path = REPO) -> bool:
    path = path.rstrip("/.").split("#")[0]
    if any(c in path for c in "<>{}*$") or "..." in path or NOT_FILES.search(path):
        return True  # a pattern or a placeholder, not one file
    if UPSTREAM.search(path) or any(p.isupper() for p in path.split("/")):
        return True  # upstream's, or a placeholder such as `examples/FILE`
    first = path.split("/")[0]
    if first in PACKAGES:
        if "." not in path.split("/")[-1]:
            return True  # a module or component name (`kubesim/controllers/job`), not a file
        return any((repo / base / path).exists() for base in ("src", "charts", "."))
    return (repo / path).exists()


def cited_paths(text: str) -> Iterator[str]:
    """The repository-relative paths `text` names."""
    for m in _PATH.finditer(text):
        yield m.group(1)


def link_targets(text: str) -> Iterator[str]:
    """The relative targets of `text`'s Markdown links (no URLs, no in-page anchors)."""
    for m in _LINK.finditer(text):
        target = m.group(1).split("#")[0]
        if target and ":" not in target:
            yield target


def missing(repo: Path = REPO) -> list[str]:
    """`file: path` for every cited path that does not exist."""
    found: list[str] = []
    seen: set[Path] = set()
    for pattern in MARKDOWN + PYTHON:
        for file in sorted(repo.glob(pattern)):
            if file in seen or ".venv" in file.parts or not file.is_file():
                continue
            if str(file.relative_to(repo)) in SKIPPED:
                continue
            seen.add(file)
            text = file.read_text(errors="replace")
            rel = file.relative_to(repo)
            for path in cited_paths(text):
                if not _exists(path, repo):
                    found.append(f"{rel}: {path}")
            if file.suffix == ".md":
                for target in link_targets(text):
                    if not (file.parent / target).exists():
                        found.append(f"{rel}: {target}")
    return found


def main() -> int:
    problems = missing()
    for line in problems:
        print(line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
