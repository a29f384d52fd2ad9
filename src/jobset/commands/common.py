"""What every user command shares: flags, the connection, errors, output formats, tables.

Errors are one line on stderr (`Error: jobsets.jobset.x-k8s.io "x" not found`), never a
traceback: users script these commands, and the API server's own wording is what they
search for. Tables are drawn with `rich` on a terminal and as kubectl-style aligned plain
text otherwise (pipes, files, CI logs, tests).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, Final, TextIO

import yaml
from rich.console import Console
from rich.table import Table
from rich.text import Text

from jobset.api import constants as c
from jobset.runtime.client import ApiError
from jobset.sdk.client import JobSetClient

__all__ = [
    "EXIT_ERROR",
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_TIMEOUT",
    "EXIT_VANISHED",
    "RESOURCE",
    "Out",
    "add_connection_flags",
    "add_output_flag",
    "connect",
    "error_line",
]

# Exit codes (documented in `jobset watch --help` and docs/cli.md).
EXIT_OK: Final = 0  # success; for watch / submit --wait: the JobSet Completed
EXIT_ERROR: Final = 1  # API error (NotFound...), invalid manifest, cannot connect
# 2 is argparse's usage error.
EXIT_FAILED: Final = 3  # watch / submit --wait: the JobSet Failed
EXIT_TIMEOUT: Final = 4  # watch / submit --wait: --timeout expired first
EXIT_VANISHED: Final = 5  # watch / submit --wait: the JobSet was deleted meanwhile

# How kubectl names the resource in messages: `jobset.jobset.x-k8s.io/x created`.
RESOURCE: Final = f"{c.SINGULAR}.{c.GROUP}"


def add_connection_flags(p: argparse.ArgumentParser, *, all_namespaces: bool = False) -> None:
    p.add_argument("--kubeconfig", default=None, help="kubeconfig file (default: $KUBECONFIG)")
    p.add_argument("--context", default=None, help="kubeconfig context to use")
    p.add_argument(
        "-n", "--namespace", default=None, help="namespace (default: the context's, or default)"
    )
    if all_namespaces:
        p.add_argument(
            "-A", "--all-namespaces", action="store_true", help="JobSets of every namespace"
        )


def add_output_flag(p: argparse.ArgumentParser, *choices: str) -> None:
    p.add_argument(
        "-o",
        "--output",
        choices=choices or ("json", "yaml"),
        default=None,
        help="print machine-readable output instead of the human view",
    )


async def connect(args: argparse.Namespace) -> JobSetClient:
    return await JobSetClient.connect(
        args.kubeconfig, context=args.context, namespace=args.namespace
    )


def error_line(exc: BaseException) -> str:
    """The one line printed for an error: the API server's message when there is one."""
    if isinstance(exc, ApiError):
        return f"Error: {exc.message or f'{exc.status} {exc.reason}'}"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return f"Error: {text}"


class Out:
    """stdout for one command: rich on a terminal, plain text otherwise."""

    def __init__(self, stream: TextIO | None = None, *, tty: bool | None = None) -> None:
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty() if tty is None else tty
        self.console = Console(
            file=self.stream,
            force_terminal=self.tty,
            no_color=not self.tty,
            highlight=False,
            soft_wrap=not self.tty,
        )

    def line(self, text: str = "") -> None:
        if self.tty:
            self.console.print(text, markup=False)
        else:
            self.stream.write(text + "\n")

    def data(self, obj: Any, fmt: str) -> None:
        """`obj` as JSON or YAML (always plain: it is for programs)."""
        if fmt == "json":
            self.stream.write(json.dumps(obj, indent=2) + "\n")
        else:
            self.stream.write(yaml.safe_dump(obj, sort_keys=False))

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[str]], indent: int = 0) -> None:
        """Aligned columns like `kubectl get` (three spaces apart), or a rich table."""
        if self.tty:
            table = Table(box=None, pad_edge=False, padding=(0, 3, 0, 0), show_edge=False)
            for h in headers:
                table.add_column(h, header_style="bold", no_wrap=True, overflow="fold")
            for row in rows:
                table.add_row(*(Text(cell) for cell in row))
            if indent:
                from rich.padding import Padding

                self.console.print(Padding(table, (0, 0, 0, indent)))
            else:
                self.console.print(table)
            return
        for text in plain_table(headers, rows):
            self.stream.write(" " * indent + text + "\n")


def plain_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Lines of a kubectl-style table: columns left-aligned, three spaces apart."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    lines = []
    for row in [list(headers), *[list(r) for r in rows]]:
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row)]
        lines.append("   ".join(cells).rstrip())
    return lines
