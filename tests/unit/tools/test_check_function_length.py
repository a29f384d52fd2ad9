"""No function in src/, benchmarks/ or tools/ is longer than 80 lines
(`tools/check_function_length.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.tools import REPO, load_tool

check = load_tool("check_function_length")


def _function(name: str, body_lines: int, indent: str = "") -> str:
    body = "".join(f"{indent}    x{i} = {i}\n" for i in range(body_lines))
    return f"{indent}def {name}() -> None:\n{body}"


def test_no_function_is_over_the_limit() -> None:
    assert check.main([str(REPO / p) for p in check.DEFAULT_PATHS]) == 0


@pytest.mark.parametrize(
    ("body_lines", "reported"),
    [
        pytest.param(79, False, id="80-lines-with-the-def"),
        pytest.param(80, True, id="81-lines-with-the-def"),
    ],
)
def test_a_function_is_measured_from_def_to_last_line(body_lines: int, reported: bool) -> None:
    found = list(check.long_functions(_function("f", body_lines)))
    assert found == ([(1, "f", body_lines + 1)] if reported else [])


def test_nested_and_async_functions_count_on_their_own() -> None:
    source = "class C:\n    async def outer(self) -> None:\n" + _function("inner", 85, "        ")
    names = [name for _line, name, _length in check.long_functions(source)]
    assert names == ["outer", "inner"]


def test_main_lists_each_long_function_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "m.py").write_text(_function("short", 3) + _function("long", 90))
    assert check.main([str(tmp_path)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"{tmp_path / 'm.py'}:5: long is 91 lines (at most 80)"
    ]
