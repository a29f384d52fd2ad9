"""A quick user command loads only what it uses: the modules `jobset get`, `describe` and
`tree` need leave the full API client (aiohttp, kubernetes_asyncio), rich, structlog and the
other commands unloaded. Their speed is measured by benchmarks/cli_latency.py; this guards
the cause."""

from __future__ import annotations

import subprocess
import sys

HEAVY = (
    "aiohttp",
    "kubernetes_asyncio",
    "rich",
    "structlog",
    "importlib.metadata",
    "jobset.runtime.client",
    "jobset.api.validation",
    "jobset.commands.watch",
    "jobset.commands.submit",
)


def _loaded_after(code: str) -> list[str]:
    probe = f"import sys\n{code}\nprint(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return done.stdout.split()


def test_a_quick_command_loads_neither_the_full_client_nor_the_other_commands() -> None:
    code = """
import argparse
from jobset.commands import add_user_commands
from jobset.commands.common import Out, connect
from jobset.sdk.client import JobSetClient
from jobset.sdk.quickclient import QuickClient, quick_config
from jobset import __version__
for name in ("get", "describe", "tree"):
    add_user_commands(argparse.ArgumentParser().add_subparsers(), only=name)
import io
Out(io.StringIO()).table(("A",), [["b"]])
"""
    assert _loaded_after(code) == []
    # The full parser still has them all.
    assert "jobset.commands.watch" in _loaded_after(
        "from jobset.cli import build_parser\nbuild_parser()"
    )
