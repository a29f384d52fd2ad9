"""Many objects created, listed in pages and watched by three clients at once, without error.

The 100,000-object figure, with its time and memory, is measured by `benchmarks/sim_scale.py`;
this test runs the same code path at a size the suite can afford.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.loadgen import run_load
from kubesim.process import start_sim


async def test_bulk_create_paged_list_and_three_watchers(tmp_path: Path) -> None:
    sim = start_sim(tmp_path, "--sim-level", "none")
    try:
        n = 3000
        result = await run_load(str(sim.kubeconfig), "scale", n, watchers=3, page_size=400)
    finally:
        sim.stop()
    assert result.errors == []
    assert result.created == n
    assert result.listed == n and result.pages == (n + 399) // 400
    assert result.watched == [n, n, n]
