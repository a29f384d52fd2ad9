"""Multi-argument parametrize tables name their cases (`tools/check_param_ids.py`)."""

from __future__ import annotations

import pytest

from tests.unit.tools import REPO, load_tool

check = load_tool("check_param_ids")

HEAD = "import pytest\n\n"


def test_every_table_in_tests_names_its_cases() -> None:
    assert check.main([str(REPO / "tests")]) == 0


@pytest.mark.parametrize(
    ("decorator", "unnamed"),
    [
        pytest.param('@pytest.mark.parametrize(("a", "b"), [(1, 2)])', True, id="no ids"),
        pytest.param('@pytest.mark.parametrize("a, b", [(1, 2)])', True, id="names in a string"),
        pytest.param(
            '@pytest.mark.parametrize(("a", "b"), [(1, 2)], ids=["one"])', False, id="ids given"
        ),
        pytest.param(
            '@pytest.mark.parametrize(("a", "b"), [pytest.param(1, 2, id="one")])',
            False,
            id="every case a named param",
        ),
        pytest.param(
            '@pytest.mark.parametrize(("a", "b"), [pytest.param(1, 2, id="x"), (3, 4)])',
            True,
            id="one case unnamed",
        ),
        pytest.param('@pytest.mark.parametrize("a", [1, 2])', False, id="one argument"),
    ],
)
def test_tables(decorator: str, unnamed: bool) -> None:
    source = f"{HEAD}{decorator}\ndef test_x(a, b=0):\n    pass\n"
    assert bool(list(check.unnamed_tables(source))) is unnamed


NAMED = 'CASES = [pytest.param(1, 2, id="one"), pytest.param(3, 4, id="two")]\n'
UNNAMED = "CASES = [(1, 2), (3, 4)]\n"


@pytest.mark.parametrize(
    ("table", "values", "unnamed"),
    [
        pytest.param(NAMED, "CASES", False, id="a named module table"),
        pytest.param(NAMED, "CASES[:1] + CASES[1:]", False, id="slices of a named table"),
        pytest.param(UNNAMED, "CASES", True, id="an unnamed module table"),
        pytest.param(NAMED, "CASES + [(5, 6)]", True, id="a named table plus an unnamed case"),
        pytest.param(NAMED, "make_cases()", True, id="a table the check cannot see"),
    ],
)
def test_tables_by_name(table: str, values: str, unnamed: bool) -> None:
    source = f'{HEAD}{table}\n@pytest.mark.parametrize(("a", "b"), {values})\ndef test_x(a, b):\n    pass\n'
    assert bool(list(check.unnamed_tables(source))) is unnamed
