"""A container's OCI spec as containerd's CRI plugin builds it: capabilities, masked and
read-only paths, seccomp, cgroup values from `resources`, namespaces and mounts."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.kubelet import ocispec, seccompdefault
from kubesim.kubelet.envvars import ConfigError


def _spec(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "root": "/b/rootfs",
        "args": ["sh"],
        "env": ["PATH=/bin"],
        "capabilities": ["CAP_CHOWN", "CAP_KILL"],
        "netns": "/run/netns/ksim0-abc",
        "mounts": [ocispec.BindMount("/v/cfg", "/cfg", True)],
    }
    return ocispec.build(ocispec.ContainerSpec(**{**base, **overrides}))


def test_a_plain_container_gets_containerds_defaults() -> None:
    spec = _spec()
    caps = spec["process"]["capabilities"]
    assert caps["bounding"] == caps["effective"] == caps["permitted"] == ["CAP_CHOWN", "CAP_KILL"]
    linux = spec["linux"]
    assert "/proc/sys" in linux["readonlyPaths"] and "/proc/kcore" in linux["maskedPaths"]
    assert "seccomp" not in linux  # Unconfined, the kubelet's default
    kinds = {n["type"]: n.get("path") for n in linux["namespaces"]}
    assert kinds == {
        "pid": None,
        "mount": None,
        "ipc": None,
        "uts": None,
        "network": "/run/netns/ksim0-abc",
    }
    assert not any(m["destination"] == "/run" for m in spec["mounts"])  # containerd drops it
    sys_mount = next(m for m in spec["mounts"] if m["destination"] == "/sys")
    assert "ro" in sys_mount["options"]
    cfg = next(m for m in spec["mounts"] if m["destination"] == "/cfg")
    assert cfg["type"] == "bind" and "ro" in cfg["options"] and "rbind" in cfg["options"]


def test_privileged_lifts_masks_and_seccomp() -> None:
    spec = _spec(privileged=True, seccomp="RuntimeDefault")
    assert "maskedPaths" not in spec["linux"] and "readonlyPaths" not in spec["linux"]
    assert "seccomp" not in spec["linux"]
    assert "ro" not in next(m for m in spec["mounts"] if m["destination"] == "/sys")["options"]


def test_runtime_default_adds_syscalls_by_capability() -> None:
    plain = _spec(seccomp="RuntimeDefault")["linux"]["seccomp"]
    assert plain["defaultAction"] == "SCMP_ACT_ERRNO"
    names = {n for rule in plain["syscalls"] for n in rule["names"]}
    assert "read" in names and "mount" not in names and "ptrace" in names
    clone3 = next(r for r in plain["syscalls"] if r["names"] == ["clone3"])
    assert clone3["errnoRet"] == seccompdefault.ENOSYS  # glibc falls back to clone
    admin = _spec(seccomp="RuntimeDefault", capabilities=["CAP_SYS_ADMIN"])["linux"]["seccomp"]
    admin_names = {n for rule in admin["syscalls"] for n in rule["names"]}
    assert "mount" in admin_names and "unshare" in admin_names


@pytest.mark.parametrize(
    ("resources", "qos", "shares", "quota", "memory", "oom"),
    [
        pytest.param({}, "BestEffort", 2, None, None, 1000, id="best-effort"),
        pytest.param(
            {"limits": {"cpu": "500m", "memory": "64Mi"}, "requests": {"cpu": "500m", "memory": "64Mi"}},
            "Guaranteed", 512, 50_000, 64 << 20, -997, id="guaranteed",
        ),
        pytest.param({"requests": {"cpu": "1.5"}}, "Burstable", 1536, None, None, 999, id="cpu-request"),
        pytest.param({"limits": {"cpu": "1m"}}, "Burstable", 2, 1000, None, 999, id="tiny-limit"),
    ],
)  # fmt: skip
def test_resources_as_the_kubelet_sets_cgroups(
    resources: dict[str, Any],
    qos: str,
    shares: int,
    quota: int | None,
    memory: int | None,
    oom: int,
) -> None:
    res = ocispec.resources_of({"resources": resources}, qos)
    assert (res.cpu_shares, res.cpu_quota, res.memory_limit, res.oom_score_adj) == (
        shares, quota, memory, oom,
    )  # fmt: skip
    spec = ocispec.build(ocispec.ContainerSpec(root="/r", args=["x"], env=[], resources=res))
    cpu = spec["linux"]["resources"]["cpu"]
    assert cpu["shares"] == shares and cpu.get("quota") == quota
    if memory is not None:
        assert spec["linux"]["resources"]["memory"] == {"limit": memory, "swap": memory}


def test_a_localhost_seccomp_profile_is_a_config_error() -> None:
    container = {"securityContext": {"seccompProfile": {"type": "Localhost"}}}
    with pytest.raises(ConfigError, match='Unsupported value: "Localhost"'):
        ocispec.seccomp_mode({}, container)
    pod = {"spec": {"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}}}
    assert ocispec.seccomp_mode(pod, {}) == "RuntimeDefault"
