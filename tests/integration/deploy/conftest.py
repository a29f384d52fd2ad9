"""The `image` tier (tests/integration/deploy/test_image_build.py) runs only when asked for.

It needs an image built by `make image` (root, buildah, a debootstrap from the Debian mirror:
minutes on a fresh machine), so `make test` does not include it; `make image-test` builds the
image and runs it with `-m image`. Without `-m` naming `image`, its tests are deselected, and
pytest's summary counts them as deselected, not as passed or skipped.
"""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "image" in (config.getoption("markexpr", "") or ""):
        return
    deselected = [i for i in items if i.get_closest_marker("image") is not None]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [i for i in items if i.get_closest_marker("image") is None]
