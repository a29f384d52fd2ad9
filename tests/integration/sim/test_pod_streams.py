"""Streams of real-process pods through the real kubectl: `exec`, `cp`, `port-forward` and
`logs -f`, and the pod network's bridge that carries them.

Uses the `env` fixture of `test_processes.py` (a `SimCluster` in-process with
`example.com/web` mapped to `realpod/`). Needs root, as those tests do.
"""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest
from kubernetes_asyncio import client

from kubesim.kubelet.network import bridge_mac
from tests.eventually import eventually
from tests.integration.sim.test_processes import NS, Env, env, running, web_pod

__all__ = ["env"]  # the fixture, imported for its use here

pytestmark = [pytest.mark.kubectl]


def _mac(name: str) -> str:
    return Path(f"/sys/class/net/{name}/address").read_text().strip()


async def test_bridge_keeps_its_fixed_mac_as_pods_come_and_go(env: Env) -> None:
    bridge = env.cluster.runtime.bridge
    mac = bridge_mac(bridge.index)
    assert _mac(bridge.name) == mac
    for name in ("m1", "m2"):
        await env.create(web_pod(name))
    for name in ("m1", "m2"):
        await eventually(lambda name=name: env.pod(name), running)
        assert _mac(bridge.name) == mac
    await env.core.delete_namespaced_pod("m1", NS, grace_period_seconds=0)
    await eventually(lambda: env.core.list_namespaced_pod(NS), lambda r: len(r.items) == 1)
    await eventually(lambda: asyncio.to_thread(lambda: len(bridge.pods)), lambda n: n == 1)
    assert _mac(bridge.name) == mac


def _terminated(p: client.V1Pod) -> bool:
    return any(cs.state.terminated for cs in p.status.container_statuses or [])


async def test_logs_follow_of_a_pod_deleted_as_it_exits_ends_cleanly(env: Env) -> None:
    script = "echo first; sleep 1; echo last words; exit 3"
    await env.create(
        web_pod("talker", command=["sh", "-c", script], pod_spec={"restartPolicy": "Never"})
    )
    await eventually(lambda: env.pod("talker"), running)
    follow = await asyncio.create_subprocess_exec(
        *("kubectl", "--kubeconfig", str(env.kubeconfig), "logs", "-f", "talker"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert follow.stdout is not None
    assert await follow.stdout.readline() == b"first\n"
    # The pod object goes (its log directory with it) as soon as its container has exited,
    # while the follow is still open.
    await eventually(lambda: env.pod("talker"), _terminated, interval=0.01)
    await env.core.delete_namespaced_pod("talker", NS, grace_period_seconds=0)
    out, err = await asyncio.wait_for(follow.communicate(), 60)
    assert (follow.returncode, out, err) == (0, b"last words\n", b"")
