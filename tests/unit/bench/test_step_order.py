"""`make bench`'s step order: the smallest size in full, then `wide` upward, then the rest -
so a short budget skips the other large steps, never the ones the 16k goals rest on."""

from __future__ import annotations

from benchmarks.run import predict, step_order

SCENARIOS = ["wide", "many", "restart-recreate", "restart-blocking"]


def test_wide_runs_at_every_size_before_the_other_large_steps() -> None:
    steps = step_order([1000, 4000, 16000], SCENARIOS)
    assert steps[:4] == [(0, 1000, s) for s in SCENARIOS]
    assert steps[4:6] == [(1, 4000, "wide"), (2, 16000, "wide")]
    assert steps[6:] == [(1, 4000, s) for s in SCENARIOS[1:]] + [
        (2, 16000, s) for s in SCENARIOS[1:]
    ]
    assert sorted(steps) == sorted(
        (i, n, s) for i, n in enumerate([1000, 4000, 16000]) for s in SCENARIOS
    )


def test_every_step_can_be_predicted_from_a_smaller_size_of_its_scenario() -> None:
    durations: dict[tuple[str, int], float] = {}
    for _, n, scenario in step_order([1000, 4000, 16000], SCENARIOS):
        if n > 1000:
            assert predict(durations, scenario, n) is not None, (scenario, n)
        durations[(scenario, n)] = n / 100
