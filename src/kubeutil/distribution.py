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

import os
import re
import sys
from typing import Final

__all__ = ["DISTRIBUTION", "installed_version"]

DISTRIBUTION: Final = "jobset-py"


# An installed distribution's metadata directory: `jobset_py-0.1.0.dist-info` (PEP 427).
_DIST_INFO: Final = re.compile(r"jobset_py-([^-]+)\.dist-info")


def installed_version() -> str:
    """The installed distribution's version; "0.0.0" for a source tree on sys.path that was
    never installed (no metadata to read).

    Read from the name of the `.dist-info` directory on sys.path, as importlib.metadata
    finds it, when there is exactly one: loading importlib.metadata costs a quarter of a
    quick user command's start-up. Otherwise importlib.metadata decides."""
    found: set[str] = set()
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        found.update(m.group(1) for n in names if (m := _DIST_INFO.fullmatch(n)))
        if found:
            break  # the first sys.path entry that has it wins, as for importlib.metadata
    if len(found) == 1:
        return found.pop()
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "0.0.0"
