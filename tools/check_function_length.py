"""No function longer than the limit (80 lines, from its `def` to its last line).

ruff has no rule for a function's length (its `PLR0915` counts statements, which a long
literal or call evades), so this walks the AST. A function nested in another counts on its
own and within its parent.

    python tools/check_function_length.py [--max 80] [PATH ...]   # default: src benchmarks tools
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

MAX_LINES = 80
# The product, the simulator, the benchmarks and the tools; tests/ still holds longer ones.
DEFAULT_PATHS = ("src", "benchmarks", "tools")


def long_functions(source: str, max_lines: int = MAX_LINES) -> Iterator[tuple[int, str, int]]:
    """`(line, name, length)` of every function in `source` longer than `max_lines`."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > max_lines:
                yield node.lineno, node.name, length


def python_files(paths: Sequence[str]) -> Iterator[Path]:
    for p in map(Path, paths):
        if p.is_dir():
            yield from sorted(f for f in p.rglob("*.py") if ".venv" not in f.parts)
        elif p.suffix == ".py":
            yield p


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max", type=int, default=MAX_LINES, help="most lines a function may have")
    parser.add_argument("paths", nargs="*", default=list(DEFAULT_PATHS))
    args = parser.parse_args(argv)
    found = 0
    for file in python_files(args.paths):
        for line, name, length in long_functions(file.read_text(), args.max):
            print(f"{file}:{line}: {name} is {length} lines (at most {args.max})")
            found += 1
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
