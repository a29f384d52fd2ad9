"""GcPauses: every collection is timed by generation."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from jobset.runtime.gcpause import GcPauses
from jobset.runtime.metrics import RuntimeMetrics, new_registry


@pytest.fixture
def pauses() -> Iterator[GcPauses]:
    monitor = GcPauses(RuntimeMetrics(new_registry(process_metrics=False)).gc_duration_seconds)
    monitor.install()
    yield monitor
    monitor.uninstall()


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


def test_the_command_freezes_and_a_manager_in_another_process_does_not() -> None:
    from jobset.cli import build_parser
    from jobset.runtime.options import ManagerOptions

    args = build_parser().parse_args(["controller"])
    assert ManagerOptions.from_args(args).gc_freeze is True
    assert ManagerOptions().gc_freeze is False
