"""The security review's reproductions, run as pods under runc: each leaves the host untouched.

Every container here has every capability dropped and a read-only root (`LOCKED`), as the
review's did: a subPath symlink out of its volume (relative and absolute), relinking a
ConfigMap volume's `..data` to a host directory, a `/proc/sys` write, and reading files
planted in the host's /tmp and /var/tmp. Then what runc adds: a container over its memory
limit is OOMKilled with exit 137, and `seccompProfile: RuntimeDefault` filters its syscalls.
Needs root, as `test_processes.py`.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from tests.eventually import eventually
from tests.integration.sim.test_container_root import finished, script_pod
from tests.integration.sim.test_processes import NS, Env, real_cluster

pytestmark = [pytest.mark.kubectl]

LOCKED: dict[str, Any] = {
    "capabilities": {"drop": ["ALL"]},
    "readOnlyRootFilesystem": True,
    "allowPrivilegeEscalation": False,
}


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    async with real_cluster(tmp_path) as e:
        yield e


@pytest.fixture
def planted() -> Iterator[dict[str, Path]]:
    """A directory with a file in each of the host's /tmp and /var/tmp."""
    mark = f"kubesim-planted-{uuid.uuid4().hex[:12]}"
    dirs = {"tmp": Path("/tmp") / mark, "var-tmp": Path("/var/tmp") / mark}
    for where, d in dirs.items():
        d.mkdir(mode=0o755)
        (d / "secret").write_text(f"host-secret-{where}\n")
        (d / "secret").chmod(0o644)
    try:
        yield dirs
    finally:
        for d in dirs.values():
            shutil.rmtree(d, ignore_errors=True)


def untouched(d: Path, where: str) -> bool:
    return sorted(os.listdir(d)) == ["secret"] and (d / "secret").read_text() == (
        f"host-secret-{where}\n"
    )


async def waiting(env: Env, name: str, container: str) -> client.V1ContainerStateWaiting:
    def stuck(p: client.V1Pod) -> bool:
        statuses = {s.name: s for s in p.status.container_statuses or []}
        state = statuses.get(container)
        return bool(state and state.state.waiting and state.state.waiting.message)

    pod = await eventually(lambda: env.pod(name), stuck)
    return next(s for s in pod.status.container_statuses if s.name == container).state.waiting


@pytest.mark.parametrize("link", ["relative", "absolute"])
async def test_a_subpath_symlink_out_of_its_volume_never_reaches_the_host(
    env: Env, planted: dict[str, Path], link: str
) -> None:
    target = planted["var-tmp"]
    source = "../" * 12 + str(target).lstrip("/") if link == "relative" else str(target)
    plant = script_pod("x", f"ln -s {source} /scratch/esc && echo planted")["spec"]["containers"][0]
    plant |= {"name": "plant", "securityContext": LOCKED}
    plant["volumeMounts"] = [{"name": "scratch", "mountPath": "/scratch"}]
    pod = script_pod(
        "escape",
        "echo owned > /out/owned; ls /out",
        securityContext=LOCKED,
        volumeMounts=[{"name": "scratch", "mountPath": "/out", "subPath": "esc"}],
        pod_spec={"volumes": [{"name": "scratch", "emptyDir": {}}], "initContainers": [plant]},
    )
    await env.create(pod)
    state = await waiting(env, "escape", "web")
    assert state.reason == "CreateContainerConfigError"
    assert state.message == 'failed to prepare subPath for volumeMount "scratch" of container "web"'
    assert await env.kubectl("logs", "escape", "-c", "plant") == "planted\n"
    await asyncio.sleep(1.5)  # a retry or two of the kubelet: still refused
    assert (await waiting(env, "escape", "web")).reason == "CreateContainerConfigError"
    assert untouched(target, "var-tmp")


