"""A container's OCI runtime `config.json`, built as containerd's CRI plugin builds it.

Pure: `build(ContainerSpec)` returns the spec as a dict for runc. What containerd does and
this follows: its default mounts (/proc, /dev, /dev/pts, /dev/shm, /dev/mqueue, a read-only
/sys and /sys/fs/cgroup; no /run), its masked and read-only /proc and /sys paths (a
privileged container gets neither), its default capabilities changed by the
`securityContext` (`security.py`), `allowPrivilegeEscalation: false` as noNewPrivileges,
`readOnlyRootFilesystem` as a read-only root, `seccompProfile` (`RuntimeDefault` is
containerd's profile, `seccompdefault.py`; `Unconfined` and an unset profile none, as the
kubelet's default), the pod's network, IPC and UTS namespaces joined, a PID and mount
namespace of its own, and the kubelet's cgroup values from `resources` (cgroup v1: CPU
shares from the request, CFS quota from the limit, the memory limit) and OOM score.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Final

from kubesim.kubelet import seccompdefault
from kubesim.kubelet.envvars import ConfigError
from kubeutil.quantity import parse_quantity

__all__ = ["BindMount", "ContainerSpec", "Resources", "build", "resources_of", "seccomp_mode"]

MASKED_PATHS: Final = (
    "/proc/acpi /proc/asound /proc/kcore /proc/keys /proc/latency_stats /proc/timer_list "
    "/proc/timer_stats /proc/sched_debug /sys/firmware /sys/devices/virtual/powercap /proc/scsi"
).split()
READONLY_PATHS: Final = "/proc/bus /proc/fs /proc/irq /proc/sys /proc/sysrq-trigger".split()
CPU_PERIOD: Final = 100_000  # the kubelet's CFS period (microseconds)
MIN_SHARES: Final = 2
MIN_QUOTA: Final = 1000
# The kubelet's OOM score adjustments by QoS class.
OOM_GUARANTEED: Final = -997
OOM_BEST_EFFORT: Final = 1000


@dataclass(frozen=True)
class BindMount:
    """A host path bound into the container (runc resolves `destination` inside its root)."""

    source: str
    destination: str
    read_only: bool = False


@dataclass(frozen=True)
class Resources:
    cpu_shares: int = MIN_SHARES
    cpu_quota: int | None = None
    memory_limit: int | None = None
    oom_score_adj: int = OOM_BEST_EFFORT


@dataclass(frozen=True)
class ContainerSpec:
    root: str
    args: list[str]
    env: list[str]
    cwd: str = "/"
    uid: int = 0
    gid: int = 0
    groups: list[int] = field(default_factory=list)
    capabilities: list[str] = field(default_factory=list)  # names like CAP_CHOWN
    no_new_privileges: bool = False
    read_only_root: bool = False
    privileged: bool = False
    seccomp: str = "Unconfined"  # RuntimeDefault or Unconfined
    hostname: str = ""
    netns: str = ""  # the sandbox's network namespace (a path); also its IPC and UTS
    mounts: list[BindMount] = field(default_factory=list)
    resources: Resources = field(default_factory=Resources)
    cgroups_path: str = ""
    terminal: bool = False


def _cpu_millis(value: Any) -> int:
    return int(Fraction(parse_quantity(str(value))) * 1000 + Fraction(999, 1000))


def _qos_oom(container: Mapping[str, Any], guaranteed: bool, best_effort: bool) -> int:
    """The kubelet's OOM score: Guaranteed -997, BestEffort 1000, Burstable by the memory
    request's share of the machine (between 2 and 999)."""
    if guaranteed:
        return OOM_GUARANTEED
    if best_effort:
        return OOM_BEST_EFFORT
    request = ((container.get("resources") or {}).get("requests") or {}).get("memory")
    if request is None:
        return 999
    try:
        with open("/proc/meminfo") as f:
            total = int(f.readline().split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        return 999
    score = 1000 - (1000 * int(parse_quantity(str(request)))) // max(total, 1)
    return int(min(max(score, 2), 999))


def resources_of(container: Mapping[str, Any], qos: str) -> Resources:
    """The cgroup values the kubelet gives a container (`qos` is the pod's QoS class)."""
    res = container.get("resources") or {}
    limits, requests = res.get("limits") or {}, res.get("requests") or {}
    path = "resources"
    try:
        cpu_request = requests.get("cpu", limits.get("cpu"))
        shares = MIN_SHARES
        if cpu_request is not None:
            shares = max(_cpu_millis(cpu_request) * 1024 // 1000, MIN_SHARES)
        quota = None
        if limits.get("cpu") is not None:
            path = "resources.limits.cpu"
            quota = max(_cpu_millis(limits["cpu"]) * CPU_PERIOD // 1000, MIN_QUOTA)
        memory = None
        if limits.get("memory") is not None:
            path = "resources.limits.memory"
            memory = int(parse_quantity(str(limits["memory"])))
    except (ValueError, TypeError, ArithmeticError) as exc:
        raise ConfigError(f"{path}: quantities must match the regular expression: {exc}") from None
    oom = _qos_oom(container, qos == "Guaranteed", qos == "BestEffort")
    return Resources(shares, quota, memory, oom)


def seccomp_mode(pod: Mapping[str, Any], container: Mapping[str, Any]) -> str:
    """The container's seccomp profile type (the container's wins over the pod's); unset is
    `Unconfined`, the kubelet's default. `Localhost` profiles are not available here."""
    sc = container.get("securityContext") or {}
    pod_sc = (pod.get("spec") or {}).get("securityContext") or {}
    profile = sc.get("seccompProfile") or pod_sc.get("seccompProfile") or {}
    kind = str(profile.get("type") or "Unconfined")
    if kind not in ("RuntimeDefault", "Unconfined"):
        raise ConfigError(
            f'securityContext.seccompProfile.type: Unsupported value: "{kind}": the simulator '
            'supports "RuntimeDefault" and "Unconfined"'
        )
    return kind


def _default_mounts(privileged: bool) -> list[dict[str, Any]]:
    ro = [] if privileged else ["ro"]
    return [
        {"destination": "/proc", "type": "proc", "source": "proc", "options": ["nosuid", "noexec", "nodev"]},
        {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
        {"destination": "/dev/pts", "type": "devpts", "source": "devpts", "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"]},
        {"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue", "options": ["nosuid", "noexec", "nodev"]},
        {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid", "noexec", "nodev", *ro]},
        {"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup", "options": ["nosuid", "noexec", "nodev", "relatime", *ro]},
        {"destination": "/dev/shm", "type": "tmpfs", "source": "shm", "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]},
    ]  # fmt: skip


def _bind(m: BindMount) -> dict[str, Any]:
    options = ["rbind", "rprivate", "ro" if m.read_only else "rw"]
    return {"destination": m.destination, "type": "bind", "source": m.source, "options": options}


def _linux(spec: ContainerSpec) -> dict[str, Any]:
    namespaces: list[dict[str, str]] = [{"type": "pid"}, {"type": "mount"}, {"type": "ipc"}]
    namespaces.append({"type": "uts"})
    if spec.netns:
        namespaces.append({"type": "network", "path": spec.netns})
    res = spec.resources
    cpu: dict[str, Any] = {"shares": res.cpu_shares}
    if res.cpu_quota is not None:
        cpu |= {"quota": res.cpu_quota, "period": CPU_PERIOD}
    resources: dict[str, Any] = {
        "devices": [{"allow": spec.privileged, "access": "rwm"}],
        "cpu": cpu,
    }
    if res.memory_limit is not None:
        # No swap beyond the limit, as the kubelet sets it (memory+swap = memory).
        resources["memory"] = {"limit": res.memory_limit, "swap": res.memory_limit}
    linux: dict[str, Any] = {
        "namespaces": namespaces,
        "resources": resources,
        "cgroupsPath": spec.cgroups_path,
    }
    if not spec.privileged:
        linux["maskedPaths"] = list(MASKED_PATHS)
        linux["readonlyPaths"] = list(READONLY_PATHS)
    if spec.seccomp == "RuntimeDefault" and not spec.privileged:
        linux["seccomp"] = seccompdefault.profile(spec.capabilities)
    return linux


def build(spec: ContainerSpec) -> dict[str, Any]:
    """The OCI runtime spec (`config.json`) of one container."""
    caps = list(spec.capabilities)
    process: dict[str, Any] = {
        "terminal": spec.terminal,
        "user": {"uid": spec.uid, "gid": spec.gid, "additionalGids": list(spec.groups)},
        "args": list(spec.args),
        "env": list(spec.env),
        "cwd": spec.cwd or "/",
        "capabilities": {"bounding": caps, "effective": caps, "permitted": caps},
        "noNewPrivileges": spec.no_new_privileges,
        "oomScoreAdj": spec.resources.oom_score_adj,
    }
    return {
        "ociVersion": "1.0.2-dev",
        "process": process,
        "root": {"path": spec.root, "readonly": spec.read_only_root},
        "hostname": spec.hostname,
        "mounts": [*_default_mounts(spec.privileged), *(_bind(m) for m in spec.mounts)],
        "linux": _linux(spec),
    }
