"""A `jobset sim` plus the controller harness (webhooks installed, CA injected) per module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kubesim.process import SimProcess
from tests.integration.placement.process import HarnessProcess, start_harness


@pytest.fixture(scope="module")
def harness(sim_none: SimProcess) -> Iterator[HarnessProcess]:
    h = start_harness(sim_none)
    yield h
    h.stop()
