"""The agent's retry delays follow client-go's reflector backoff (pure)."""

from __future__ import annotations

import pytest

from jobset.agent.backoff import Backoff


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("rand", "first"),
    [pytest.param(0.0, 0.8, id="no-jitter-drawn"), pytest.param(0.5, 1.2, id="half-jitter")],
)
def test_delays_double_from_800ms_to_30s_with_jitter_up_to_one(rand: float, first: float) -> None:
    clock = Clock()
    b = Backoff(clock=clock, rand=lambda: rand)
    delays = []
    for _ in range(8):
        delays.append(b.next())
        clock.now += 1
    bases = [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]
    assert delays == pytest.approx([base * (1 + rand) for base in bases])
    assert delays[0] == pytest.approx(first)


def test_two_minutes_without_a_backoff_start_from_800ms_again() -> None:
    clock = Clock()
    b = Backoff(clock=clock, rand=lambda: 0.0)
    for _ in range(5):
        b.next()
    clock.now += 120.0  # not more than two minutes: keeps growing
    assert b.next() == pytest.approx(25.6)
    clock.now += 120.5
    assert b.next() == pytest.approx(0.8)
    b.next()
    b.reset()
    assert b.next() == pytest.approx(0.8)
