"""`jobset sim` runs with the short interpreter switch interval (kubeutil.gilswitch), which
its `/debug/interpreter` shows: large bodies are handled in worker threads, and its loop gets
the interpreter back every 0.5 ms, not Python's 5 ms."""

from __future__ import annotations

from jobset.runtime.client import Client
from kubesim.process import SimProcess
from kubeutil.gilswitch import LOOP_SWITCH_INTERVAL


async def test_the_sim_process_runs_with_the_short_switch_interval(sim_none: SimProcess) -> None:
    async with await Client.connect(str(sim_none.kubeconfig), qps=0, burst=0) as client:
        report = await client.request("GET", "/debug/interpreter")
    assert report == {"switchInterval": LOOP_SWITCH_INTERVAL}
