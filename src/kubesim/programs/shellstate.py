"""What the builtins and the `test` evaluator may see and do of the shell running them.

`interpreter.Shell` has these members; the builtins and expressions are typed against this
protocol so that they need not import the interpreter that imports them.
"""

from __future__ import annotations

from typing import Protocol

from kubesim.programs.parser import Node

__all__ = ["ShellState"]


class ShellState(Protocol):
    """The running shell, as a builtin sees it."""

    vars: dict[str, str]
    files: dict[str, str]
    positional: list[str]
    stdin: str | None
    elapsed: float
    background_until: float
    status: int
    depth: int
    errexit: bool
    xtrace: bool
    pipefail: bool

    def advance(self, seconds: float) -> None: ...

    def arith(self, expr: str) -> int: ...

    def command(self, argv: list[str]) -> int: ...

    def out(self, text: str) -> None: ...

    def err(self, text: str) -> None: ...

    def heuristic_script(self, src: str) -> int: ...

    def in_mount(self, path: str) -> bool: ...

    def is_dir(self, path: str) -> bool: ...

    def run_node(self, node: Node) -> int: ...

    def write_file(self, path: str, content: str | None, append: bool = False) -> bool: ...
