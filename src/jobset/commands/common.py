"""What every user command shares: flags, the connection, errors, output formats, tables.

Errors are one line on stderr (`Error: jobsets.jobset.x-k8s.io "x" not found`), never a
traceback: users script these commands, and the API server's own wording is what they
search for. Tables are drawn with `rich` on a terminal and as kubectl-style aligned plain
text otherwise (pipes, files, CI logs, tests).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, TextIO

from jobset.api import constants as c
from jobset.runtime.apitypes import ApiError

if TYPE_CHECKING:
    from rich.console import Console

    from jobset.sdk.client import JobSetClient

# rich, yaml and the SDK client load where they are used: `jobset get` on a pipe needs none
# of rich, and a command's start-up is most of its time.

__all__ = [
    "EXIT_ERROR",
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_TIMEOUT",
    "EXIT_VANISHED",
    "RESOURCE",
    "DryRunAction",
    "Out",
    "add_connection_flags",
    "add_dry_run_flag",
    "add_no_headers_flag",
    "add_output_flag",
    "add_selector_flag",
    "connect",
    "error_line",
    "parse_duration",
    "print_objects",
    "quiet_logging",
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


_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """kubectl's `--request-timeout`: a Go duration (`30s`, `1m30s`, `500ms`) or plain
    seconds (`5`); `0` means no limit. In seconds."""
    value = text.strip()
    try:
        seconds = float(value)
    except ValueError:
        pos, seconds = 0, 0.0
        while pos < len(value):
            m = _DURATION_PART.match(value, pos)
            if m is None:
                raise argparse.ArgumentTypeError(
                    f"invalid duration {text!r} (e.g. 30s, 1m30s, 500ms; 0: no timeout)"
                ) from None
            seconds += float(m.group(1)) * _UNIT_SECONDS[m.group(2)]
            pos = m.end()
        if not value:
            raise argparse.ArgumentTypeError("empty duration") from None
    if seconds < 0:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r}: negative")
    return seconds


def add_connection_flags(p: argparse.ArgumentParser, *, all_namespaces: bool = False) -> None:
    p.add_argument("--kubeconfig", default=None, help="kubeconfig file (default: $KUBECONFIG)")
    p.add_argument("--context", default=None, help="kubeconfig context to use")
    p.add_argument(
        "-n", "--namespace", default=None, help="namespace (default: the context's, or default)"
    )
    p.add_argument(
        "--request-timeout",
        type=parse_duration,
        default=None,
        metavar="DURATION",
        help="give up on a single server request after this long (30s, 1m; 0: never)",
    )
    if all_namespaces:
        p.add_argument(
            "-A", "--all-namespaces", action="store_true", help="JobSets of every namespace"
        )


DRY_RUN_MODES: Final = ("none", "client", "server")


class DryRunAction(argparse.Action):
    """`--dry-run[=none|client|server]` as kubectl (bare: client). A bare `--dry-run`
    followed by the file (`submit --dry-run jobs.yaml`, `delete --dry-run NAME`, the original form) keeps working:
    a value that is no mode is the positional argument, not an error."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        if values is None or values in DRY_RUN_MODES:
            setattr(namespace, self.dest, values or "client")
            return
        setattr(namespace, self.dest, "client")
        namespace.dry_run_spill = values


def add_dry_run_flag(p: argparse.ArgumentParser, help: str) -> None:
    p.add_argument(
        "--dry-run",
        nargs="?",
        const="client",
        default="none",
        action=DryRunAction,
        metavar="none|client|server",
        help=help,
    )


def add_selector_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-l",
        "--selector",
        default="",
        help="label selector (e.g. -l team=ml,tier!=dev, -l 'env in (a,b)')",
    )


def add_no_headers_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--no-headers", action="store_true", help="tables without the header line (for scripts)"
    )


