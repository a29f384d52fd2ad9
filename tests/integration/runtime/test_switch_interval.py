"""`ManagerOptions.switch_interval`: the manager runs with that interpreter switch interval
(kubeutil.gilswitch) and restores the previous one when it stops; without it, the
interpreter's is left alone (a manager inside a test's process). Against a real `jobset sim`."""

from __future__ import annotations

import asyncio
import sys

import pytest

from jobset.runtime.manager import Manager
from jobset.runtime.options import ManagerOptions
from kubesim.process import SimProcess

pytestmark = pytest.mark.timeout(60)


async def _interval_while_running(sim: SimProcess, switch_interval: float | None) -> float:
    options = ManagerOptions(
        kubeconfig=str(sim.kubeconfig),
        metrics_port=None,
        health_port=None,
        switch_interval=switch_interval,
    )
    manager = await Manager.create(options)
    task = asyncio.create_task(manager.run())
    try:
        await asyncio.sleep(0.2)  # into run(), past its start
        assert not task.done()
        return sys.getswitchinterval()
    finally:
        manager.stop()
        assert await asyncio.wait_for(task, 30) == 0


async def test_the_manager_runs_with_its_interval_and_restores_the_previous(
    sim_none: SimProcess,
) -> None:
    before = sys.getswitchinterval()
    assert await _interval_while_running(sim_none, 0.001) == pytest.approx(0.001)
    assert sys.getswitchinterval() == before


async def test_without_one_the_interpreter_interval_is_left_alone(sim_none: SimProcess) -> None:
    before = sys.getswitchinterval()
    assert await _interval_while_running(sim_none, None) == before
    assert sys.getswitchinterval() == before
