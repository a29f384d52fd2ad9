"""A container's capabilities and no_new_privs from its `securityContext`, as containerd's CRI
plugin sets them; they go into the container's OCI spec (`ocispec.py`), which runc applies."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubesim.kubelet.envvars import ConfigError

__all__ = [
    "CAPABILITIES",
    "DEFAULT_CAPABILITIES",
    "capabilities",
    "capability_names",
    "no_new_privs",
]

# Linux capability numbers (linux/capability.h).
CAPABILITIES: Final = {
    name: number
    for number, name in enumerate(
        (
            "CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP "
            "LINUX_IMMUTABLE NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK "
            "IPC_OWNER SYS_MODULE SYS_RAWIO SYS_CHROOT SYS_PTRACE SYS_PACCT SYS_ADMIN "
            "SYS_BOOT SYS_NICE SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE AUDIT_WRITE "
            "AUDIT_CONTROL SETFCAP MAC_OVERRIDE MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND "
            "AUDIT_READ PERFMON BPF CHECKPOINT_RESTORE"
        ).split()
    )
}
# containerd's default set for a container that asks for nothing.
DEFAULT_CAPABILITIES: Final = frozenset(
    CAPABILITIES[n]
    for n in (
        "CHOWN DAC_OVERRIDE FSETID FOWNER MKNOD NET_RAW SETGID SETUID SETFCAP SETPCAP "
        "NET_BIND_SERVICE SYS_CHROOT KILL AUDIT_WRITE"
    ).split()
)


def _number(name: str, path: str) -> int:
    key = name.upper().removeprefix("CAP_")
    if key not in CAPABILITIES:
        raise ConfigError(f"{path}: unknown capability {name!r}")
    return CAPABILITIES[key]


def capabilities(container: Mapping[str, Any]) -> list[int]:
    """The capability numbers the container keeps: every one when `privileged`; otherwise
    the default set, `ALL` in `add` for every one and in `drop` for none, then the named
    additions and drops (containerd's order)."""
    sc = container.get("securityContext") or {}
    if sc.get("privileged"):
        return sorted(CAPABILITIES.values())
    caps = sc.get("capabilities") or {}
    add = [str(c) for c in caps.get("add") or []]
    drop = [str(c) for c in caps.get("drop") or []]
    kept = set(DEFAULT_CAPABILITIES)
    if any(c.upper() == "ALL" for c in add):
        kept = set(CAPABILITIES.values())
    if any(c.upper() == "ALL" for c in drop):
        kept = set()
    kept |= {_number(c, "securityContext.capabilities.add") for c in add if c.upper() != "ALL"}
    kept -= {_number(c, "securityContext.capabilities.drop") for c in drop if c.upper() != "ALL"}
    return sorted(kept)


def no_new_privs(container: Mapping[str, Any]) -> bool:
    """`allowPrivilegeEscalation: false` sets no_new_privs (a privileged container never)."""
    sc = container.get("securityContext") or {}
    return sc.get("allowPrivilegeEscalation") is False and not sc.get("privileged")


def capability_names(numbers: list[int]) -> list[str]:
    """OCI names (`CAP_CHOWN`) of capability numbers."""
    names = {number: name for name, number in CAPABILITIES.items()}
    return [f"CAP_{names[n]}" for n in sorted(numbers)]
