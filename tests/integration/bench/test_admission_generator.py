"""The admission load generator (`python -m benchmarks.admission generate`) as the benchmark
runs it - its own process, told to go on stdin - against an HTTPS echo server: it sends
every pod's two reviews at the asked rate, and freezes its heap before the run so that no
full collection of its own pauses it while pods are due (such a pause was the p99 the
benchmark reported for the webhook)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import orjson

from benchmarks.harness import ROOT
from tests.integration.bench.conftest import Server

ALLOWED = b'{"response":{"allowed":true}}'  # echoed back: every review is answered allowed


async def test_generator_sends_every_pod_with_a_frozen_heap(server: Server, tmp_path: Path) -> None:
    reviews = tmp_path / "reviews.jsonl"
    reviews.write_bytes(ALLOWED + b"\n")
    rate, seconds = 200, 1.0
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "benchmarks.admission",
        "generate",
        str(server.port),
        str(reviews),
        str(rate),
        str(seconds),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        cwd=ROOT,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        assert (await asyncio.wait_for(proc.stdout.readline(), 60)).startswith(b"generator ready")
        proc.stdin.write(b"go\n")
        await proc.stdin.drain()
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0
    result = orjson.loads(out.splitlines()[-1])
    assert result["errors"] == 0
    assert len(result["latencies_ms"]) == rate * seconds
    assert all(ms > 0 for ms in result["latencies_ms"])  # every pod answered
    # The heap was frozen after set-up (imports, reviews, warm connections)...
    assert result["frozen_objects"] > 10_000
    # ... so the run itself walked no full collection.
    assert result["full_collections_during_run"] == 0
