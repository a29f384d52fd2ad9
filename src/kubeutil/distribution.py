"""The distributions this repository ships, and their versions.

The controller's distribution is `jobset-py`, not `jobset`: upstream's Python SDK is
published as `jobset`. The import package `jobset` keeps its name, so the two distributions
cannot be installed in one environment (both own `jobset/`); README.md, "Packaging", says
how they coexist. The simulator is the `kubesim` distribution and this package
`jobset-kubeutil` (docs/decisions/0007-three-wheels.md).

Each version has one source, the `[project] version` of its pyproject.toml; the installed
metadata carries it here. The chart's `version`/`appVersion` and the kustomize image tag
repeat the controller's (a test keeps them equal: tests/unit/deploy/test_version.py).
"""

from __future__ import annotations

import os
import re
import sys
from typing import Final

__all__ = ["DISTRIBUTION", "installed_version"]

DISTRIBUTION: Final = "jobset-py"


def _dist_info(distribution: str) -> re.Pattern[str]:
    """An installed distribution's metadata directory: `jobset_py-0.1.0.dist-info` (PEP 427)."""
    return re.compile(re.escape(distribution.replace("-", "_")) + r"-([^-]+)\.dist-info")


def installed_version(distribution: str = DISTRIBUTION) -> str:
    """The installed `distribution`'s version; "0.0.0" for a source tree on sys.path that was
    never installed (no metadata to read).

    Read from the name of the `.dist-info` directory on sys.path, as importlib.metadata
    finds it, when there is exactly one: loading importlib.metadata costs a quarter of a
    quick user command's start-up. Otherwise importlib.metadata decides."""
    pattern = _dist_info(distribution)
    found: set[str] = set()
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        found.update(m.group(1) for n in names if (m := pattern.fullmatch(n)))
        if found:
            break  # the first sys.path entry that has it wins, as for importlib.metadata
    if len(found) == 1:
        return found.pop()
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return "0.0.0"
