"""Probe endpoints answer like kube-apiserver's: ok, or one line per check and 500."""

from __future__ import annotations

import asyncio
import time

import aiohttp
from prometheus_client import CollectorRegistry, Histogram

from jobset.runtime.health import CheckResult, HttpServer, Probes, metrics_app, probes_app
from jobset.runtime.looplag import LoopLagMonitor
from jobset.runtime.metrics import RuntimeMetrics


async def test_probes_and_metrics_endpoints() -> None:
    state = {"synced": False}
    probes = Probes(
        liveness={"ping": lambda: CheckResult(True)},
        readiness={
            "informers-synced": lambda: CheckResult(state["synced"], "not synced: jobs"),
            "broken": lambda: CheckResult(True) if state["synced"] else 1 / 0,  # type: ignore[return-value,dict-item]
        },
    )
    metrics = RuntimeMetrics()
    metrics.reconcile_total.labels("c", "success").inc()
    servers = [
        HttpServer(probes_app(probes), "127.0.0.1", 0),
        HttpServer(metrics_app(metrics.registry), "127.0.0.1", 0),
    ]
    for s in servers:
        await s.start()
    base, mbase = (f"http://127.0.0.1:{s.port}" for s in servers)
    try:
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{base}/healthz") as r:
                assert (r.status, await r.text()) == (200, "ok")
            async with http.get(f"{base}/readyz") as r:
                body = await r.text()
                assert r.status == 500
                assert "[-]informers-synced failed: not synced: jobs" in body
                assert "[-]broken failed: ZeroDivisionError" in body
                assert body.rstrip().endswith("readyz check failed")
            state["synced"] = True
            async with http.get(f"{base}/readyz") as r:
                assert (r.status, await r.text()) == (200, "ok")
            async with http.get(f"{base}/readyz?verbose") as r:
                assert "[+]informers-synced ok" in await r.text()
            async with http.get(f"{base}/readyz/informers-synced") as r:
                assert r.status == 200
            async with http.get(f"{base}/readyz/nope") as r:
                assert r.status == 404
            async with http.get(f"{mbase}/metrics") as r:
                text = await r.text()
                assert r.status == 200
                assert (
                    'controller_runtime_reconcile_total{controller="c",result="success"} 1.0'
                    in text
                )
                assert "_created" not in text  # like Go's client_golang
    finally:
        for s in servers:
            await s.stop()


async def test_loop_lag_monitor_records_a_blocked_loop() -> None:
    hist = Histogram("lag", "lag", registry=CollectorRegistry(), buckets=(0.1, 0.2, 1.0))
    monitor = LoopLagMonitor(hist, interval=0.01)
    monitor.start()
    try:
        await asyncio.sleep(0.05)
        time.sleep(0.3)  # noqa: ASYNC251 - the point: a pass that blocks the loop
        await asyncio.sleep(0.05)
    finally:
        await monitor.stop()
    assert monitor.max_lag >= 0.25
    samples = hist.collect()[0].samples
    below = {s.labels["le"]: s.value for s in samples if s.name == "lag_bucket"}
    assert below["+Inf"] > below["0.2"]  # at least one sample was later than 200 ms


async def test_metrics_negotiate_openmetrics_or_text() -> None:
    """`Accept: application/openmetrics-text` gets OpenMetrics (with its `# EOF` and unit-less
    counter families), anything else the text format 0.0.4, as promhttp answers."""
    metrics = RuntimeMetrics(CollectorRegistry())
    metrics.reconcile_total.labels("c", "success").inc()
    server = HttpServer(metrics_app(metrics.registry), "127.0.0.1", 0)
    await server.start()
    url = f"http://127.0.0.1:{server.port}/metrics"
    prometheus_accept = (
        "application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
        "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
    )
    try:
        async with aiohttp.ClientSession() as http:
            for accept in ("application/openmetrics-text; version=1.0.0", prometheus_accept):
                async with http.get(url, headers={"Accept": accept}) as r:
                    text = await r.text()
                    assert r.headers["Content-Type"].startswith(
                        "application/openmetrics-text; version=1.0.0"
                    ), accept
                    assert text.endswith("# EOF\n")
                    assert "# TYPE controller_runtime_reconcile counter" in text
                    assert (
                        'controller_runtime_reconcile_total{controller="c",result="success"} 1.0'
                        in text
                    )
            for headers in ({}, {"Accept": "text/plain"}, {"Accept": "*/*"}):
                async with http.get(url, headers=headers) as r:
                    text = await r.text()
                    assert r.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
                    assert "# EOF" not in text
                    assert "# TYPE controller_runtime_reconcile_total counter" in text
    finally:
        await server.stop()
