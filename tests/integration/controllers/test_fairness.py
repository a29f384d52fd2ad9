"""Fairness between tenants: a small JobSet is not queued behind large JobSets' whole creation.

Four 400-Job JobSets in one namespace keep all four reconcile workers creating; a 3-Job
JobSet in another namespace is created once they are under way. Its Jobs must exist while
the large ones together have created well under their 1,600 Jobs: the workers give their
pass up after a time slice when a JobSet waits (`jobset.controllers.fairshare`). Without
that, the small JobSet waits for a worker until a large JobSet has created all its Jobs,
by which time the four have created about 1,600 (they share the client's token bucket in
FIFO order, so they finish together). Progress is asserted by counts, never by wall time.
"""

from __future__ import annotations

import pytest

from jobset.resources import JOBSETS
from jobset.runtime.client import JOBS, NAMESPACES, Client
from kubesim.process import SimProcess
from tests.eventually import eventually

from .conftest import running_controller
from .helpers import jobset, rjob

LARGE, LARGE_JOBS, SMALL_JOBS = 4, 400, 3
# The small JobSet's Jobs exist before the large ones have created this many more together
# (half of all: without fair sharing they create nearly all of theirs meanwhile).
MORE_BEFORE = LARGE * LARGE_JOBS // 2
SLICE = 0.05


async def _count(client: Client, ns: str) -> int:
    out = await client.list(JOBS, ns)
    return len(out["items"])


@pytest.mark.timeout(120)
async def test_small_jobset_is_not_stuck_behind_large_ones(sim_none: SimProcess) -> None:
    client = await Client.connect(str(sim_none.kubeconfig), qps=0)
    try:
        for ns in ("fair-big", "fair-small"):
            await client.create(NAMESPACES, {"metadata": {"name": ns}})
        # A slice of 50 ms, not the default 0.5 s: the client's burst of 1,000 lets the
        # large ones create hundreds of Jobs in 0.5 s on an idle machine, so the count the
        # small JobSet waits for would depend on the machine's speed; with 50 ms it is a
        # small fraction of 1,600 anywhere, and without slicing (0) about all of them.
        async with running_controller(sim_none, creation_slice=SLICE) as (manager, _controller):
            assert manager.options.concurrency == LARGE  # every worker gets a large JobSet
            for i in range(LARGE):
                js = jobset(f"big{i}", rjob("w", LARGE_JOBS))
                js["metadata"]["namespace"] = "fair-big"
                await client.create(JOBSETS, js)
            await eventually(
                lambda: _count(client, "fair-big"),
                lambda n: n >= 50,
                what="large under way",
                interval=0.02,
            )
            small = jobset("small", rjob("w", SMALL_JOBS))
            small["metadata"]["namespace"] = "fair-small"
            await client.create(JOBSETS, small)
            big_before = await _count(client, "fair-big")
            await eventually(
                lambda: _count(client, "fair-small"),
                lambda n: n == SMALL_JOBS,
                what="the small JobSet's Jobs",
                within=90,
                interval=0.02,
            )
            big_then = await _count(client, "fair-big")
            assert big_then - big_before < MORE_BEFORE, (
                f"the 3-Job JobSet got its Jobs only after the large ones had gone from "
                f"{big_before} to {big_then} of {LARGE * LARGE_JOBS} Jobs"
            )
            # The large ones are not starved either: they finish.
            await eventually(
                lambda: _count(client, "fair-big"),
                lambda n: n == LARGE * LARGE_JOBS,
                what="all large Jobs",
                within=90,
            )
    finally:
        await client.close()