def _output_type(choices: Sequence[str]) -> Callable[[str], str]:
    def parse(value: str) -> str:
        value = value.removeprefix("=")
        if value in choices:
            return value
        if "jsonpath" in choices and value.startswith("jsonpath="):
            from jobset.commands.jsonpath import JsonPathError, Template

            try:
                Template(value.removeprefix("jsonpath="))
            except JsonPathError as exc:
                raise argparse.ArgumentTypeError(f"invalid jsonpath template: {exc}") from None
            return value
        allowed = ", ".join(c if c != "jsonpath" else "jsonpath=TEMPLATE" for c in choices)
        raise argparse.ArgumentTypeError(f"invalid output format {value!r} (choose: {allowed})")

    parse.__name__ = "output format"
    return parse


def add_output_flag(p: argparse.ArgumentParser, *choices: str) -> None:
    formats = choices or ("json", "yaml")
    shown = "|".join(f if f != "jsonpath" else "jsonpath=TEMPLATE" for f in formats)
    p.add_argument(
        "-o",
        "--output",
        type=_output_type(formats),
        default=None,
        metavar=shown,
        help="print machine-readable output instead of the human view"
        + (
            " (jsonpath: kubectl's template, e.g. '{.items[*].metadata.name}')"
            if "jsonpath" in formats
            else ""
        ),
    )


def print_objects(
    out: Out, objects: Sequence[Mapping[str, Any]], fmt: str, *, single: bool
) -> None:
    """JobSets as `-o json|yaml|name|jsonpath=...` print them (a single object when `single`,
    else a v1 List, as kubectl)."""
    if fmt == "name":
        for obj in objects:
            out.line(f"{RESOURCE}/{(obj.get('metadata') or {}).get('name') or ''}")
        return
    data: Any = (
        dict(objects[0])
        if single and objects
        else {"apiVersion": "v1", "kind": "List", "items": [dict(o) for o in objects]}
    )
    if fmt.startswith("jsonpath="):
        from jobset.commands.jsonpath import Template

        text = Template(fmt.removeprefix("jsonpath=")).render(data)
        out.stream.write(text)
        if text and not text.endswith("\n"):
            out.stream.write("\n")
        return
    out.data(data, fmt)


def quiet_logging() -> None:
    """Client retries log through structlog; a user command keeps stdout for its output."""
    from jobset.runtime.logging import configure_logging

    configure_logging("console", "ERROR", stream=sys.stderr)


async def connect(args: argparse.Namespace, *, read_only: bool = False) -> JobSetClient:
    """The connection of a command; `read_only` (gets and lists only) may be the quick one
    (`jobset.sdk.quickclient`), which logs nothing."""
    from jobset.sdk.client import JobSetClient
    from jobset.sdk.quickclient import quick_config

    if not read_only or quick_config(args.kubeconfig, args.context) is None:
        quiet_logging()  # before the full client loads a kubeconfig (it logs what it misses)
    return await JobSetClient.connect(
        args.kubeconfig,
        context=args.context,
        namespace=args.namespace,
        request_timeout=getattr(args, "request_timeout", None),
        read_only=read_only,
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
        self._console: Console | None = None

    @property
    def console(self) -> Console:
        """The rich console on this stream, made on first use."""
        if self._console is None:
            from rich.console import Console

            self._console = Console(
                file=self.stream,
                force_terminal=self.tty,
                no_color=not self.tty,
                highlight=False,
                soft_wrap=not self.tty,
            )
        return self._console

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
            import yaml

            self.stream.write(yaml.safe_dump(obj, sort_keys=False))

    def table(
        self,
        headers: Sequence[str],
        rows: Sequence[Sequence[str]],
        indent: int = 0,
        *,
        show_headers: bool = True,
    ) -> None:
        """Aligned columns like `kubectl get` (three spaces apart), or a rich table."""
        if self.tty:
            from rich.table import Table
            from rich.text import Text

            table = Table(
                box=None,
                pad_edge=False,
                padding=(0, 3, 0, 0),
                show_edge=False,
                show_header=show_headers,
            )
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
        lines = plain_table(headers, rows)
        for text in lines if show_headers else lines[1:]:
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
