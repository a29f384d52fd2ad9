"""A value the code owns is written in the docs only as a rendered copy of its constant
(`tools/check_settings.py`)."""

from __future__ import annotations

from pathlib import Path

from tests.unit.tools import REPO, load_tool

check = load_tool("check_settings")

SLICE = check.Setting("jobset.slicing", "SLICE_SECONDS", r"slice", units=((r"\s*s\b", 1.0),))
GOAL = check.Setting(
    "benchmarks.goals",
    "GOAL_RSS_BYTES",
    r"RSS per Job",
    render=lambda v: f"{v / 1024:g}",
    units=((r"\s*KB", 1024.0),),
)
SETTINGS = (SLICE, GOAL)


def _marker(key: str, text: str) -> str:
    return f"<!-- setting: {key} -->{text}<!-- /setting -->"


def _repo(tmp_path: Path, doc: str) -> Path:
    (tmp_path / "src" / "jobset").mkdir(parents=True)
    (tmp_path / "src" / "jobset" / "slicing.py").write_text(
        "from typing import Final\n\nBASE: Final = 0.25\nSLICE_SECONDS: Final = BASE * 2\n"
    )
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "goals.py").write_text("GOAL_RSS_BYTES = 3 * 1024\n")
    (tmp_path / "NOTES.md").write_text(doc)
    return tmp_path


def test_no_doc_restates_a_setting_of_the_code() -> None:
    assert check.problems(REPO) == []


def test_a_restated_value_is_reported_with_its_setting(tmp_path: Path) -> None:
    doc = (
        "# Ops\n\nA pass gives its worker up after its\nslice, 0.5 s by default.\n\n"
        "| goal |\n|---|\n| ≤ 3 KB RSS per Job |\n\nTimeouts are 0.5 s (not about it).\n"
    )
    assert check.problems(_repo(tmp_path, doc), SETTINGS) == [
        "NOTES.md:3: restates jobset.slicing.SLICE_SECONDS (0.5 s); cite it as "
        "<!-- setting: jobset.slicing.SLICE_SECONDS -->...<!-- /setting -->",
        "NOTES.md:8: restates benchmarks.goals.GOAL_RSS_BYTES (3 KB); cite it as "
        "<!-- setting: benchmarks.goals.GOAL_RSS_BYTES -->...<!-- /setting -->",
    ]


def test_a_stale_or_unknown_marker_is_reported_and_write_renders_it(tmp_path: Path) -> None:
    doc = (
        f"The slice is {_marker(SLICE.key, '0.4')} s; RSS per Job "
        f"≤ {_marker(GOAL.key, '3')} KB; {_marker('jobset.slicing.GONE', '7')}.\n"
    )
    repo = _repo(tmp_path, doc)
    assert check.problems(repo, SETTINGS) == [
        "NOTES.md:1: jobset.slicing.SLICE_SECONDS is 0.5, the doc says 0.4",
        "NOTES.md:1: no setting jobset.slicing.GONE (tools/check_settings.py)",
    ]
    assert check.write(repo, SETTINGS) == [repo / "NOTES.md"]
    assert _marker(SLICE.key, "0.5") in (repo / "NOTES.md").read_text()
    assert check.problems(repo, SETTINGS) == [
        "NOTES.md:1: no setting jobset.slicing.GONE (tools/check_settings.py)"
    ]
