"""No doc or docstring cites a file that is not in the repository (`tools/check_paths.py`)."""

from __future__ import annotations

from pathlib import Path

from tests.unit.tools import REPO, load_tool

check_paths = load_tool("check_paths")
# Spelt in two parts so that this file cites no missing path itself.
GONE = "docs/" + "design.md"


def test_every_cited_path_exists() -> None:
    assert check_paths.missing(REPO) == []


def test_a_missing_path_and_a_broken_link_are_reported(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "src" / "jobset").mkdir(parents=True)
    (tmp_path / "docs" / "sim.md").write_text("# sim\n")
    (tmp_path / "docs" / "index.md").write_text(
        f"See [sim](sim.md#scale), [gone](gone.md), {GONE} and docs/sim.md.\n"
    )
    (tmp_path / "src" / "jobset" / "cli.py").write_text(f'"""The contract: {GONE}."""\n')
    assert check_paths.missing(tmp_path) == [
        f"docs/index.md: {GONE}",
        "docs/index.md: gone.md",
        f"src/jobset/cli.py: {GONE}",
    ]


def test_upstream_paths_and_placeholders_are_not_ours(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "runtime.md").write_text(
        "client-go's tools/cache/reflector.go; examples/FILE; benchmarks/results/*.json\n"
    )
    assert check_paths.missing(tmp_path) == []
