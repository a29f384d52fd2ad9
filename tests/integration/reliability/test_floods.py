"""Floods and slow clients on the controller's webhook (TLS), metrics and health ports.

While a JobSet is being reconciled, every port of a real `jobset controller` process gets:

- 200 slow (slowloris) connections each, sending one header byte per second and never
  finishing their headers (the webhook ones after a full TLS handshake);
- a burst of 2,000 requests in all, on fresh connections, 200 at a time;
- a few 16 MiB bodies.

The controller must keep reconciling (the JobSet completes), close the slow connections
itself within its header timeout, answer every port promptly afterwards, and its RSS must
stay bounded. Without a header-read timeout aiohttp keeps such a connection for an hour.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
import time
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import psutil
import pytest

from jobset.api import constants as c
from jobset.runtime.client import Client
from jobset.runtime.health import HEADER_TIMEOUT

from .conftest import ClusterFactory
from .harness import (
    Controllers,
    Expected,
    create_retrying,
    eventually,
    free_port,
    make_namespace,
    outcomes,
    unexpected_exceptions,
    workload,
)

SLOW_PER_PORT = 200
BURST = 2000
BIG = 16 * 1024 * 1024
RSS_BOUND = 200 * 1024 * 1024  # growth allowed over the idle RSS


def _tls() -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # the serving certificate's CA is not the point here
    return ctx


@dataclass
class Port:
    name: str
    port: int
    tls: bool
    method: str
    path: str

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}{self.path}"


REVIEW = json.dumps(
    {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": "flood", "operation": "CREATE", "object": {"kind": "JobSet"}},
    }
).encode()


async def _slow_client(port: Port, stop: asyncio.Event) -> float | None:
    """Seconds until the server closed this connection; None if it never did."""
    t0 = time.monotonic()
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port.port, ssl=_tls() if port.tls else None),
            timeout=60,
        )
    except (OSError, TimeoutError) as err:
        raise AssertionError(f"{port.name}: slow client could not connect: {err!r}") from err
    line = f"{port.method} {port.path} HTTP/1.1\r\nHost: x\r\nX-Slow: ".encode() + b"a" * 10_000
    closed = asyncio.ensure_future(reader.read(1))
    try:
        for i in range(len(line)):
            if closed.done() or stop.is_set():
                break
            try:
                writer.write(line[i : i + 1])
                await writer.drain()
            except (OSError, RuntimeError):
                break
            await asyncio.wait([closed], timeout=1.0)
        if not closed.done():
            return None
        with contextlib.suppress(Exception):
            closed.result()
        return time.monotonic() - t0
    finally:
        closed.cancel()
        writer.close()


async def _burst(ports: list[Port]) -> dict[str, dict[int | str, int]]:
    got: dict[str, dict[int | str, int]] = {p.name: {} for p in ports}
    sem = asyncio.Semaphore(200)
    timeout = aiohttp.ClientTimeout(total=120)
    conn = aiohttp.TCPConnector(limit=0, ssl=_tls(), force_close=True)
    async with aiohttp.ClientSession(connector=conn, timeout=timeout) as session:

        async def one(p: Port) -> None:
            async with sem:
                key: int | str
                try:
                    async with session.request(
                        p.method, p.url, data=REVIEW if p.method == "POST" else None
                    ) as resp:
                        await resp.read()
                        key = resp.status
                except Exception as err:
                    key = type(err).__name__
                got[p.name][key] = got[p.name].get(key, 0) + 1

        await asyncio.gather(*(one(ports[i % len(ports)]) for i in range(BURST)))
    return got


async def _oversized(port: Port) -> list[int | str]:
    out: list[int | str] = []
    conn = aiohttp.TCPConnector(ssl=_tls(), force_close=True)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=conn, timeout=timeout) as session:
        for _ in range(3):
            try:
                async with session.post(
                    port.url, data=b"{" * BIG, headers={"Content-Type": "application/json"}
                ) as resp:
                    body = await resp.read()
                    out.append(resp.status)
                    if port.name == "webhook":
                        assert resp.status == 200 and b'"code":413' in body.replace(b" ", b"")
            except aiohttp.ClientError as err:  # the server may stop reading and close
                out.append(type(err).__name__)
    return out


async def _answers(port: Port) -> int:
    conn = aiohttp.TCPConnector(ssl=_tls(), force_close=True)
    async with aiohttp.ClientSession(
        connector=conn, timeout=aiohttp.ClientTimeout(total=5)
    ) as session:
        async with session.request(
            port.method, port.url, data=REVIEW if port.method == "POST" else None
        ) as resp:
            await resp.read()
            return resp.status


@pytest.mark.timeout(420)
async def test_floods_and_slow_clients_leave_the_controller_working(
    cluster_factory: ClusterFactory, controllers: Controllers, tmp_path: Path
) -> None:
    async with cluster_factory(None) as (cluster, invariants):
        client = await Client.connect(cluster.kubeconfig, qps=100, burst=200)
        try:
            await make_namespace(client, "jobset-system")
            metrics_port, webhook_port = free_port(), free_port()
            log = tmp_path / "controller.log"
            ctrl = controllers.start(
                cluster.kubeconfig,
                log,
                "--metrics-port",
                str(metrics_port),
                "--metrics-secure=false",  # plain HTTP (the opt-in): the flood is on HTTP
                "--webhook-port",
                str(webhook_port),
                health=True,
                log_level="INFO",
            )
            assert ctrl.health_port is not None

            async def readyz() -> tuple[int, str]:
                return await asyncio.to_thread(ctrl.readyz)

            await eventually(readyz, lambda r: r[0] == 200, 120, "the controller to be ready")
            ports = [
                Port("health", ctrl.health_port, False, "GET", "/readyz"),
                Port("metrics", metrics_port, False, "GET", "/metrics"),
                Port("webhook", webhook_port, True, "POST", c.VALIDATING_JOBSET_WEBHOOK_PATH),
            ]
            proc = psutil.Process(ctrl.proc.pid)
            rss0 = proc.memory_info().rss
            peak = rss0
            stop = asyncio.Event()

            async def sample() -> None:
                nonlocal peak
                while not stop.is_set():
                    peak = max(peak, proc.memory_info().rss)
                    await asyncio.sleep(0.25)

            sampler = asyncio.create_task(sample())
            slow = [
                asyncio.create_task(_slow_client(p, stop))
                for p in ports
                for _ in range(SLOW_PER_PORT)
            ]
            await asyncio.sleep(2)

            ns = "floods"
            await make_namespace(client, ns)
            js, expected = workload("flooded", "ok", ns, run_seconds=2)
            await create_retrying(client, js)
            burst, big = await asyncio.gather(
                _burst(ports), asyncio.gather(*(_oversized(p) for p in ports))
            )
            # Every burst request was answered, and answered well.
            for i, p in enumerate(ports):
                assert burst[p.name] == {200: len(range(i, BURST, len(ports)))}, burst
            for p, answers in zip(ports, big, strict=True):
                assert len(answers) == 3, (p.name, answers)

            done = await eventually(
                lambda: outcomes(client, ns),
                lambda got: got.get("flooded") is not None,
                within=180,
                what="the JobSet to finish under the flood",
            )
            assert done["flooded"] == expected == Expected("Completed", expected.reason, 0)

            # The server closes every slow connection itself, within its header timeout.
            closed = await asyncio.wait_for(asyncio.gather(*slow), timeout=HEADER_TIMEOUT + 90)
            never = sum(1 for t in closed if t is None)
            assert never == 0, f"{never} slow connections were never closed by the controller"
            worst = max(t for t in closed if t is not None)
            assert worst < HEADER_TIMEOUT + 60, worst

            # Every port answers promptly afterwards.
            for p in ports:
                t0 = time.monotonic()
                assert await _answers(p) == 200, p.name
                assert time.monotonic() - t0 < 5, p.name
            stop.set()
            await sampler
            growth = peak - rss0
            print(
                f"rss idle {rss0 / 2**20:.0f} MiB, peak {peak / 2**20:.0f} MiB; slowest slow "
                f"client closed after {worst:.1f}s; burst {burst}; oversized {big}"
            )
            assert growth < RSS_BOUND, f"RSS grew by {growth / 2**20:.0f} MiB"
            assert ctrl.proc.poll() is None, ctrl.text()[-3000:]
            assert not unexpected_exceptions(ctrl.text())
            assert not invariants.violations, invariants.violations
        finally:
            await client.close()
