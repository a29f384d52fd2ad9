"""No file of the API server over 600 lines and no class of it over 400.

The API server is laid out by resource (`registry/`), protocol (`http/`) and storage
(`core/`) so that no module grows into a second `apicore.py`; this keeps that true.

    python tools/check_module_size.py [--max-file 600] [--max-class 400] [PATH ...]
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

MAX_FILE_LINES = 600
MAX_CLASS_LINES = 400
DEFAULT_PATHS = ("src/kubesim/apiserver",)


def oversized(
    path: Path, max_file: int = MAX_FILE_LINES, max_class: int = MAX_CLASS_LINES
) -> Iterator[str]:
    """A line per limit `path` goes over: the file's length, then each class's."""
    source = path.read_text(encoding="utf-8")
    lines = len(source.splitlines())
    if lines > max_file:
        yield f"{path}: {lines} lines (at most {max_file})"
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > max_class:
                yield f"{path}:{node.lineno}: class {node.name} is {length} lines (at most {max_class})"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-file", type=int, default=MAX_FILE_LINES)
    parser.add_argument("--max-class", type=int, default=MAX_CLASS_LINES)
    parser.add_argument("paths", nargs="*", default=list(DEFAULT_PATHS))
    args = parser.parse_args(argv)
    found = [
        line
        for root in map(Path, args.paths)
        for path in sorted(root.rglob("*.py") if root.is_dir() else [root])
        for line in oversized(path, args.max_file, args.max_class)
    ]
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
