"""The distribution both packages ship in, and its version.

The distribution is `jobset-py`, not `jobset`: upstream's Python SDK is published as
`jobset`. The import packages (`jobset`, `kubesim`, `kubeutil`) keep their names, so the
two distributions cannot be installed in one environment (both own `jobset/`); README.md,
"Packaging", says how they coexist.

The version has one source, `[project] version` in pyproject.toml; the installed metadata
carries it here. The chart's `version`/`appVersion` and the kustomize image tag repeat it
(a test keeps them equal: tests/unit/deploy/test_version.py).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Final

__all__ = ["DISTRIBUTION", "installed_version"]

DISTRIBUTION: Final = "jobset-py"


def installed_version() -> str:
    """The installed distribution's version; "0.0.0" for a source tree on sys.path that was
    never installed (no metadata to read)."""
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "0.0.0"
