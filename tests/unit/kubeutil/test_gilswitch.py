"""favour_the_loop: the interpreter's switch interval is set for the body and restored."""

from __future__ import annotations

import math
import sys

import pytest

from kubeutil.gilswitch import LOOP_SWITCH_INTERVAL, favour_the_loop


def test_the_interval_is_set_for_the_body_and_restored_after() -> None:
    before = sys.getswitchinterval()
    assert before != pytest.approx(LOOP_SWITCH_INTERVAL)  # the interpreter's own, 5 ms
    with favour_the_loop() as previous:
        assert sys.getswitchinterval() == pytest.approx(LOOP_SWITCH_INTERVAL)
        assert previous == before
    assert sys.getswitchinterval() == before


def test_the_interval_is_restored_when_the_body_raises() -> None:
    before = sys.getswitchinterval()
    with pytest.raises(RuntimeError, match="boom"), favour_the_loop(0.002):
        assert sys.getswitchinterval() == pytest.approx(0.002)
        raise RuntimeError("boom")
    assert sys.getswitchinterval() == before


@pytest.mark.parametrize("bad", [0.0, -0.001, math.nan])
def test_a_non_positive_interval_is_refused_and_nothing_changes(bad: float) -> None:
    before = sys.getswitchinterval()
    with pytest.raises(ValueError, match="switch interval: must be a positive number"):
        with favour_the_loop(bad):
            pass
    assert sys.getswitchinterval() == before
