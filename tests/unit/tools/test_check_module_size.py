"""No API server file over 600 lines and no class over 400 (`tools/check_module_size.py`)."""

from __future__ import annotations

from pathlib import Path

from tests.unit.tools import REPO, load_tool

check = load_tool("check_module_size")


def test_the_api_server_is_within_its_limits() -> None:
    assert check.main([str(REPO / p) for p in check.DEFAULT_PATHS]) == 0


def test_a_long_file_and_a_long_class_are_reported(tmp_path: Path) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(400))
    path = tmp_path / "big.py"
    path.write_text("class Big:\n" + body + "".join(f"y{i} = {i}\n" for i in range(200)))
    found = list(check.oversized(path))
    assert len(found) == 2
    assert "601 lines (at most 600)" in found[0]
    assert "class Big is 401 lines (at most 400)" in found[1]


def test_a_class_at_the_limit_passes(tmp_path: Path) -> None:
    path = tmp_path / "edge.py"
    path.write_text("class Edge:\n" + "".join(f"    x{i} = {i}\n" for i in range(399)))
    assert list(check.oversized(path)) == []
