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

from importlib.metadata import PackageNotFoundError, version
from typing import Final

__all__ = ["DISTRIBUTION", "installed_version"]

DISTRIBUTION: Final = "jobset-py"


def installed_version(distribution: str = DISTRIBUTION) -> str:
    """The installed `distribution`'s version; "0.0.0" for a source tree on sys.path that was
    never installed (no metadata to read)."""
    try:
        return version(distribution)
    except PackageNotFoundError:
        return "0.0.0"
