"""GcPauses: every collection is timed by generation; start-up survivors are frozen."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from jobset.runtime import gcpause
from jobset.runtime.gcpause import GcPauses
from jobset.runtime.metrics import RuntimeMetrics, new_registry


@pytest.fixture
def pauses() -> Iterator[GcPauses]:
    monitor = GcPauses(RuntimeMetrics(new_registry(process_metrics=False)).gc_duration_seconds)
    monitor.install()
    yield monitor
    monitor.uninstall()
    gc.unfreeze()


def _count(monitor: GcPauses, generation: str) -> float:
    for metric in monitor.histogram.collect():
        for sample in metric.samples:
            if sample.name.endswith("_count") and sample.labels == {"generation": generation}:
                return sample.value
    return 0.0


def test_a_full_collection_is_observed_as_generation_2(pauses: GcPauses) -> None:
    before = _count(pauses, "2")
    gc.collect()
    assert _count(pauses, "2") == before + 1
    assert pauses.max_pause > 0


def test_young_collections_are_observed_by_their_generation(pauses: GcPauses) -> None:
    gc.collect(0)
    assert _count(pauses, "0") >= 1


def test_uninstall_stops_observing(pauses: GcPauses) -> None:
    pauses.uninstall()
    before = _count(pauses, "2")
    gc.collect()
    assert _count(pauses, "2") == before
    assert pauses._callback not in gc.callbacks


def test_freeze_startup_takes_survivors_out_of_collections_once_per_process(
    pauses: GcPauses, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gcpause, "_frozen", False)
    survivors = [{"job": i, "labels": {"a": "b"}} for i in range(5000)]
    frozen = pauses.freeze_startup()
    assert frozen == gc.get_freeze_count() >= 5000
    # Everything tracked now is new since the freeze: the survivors are not among it.
    tracked = {id(o) for o in gc.get_objects()}
    assert not any(id(s) in tracked for s in survivors)
    # A second manager in the same process freezes nothing more.
    later = [[i] for i in range(100)]  # lists are always tracked
    assert pauses.freeze_startup() == frozen
    assert id(later[0]) in {id(o) for o in gc.get_objects()}
