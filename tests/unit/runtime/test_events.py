"""The event recorder never blocks the caller: a full queue drops events and counts them."""

from __future__ import annotations

from typing import cast

from jobset.runtime.client import Client
from jobset.runtime.events import WARNING, EventRecorder


async def test_recording_never_blocks_and_drops_when_full() -> None:
    rec = EventRecorder(cast(Client, None), "test", host="h", queue_size=10)  # never started
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "n"}}
    for i in range(1000):  # a plain function: it cannot wait for the API server
        rec.event(obj, WARNING, "Failed", f"attempt {i}")
    assert rec.dropped == 990
