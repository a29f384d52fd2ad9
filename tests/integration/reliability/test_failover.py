"""Two `jobset controller --leader-elect` replicas, each reaching the API server through its
own TCP proxy: the leader SIGKILLed, then the new leader partitioned (its proxy stops
forwarding, so its Lease renewals never arrive). One leader at a time, no double action
(checked on the store's change stream), takeover within lease duration + retry period."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from jobset.runtime.client import Client

from .conftest import ClusterFactory
from .harness import (
    KINDS,
    ControllerProcess,
    Controllers,
    Expected,
    create_retrying,
    eventually,
    make_namespace,
    outcomes,
    workload,
)

LEASE, RENEW, RETRY = 4, 3, 1


class Proxy:
    """A TCP forwarder to the API server that can be cut off (a network partition)."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.blocked = False
        self.server: asyncio.Server | None = None
        self.conns: list[asyncio.StreamWriter] = []

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.blocked:
            writer.close()
            return
        up_r, up_w = await asyncio.open_connection("127.0.0.1", self.target_port)
        self.conns += [writer, up_w]

        async def pipe(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            with contextlib.suppress(Exception):
                while data := await r.read(65536):
                    if self.blocked:
                        await asyncio.sleep(3600)  # a partition: bytes vanish, nothing answers
                    w.write(data)
                    await w.drain()
            w.close()

        await asyncio.gather(pipe(reader, up_w), pipe(up_r, writer))

    def partition(self) -> None:
        self.blocked = True

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
        for w in self.conns:
            w.close()


def kubeconfig_via(kubeconfig: str, port: int, out: Path) -> Path:
    cfg: dict[str, Any] = yaml.safe_load(Path(kubeconfig).read_text())
    cfg["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{port}"
    out.write_text(yaml.safe_dump(cfg))
    return out


def replica(
    controllers: Controllers, kubeconfig: Path, identity: str, log: Path
) -> ControllerProcess:
    return controllers.start(
        kubeconfig,
        log,
        "--leader-elect",
        "--leader-election-namespace",
        "jobset-system",
        "--leader-election-identity",
        identity,
        "--leader-elect-lease-duration",
        str(LEASE),
        "--leader-elect-renew-deadline",
        str(RENEW),
        "--leader-elect-retry-period",
        str(RETRY),
        health=True,
    )


async def standing_by(rep: ControllerProcess, name: str) -> None:
    """Wait until the replica's readiness says it follows a leader it can see."""
    await eventually(
        lambda: asyncio.to_thread(rep.readyz),
        lambda r: r[0] == 200 and "standby" in r[1],
        60,
        f"{name} standing by",
    )


async def taken_over(
    leader: Callable[[], Awaitable[str]], rep: ControllerProcess, name: str
) -> None:
    """Wait until `name` holds the lease; on timeout say how the successor process fared."""
    try:
        await eventually(leader, lambda h: h == name, LEASE + RETRY + 10, f"takeover by {name}")
    except AssertionError as err:
        tail = rep.text()[-2000:]
        raise AssertionError(f"{err}; {name} exit code {rep.proc.poll()}, log:\n{tail}") from None


@pytest.mark.timeout(400)
async def test_one_leader_at_a_time_through_kill_and_partition(
    cluster_factory: ClusterFactory, controllers: Controllers, tmp_path: Path
) -> None:
    async with cluster_factory() as (cluster, invariants):
        holders: list[tuple[float, str]] = []

        def on_lease(rkey: tuple[str, str], ev: Any) -> None:
            if rkey == ("coordination.k8s.io", "leases"):
                holder = str(ev.obj["spec"].get("holderIdentity") or "")
                if not holders or holders[-1][1] != holder:
                    holders.append((time.monotonic(), holder))

        cluster.store.listeners.append(on_lease)
        client = await Client.connect(cluster.kubeconfig, qps=100, burst=200)
        proxies = {name: Proxy(cluster.port) for name in ("a", "b", "c")}
        try:
            await make_namespace(client, "jobset-system")
            ns = "failover"
            await make_namespace(client, ns)
            reps = {}
            for name, proxy in proxies.items():
                port = await proxy.start()
                kc = kubeconfig_via(cluster.kubeconfig, port, tmp_path / f"kc-{name}")
                if name != "c":
                    reps[name] = replica(controllers, kc, name, tmp_path / f"{name}.log")
            expected: dict[str, Expected] = {}

            async def submit(round_: int) -> None:
                for i, kind in enumerate(KINDS):
                    js, exp = workload(f"{kind}-{round_}-{i}", kind, ns, run_seconds=4)
                    await create_retrying(client, js)
                    expected[js["metadata"]["name"]] = exp

            async def leader() -> str:
                return holders[-1][1] if holders else ""

            first = await eventually(leader, bool, 60, "a first leader")
            other = "b" if first == "a" else "a"
            # The bound below is for a follower that is already watching the lease: one that
            # is still starting (a slow CI machine) first sees the record a lease later.
            await standing_by(reps[other], other)
            await submit(0)
            # 1. SIGKILL the leader: the other replica takes over within lease + retry.
            killed_at = time.monotonic()
            reps[first].kill()
            await taken_over(leader, reps[other], other)
            kill_takeover = holders[-1][0] - killed_at
            await submit(1)
            # A third replica joins as the standby.
            kc_c = tmp_path / "kc-c"
            reps["c"] = replica(controllers, kc_c, "c", tmp_path / "c.log")
            await standing_by(reps["c"], "c")
            # 2. Partition the leader: its renewals never arrive; it must stop acting (exit
            # non-zero within the renew deadline) and c takes over once the lease expires.
            partitioned_at = time.monotonic()
            proxies[other].partition()
            await taken_over(leader, reps["c"], "c")
            partition_takeover = holders[-1][0] - partitioned_at
            code = await asyncio.to_thread(reps[other].proc.wait, RENEW + RETRY + 15)
            assert code == 1, "a leader that cannot renew must stop and exit"
            await submit(2)

            final = await eventually(
                lambda: outcomes(client, ns),
                lambda got: len(got) == len(expected) and all(v is not None for v in got.values()),
                within=180,
                what="every JobSet to finish",
            )
            assert final == expected
            assert invariants.violations == []
            assert [h for _, h in holders if h] == [first, other, "c"]
            print(
                f"takeover after SIGKILL {kill_takeover:.2f}s, after partition "
                f"{partition_takeover:.2f}s (lease {LEASE}s + retry {RETRY}s)"
            )
            # Expiry is measured from when the follower last saw the lease change: at most
            # a lease duration + a retry period after the last renewal, plus scheduling slack.
            assert kill_takeover <= LEASE + RETRY + 1.5, kill_takeover
            assert partition_takeover <= LEASE + RETRY + 1.5, partition_takeover
        finally:
            await client.close()
            for p in proxies.values():
                await p.close()