async def test_relinking_a_configmap_volume_leaves_the_host_directory(
    env: Env, planted: dict[str, Path]
) -> None:
    victim = planted["var-tmp"]
    await env.create(
        {"kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"mode": "first"}}
    )
    script = (
        f"ln -sfn {victim} /cfg/..data; echo relink=$?; "
        "until grep -q second /cfg/mode; do sleep 0.2; done; echo saw-update"
    )
    await env.create(
        script_pod(
            "relinker",
            script,
            securityContext=LOCKED,
            volumeMounts=[{"name": "cfg", "mountPath": "/cfg"}],
            pod_spec={"volumes": [{"name": "cfg", "configMap": {"name": "settings"}}]},
        )
    )
    await eventually(
        lambda: env.kubectl("logs", "relinker"),
        lambda t: "relink=" in t,
        retry_on=(AssertionError,),  # until the container has started
    )
    await env.core.patch_namespaced_config_map("settings", NS, {"data": {"mode": "second"}})
    logs = await finished(env, "relinker")
    assert "relink=1\n" in logs and "Read-only file system" in logs
    assert logs.endswith("saw-update\n")  # the refresh went on, inside the volume
    assert untouched(victim, "var-tmp")


def core_pattern() -> str:
    return Path("/proc/sys/kernel/core_pattern").read_text()


async def test_proc_sys_is_read_only(env: Env) -> None:
    before = core_pattern()
    # The same value written back: were the write allowed, the host would still be unharmed.
    script = 'v=$(cat /proc/sys/kernel/core_pattern); echo "$v" > /proc/sys/kernel/core_pattern; echo rc=$?'
    await env.create(script_pod("sysctl", script, securityContext=LOCKED))
    logs = await finished(env, "sysctl")
    assert "Read-only file system" in logs and "rc=2\n" in logs
    assert core_pattern() == before


async def test_host_tmp_files_are_not_in_the_container(env: Env, planted: dict[str, Path]) -> None:
    paths = [planted["tmp"] / "secret", planted["var-tmp"] / "secret"]
    script = (
        "; ".join(f"cat {p} || echo missing" for p in paths)
        + "; echo listed=$(ls -A /tmp /var/tmp | grep -c kubesim-planted)"
    )
    await env.create(script_pod("reader", script, securityContext=LOCKED))
    logs = await finished(env, "reader")
    assert "host-secret" not in logs
    assert logs.count("missing\n") == 2
    assert "listed=0\n" in logs  # /tmp and /var/tmp are the container's own


ALLOCATE = (
    "import time; b = bytearray(300 << 20); b[::4096] = b'x' * len(b[::4096]); print('survived')"
)


async def test_a_container_over_its_memory_limit_is_oom_killed(env: Env) -> None:
    pod = script_pod(
        "hungry",
        f'python3 -c "{ALLOCATE}"',
        securityContext=LOCKED,
        resources={"limits": {"memory": "64Mi"}},
    )
    await env.create(pod)
    done = await eventually(
        lambda: env.pod("hungry"), lambda p: p.status.phase in ("Succeeded", "Failed")
    )
    assert done.status.phase == "Failed"
    terminated = done.status.container_statuses[0].state.terminated
    assert (terminated.reason, terminated.exit_code) == ("OOMKilled", 137)
    assert "survived" not in await env.kubectl("logs", "hungry")


async def test_runtime_default_seccomp_filters_and_unconfined_does_not(env: Env) -> None:
    show = "grep '^Seccomp:' /proc/self/status"
    for name, kind in (("filtered", "RuntimeDefault"), ("open", "Unconfined")):
        sc = {**LOCKED, "seccompProfile": {"type": kind}}
        await env.create(script_pod(name, show, securityContext=sc))
    assert await finished(env, "filtered") == "Seccomp:\t2\n"
    assert await finished(env, "open") == "Seccomp:\t0\n"


def expected_oom_score(wanted: int) -> int:
    """What runc can set: lowering below this process's own score needs CAP_SYS_RESOURCE."""
    bounding = next(
        int(line.split()[1], 16)
        for line in Path("/proc/self/status").read_text().splitlines()
        if line.startswith("CapBnd:")
    )
    if bounding >> 24 & 1:  # CAP_SYS_RESOURCE
        return wanted
    return max(wanted, int(Path("/proc/self/oom_score_adj").read_text()))


async def test_a_guaranteed_pod_gets_the_kubelets_oom_score(env: Env) -> None:
    both = {"cpu": "100m", "memory": "128Mi"}
    pod = script_pod(
        "guaranteed",
        "cat /proc/self/oom_score_adj",
        securityContext=LOCKED,
        resources={"limits": both, "requests": both},
    )
    await env.create(pod)
    assert await finished(env, "guaranteed") == f"{expected_oom_score(-997)}\n"
