"""No import cycle anywhere in src/ (`tools/check_import_cycles.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.tools import REPO, load_tool

check = load_tool("check_import_cycles")


def test_src_has_no_import_cycle() -> None:
    assert check.main([str(REPO / "src")]) == 0


def _graph(edges: dict[str, set[str]]) -> dict[str, frozenset[str]]:
    return {node: frozenset(targets) for node, targets in edges.items()}


def test_components_of_a_cycle_and_not_of_a_chain() -> None:
    graph = _graph({"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": set(), "f": {"f"}})
    assert check.strongly_connected(graph) == [["a", "b", "c"]]


def test_the_reported_chain_is_the_shortest_round_the_first_module() -> None:
    graph = _graph({"a": {"b", "x"}, "b": {"c"}, "c": {"a"}, "x": {"a"}})
    (component,) = check.strongly_connected(graph)
    assert component == ["a", "b", "c", "x"]
    assert check.shortest_cycle(graph, component) == ["a", "x", "a"]


def _package(root: Path, name: str, modules: dict[str, str]) -> None:
    (root / name).mkdir(parents=True)
    (root / name / "__init__.py").write_text("")
    for module, text in modules.items():
        (root / name / f"{module}.py").write_text(text)


@pytest.mark.parametrize(
    "b_source",
    [
        pytest.param("from cyclepkg_lazy.a import A\n", id="module-level"),
        pytest.param("def f():\n    from cyclepkg_lazy.a import A\n    return A\n", id="lazy"),
        pytest.param(
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from cyclepkg_lazy.a import A\n",
            id="type-checking",
        ),
    ],
)
def test_a_cycle_is_found_however_the_import_is_hidden(
    tmp_path: Path, b_source: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _package(
        tmp_path,
        "cyclepkg_lazy",
        {"a": "from cyclepkg_lazy.b import B\nA = 1\n", "b": "B = 2\n" + b_source},
    )
    _package(
        tmp_path, "cyclepkg_clean", {"low": "X = 1\n", "high": "from cyclepkg_clean import low\n"}
    )
    assert check.main([str(tmp_path)]) == 1
    (line, summary) = capsys.readouterr().out.splitlines()
    assert line.startswith(
        "import cycle of 2 modules: cyclepkg_lazy.a -> cyclepkg_lazy.b (line 1 of"
    )
    assert line.endswith(" of cyclepkg_lazy.b)")
    assert summary.startswith("1 import cycle(s)")


def test_a_tree_without_cycles_passes(tmp_path: Path) -> None:
    _package(tmp_path, "cyclepkg_ok", {"low": "X = 1\n", "high": "from cyclepkg_ok.low import X\n"})
    assert check.main([str(tmp_path)]) == 0
