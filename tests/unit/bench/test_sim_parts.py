"""Charging a py-spy sample of the simulator to the part its innermost code was in."""

from __future__ import annotations

from benchmarks import profiling, sim_parts

LOOP = "Handle._run (asyncio/events.py:84)"
SYNC = "EndpointsController._sync (kubesim/controllers/endpoints.py:583)"
PLAN = "plan_slices (kubesim/controllers/endpointslices.py:133)"
UPDATE = "ApiCore.update (kubesim/apiserver/core/apicore.py:277)"
OFFER = "Watcher.offer (kubesim/apiserver/core/store.py:80)"
MATCH = "LabelSelector.matches (kubesim/machinery/selectors/labels.py:40)"
FILTER = "_PodContext.reasons (kubesim/controllers/scheduler/scheduling.py:253)"


def test_a_sample_goes_to_its_innermost_part_past_shared_machinery() -> None:
    # A controller's own planning is the controller's ...
    assert sim_parts.part_of([LOOP, SYNC, PLAN]) == "EndpointSlice + Endpoints controller"
    # ... the API server work its write causes is the API server's ...
    assert sim_parts.part_of([LOOP, SYNC, UPDATE]) == (
        "API server: validation, defaulting, managedFields"
    )
    # ... and a label match inside a watcher's filter is watch fan-out, not validation.
    assert sim_parts.part_of([LOOP, SYNC, UPDATE, OFFER, MATCH]) == "API server: watch fan-out"
    assert sim_parts.part_of([LOOP, FILTER]) == "scheduler: filter"
    fast = "_PodContext._scan_fast (kubesim/controllers/scheduler/scheduling.py:340)"
    fit = "_fit_score (kubesim/controllers/scheduler/scheduling.py:390)"
    score = "_least_allocated (kubesim/controllers/scheduler/scheduling.py:398)"
    assert sim_parts.part_of([LOOP, fast]) == "scheduler: filter"
    assert sim_parts.part_of([LOOP, fast, fit]) == "scheduler: filter"
    assert sim_parts.part_of([LOOP, fast, fit, score]) == "scheduler: score"
    record = "EventRecorder.event (kubesim/base/events.py:40)"
    assert sim_parts.part_of([LOOP, "Kubelet._start (kubesim/kubelet/kubelet.py:1)", record]) == (
        "Events"
    )
    assert sim_parts.part_of([LOOP, "select (selectors.py:468)"]) == sim_parts.OTHER


def test_the_summary_gives_shares_by_part_when_asked() -> None:
    text = "\n".join(
        [f"{';'.join([LOOP, SYNC, PLAN])} 3", f"{';'.join([LOOP, FILTER])} 1", "garbage"]
    )
    out = profiling.summarise(text, ("kubesim",), parts=sim_parts.part_of)
    assert out["by_part"] == {
        "EndpointSlice + Endpoints controller": 0.75,
        "scheduler: filter": 0.25,
    }
    assert "by_part" not in profiling.summarise(text, ("kubesim",))
