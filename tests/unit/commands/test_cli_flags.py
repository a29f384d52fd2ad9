"""Pure parts of the kubectl-style flags: the plugin's argument order, durations, outputs."""

from __future__ import annotations

import argparse

import pytest

from jobset.cli import build_parser
from jobset.commands.common import parse_duration
from jobset.commands.plugin import build_parser as plugin_parser
from jobset.commands.plugin import hoist_global_flags


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["get", "-n", "a"], ["get", "-n", "a"]),
        (["-n", "a", "get", "x"], ["get", "-n", "a", "x"]),
        (
            ["--context=c", "-nteam", "--kubeconfig", "k", "describe", "x"],
            ["describe", "--context=c", "-nteam", "--kubeconfig", "k", "x"],
        ),
        (["-A", "get"], ["get", "-A"]),
        (["--help"], ["--help"]),
        (["-n", "a"], ["-n", "a"]),
    ],
    ids=[
        "already after",
        "namespace hoisted",
        "several global flags",
        "all namespaces",
        "help alone",
        "no subcommand",
    ],
)
def test_plugin_moves_global_flags_after_the_subcommand(
    argv: list[str], expected: list[str]
) -> None:
    assert hoist_global_flags(argv) == expected


def test_plugin_parses_kubectl_style_arguments() -> None:
    args = plugin_parser().parse_args(
        hoist_global_flags(["-n", "ml", "get", "-l", "a=b", "-o", "wide"])
    )
    assert (args.command, args.namespace, args.selector, args.output) == (
        "get",
        "ml",
        "a=b",
        "wide",
    )


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("0", 0.0), ("5", 5.0), ("30s", 30.0), ("1m30s", 90.0), ("500ms", 0.5), ("2h", 7200.0)],
    ids=["zero", "bare seconds", "seconds", "minutes and seconds", "milliseconds", "hours"],
)
def test_request_timeout_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "abc", "5x", "-1s"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        parse_duration(text)


def test_output_formats_and_dry_run_forms() -> None:
    parser = build_parser()
    assert parser.parse_args(["get", "-o", "jsonpath={.items[*].metadata.name}"]).output.startswith(
        "jsonpath="
    )
    assert parser.parse_args(["get", "-o=name"]).output == "name"
    with pytest.raises(SystemExit):
        parser.parse_args(["get", "-o", "jsonpath={.items["])
    with pytest.raises(SystemExit):
        parser.parse_args(["get", "-o", "table"])
    old = parser.parse_args(["submit", "--dry-run", "jobs.yaml"])  # the original form
    assert (old.dry_run, old.dry_run_spill) == ("client", "jobs.yaml")
    new = parser.parse_args(["submit", "-f", "-", "--dry-run=server"])
    assert (new.dry_run, new.filename) == ("server", ["-"])
    assert parser.parse_args(["delete", "--all", "--ignore-not-found"]).all
