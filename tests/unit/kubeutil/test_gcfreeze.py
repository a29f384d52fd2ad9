"""GcFreezer: full collections walk only what is new; reclaim() finds frozen cycles."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from kubeutil.gcfreeze import FULL_EVERY, GcFreezer


class Node:
    """A reference-cycle member that can be weakly referenced."""

    def __init__(self) -> None:
        self.other: Node | None = None


@pytest.fixture
def freezer() -> Iterator[GcFreezer]:
    f = GcFreezer(reclaim_seconds=3600)
    f.install()
    yield f
    f.uninstall()
    gc.unfreeze()


def test_survivors_of_a_full_collection_are_frozen(freezer: GcFreezer) -> None:
    store = [{"metadata": {"name": str(i)}} for i in range(10_000)]
    # Building the store may itself trigger a full collection (and a freeze): count from here.
    before = freezer.freezes
    gc.collect()
    assert freezer.freezes == before + 1
    assert gc.get_freeze_count() >= len(store)
    # The next full collection does not walk them: nothing of the store is tracked now.
    tracked = {id(o) for o in gc.get_objects()}
    assert not any(id(o) in tracked for o in store)


def test_a_frozen_cycle_outlives_collections_until_reclaim(freezer: GcFreezer) -> None:
    a, b = Node(), Node()
    a.other, b.other = b, a
    gone = weakref.ref(a)
    gc.collect()  # alive: frozen with the other survivors
    del a, b
    gc.collect()
    assert gone() is not None, "frozen: not examined by ordinary collections"
    assert freezer.reclaim() >= 2
    assert gone() is None and freezer.reclaims == 1
    assert gc.get_freeze_count() > 0  # the reclaim's survivors are frozen again


def test_uninstalled_it_freezes_nothing(freezer: GcFreezer) -> None:
    freezer.uninstall()
    gc.unfreeze()
    gc.collect()
    assert freezer.freezes == 0 and gc.get_freeze_count() == 0


def test_installed_it_collects_fully_every_two_middle_collections() -> None:
    before = gc.get_threshold()
    f = GcFreezer(reclaim_seconds=3600)
    f.install()
    try:
        assert gc.get_threshold() == (before[0], before[1], FULL_EVERY) == (*before[:2], 2)
        assert f.report()["thresholds"] == [before[0], before[1], 2]
        f.install()  # idempotent: what uninstall restores is still the original
    finally:
        f.uninstall()
        gc.unfreeze()
    assert gc.get_threshold() == before


def test_full_every_is_at_least_one() -> None:
    with pytest.raises(ValueError, match="full_every must be at least 1, not 0"):
        GcFreezer(full_every=0)
