"""`CreationSlice`: a pass hands out every Job until its slice is spent and someone waits."""

from __future__ import annotations

from jobset.controllers.fairshare import (
    MAX_PLAN_SLICE_SECONDS,
    PLAN_SLICE_RATIO,
    CreationSlice,
    slice_seconds,
)


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_nobody_waiting_never_cuts() -> None:
    clock = Clock()
    share = CreationSlice(range(5), seconds=0.5, others_waiting=lambda: False, clock=clock)
    out = []
    for i in share:
        out.append(i)
        clock.t += 10  # long past the slice
    assert out == [0, 1, 2, 3, 4] and not share.cut and share.taken == 5


def test_cuts_once_slice_spent_and_another_key_waits() -> None:
    clock = Clock()
    waiting = [False]
    share = CreationSlice(range(100), seconds=0.5, others_waiting=lambda: waiting[0], clock=clock)
    got = [next(share), next(share)]
    waiting[0] = True  # someone queues, but the slice is not spent yet
    got.append(next(share))
    clock.t += 0.5
    assert list(share) == []
    assert got == [0, 1, 2] and share.cut and share.taken == 3
    assert list(share) == []  # stays cut: the rest is the next pass's


def test_zero_seconds_disables_the_cut() -> None:
    clock = Clock()
    share = CreationSlice(range(3), seconds=0, others_waiting=lambda: True, clock=clock)
    assert list(share) == [0, 1, 2] and not share.cut


def test_the_slice_grows_with_the_plan_and_zero_stays_zero() -> None:
    assert slice_seconds(0.5, 0.001) == 0.5  # a small JobSet's plan: the base slice
    assert slice_seconds(0.5, 0.1) == PLAN_SLICE_RATIO * 0.1  # re-planning stays under 2 %
    assert slice_seconds(0, 0.1) == 0  # slicing off stays off
    # A plan slowed past reason stretches the slice only so far; a longer base stays.
    assert slice_seconds(0.5, 60.0) == MAX_PLAN_SLICE_SECONDS
    assert slice_seconds(30.0, 60.0) == 30.0
