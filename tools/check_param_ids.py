"""Every multi-argument `pytest.mark.parametrize` table names its cases.

pytest makes ids of the values, and for anything but short strings and numbers they say
nothing (`spec0-labels1`). A table of two or more argument names must give `ids=`, or a
`pytest.param(..., id=...)` for every case.

    python tools/check_param_ids.py [PATH ...]     # default: tests
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

DEFAULT_PATHS = ("tests",)


def _argnames(call: ast.Call) -> list[str]:
    node = call.args[0] if call.args else None
    for kw in call.keywords:
        if kw.arg == "argnames":
            node = kw.value
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [n.strip() for n in node.value.split(",") if n.strip()]
    if isinstance(node, ast.Tuple | ast.List):
        return [
            e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
        ]
    return []


def _named_param(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "param"
        and any(kw.arg == "id" for kw in node.keywords)
    )


def _module_lists(tree: ast.Module) -> dict[str, ast.expr]:
    """Module-level `NAME = [...]` tables, which a parametrize may name instead of a literal."""
    out: dict[str, ast.expr] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            target, value = stmt.target, stmt.value
        else:
            continue
        if isinstance(target, ast.Name):
            out[target.id] = value
    return out


def _all_named(node: ast.expr | None, tables: dict[str, ast.expr], depth: int = 0) -> bool:
    """Whether every case of `node` is a named `pytest.param`: a literal list, a module-level
    table by name, a slice of one, or a sum of those."""
    if node is None or depth > 8:
        return False
    if isinstance(node, ast.List | ast.Tuple):
        return all(_named_param(e) for e in node.elts)
    if isinstance(node, ast.Name) and node.id in tables:
        return _all_named(tables[node.id], tables, depth + 1)
    if isinstance(node, ast.Subscript):
        return _all_named(node.value, tables, depth + 1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _all_named(node.left, tables, depth + 1) and _all_named(
            node.right, tables, depth + 1
        )
    return False


def unnamed_tables(source: str) -> Iterator[tuple[int, list[str]]]:
    """`(line, argnames)` of every multi-argument table in `source` without case names."""
    tree = ast.parse(source)
    tables = _module_lists(tree)
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "parametrize"
        ):
            continue
        names = _argnames(node)
        if len(names) < 2 or any(kw.arg == "ids" for kw in node.keywords):
            continue
        values = node.args[1] if len(node.args) > 1 else None
        if _all_named(values, tables):
            continue
        yield node.lineno, names


def main(argv: Sequence[str] | None = None) -> int:
    paths = (sys.argv[1:] if argv is None else list(argv)) or list(DEFAULT_PATHS)
    found = 0
    for p in map(Path, paths):
        files = sorted(p.rglob("*.py")) if p.is_dir() else [p]
        for file in files:
            for line, names in unnamed_tables(file.read_text()):
                print(f"{file}:{line}: parametrize({', '.join(names)}) has no case names")
                found += 1
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
