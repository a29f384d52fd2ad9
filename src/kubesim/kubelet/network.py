"""Pod networking for real processes: a bridge per simulator, a network namespace per pod.

Layout (everything named with the prefix `ksim`, so a later run can find and sweep what a
crashed one left behind):

- simulator number N (0-63, the first free one): bridge `ksimN` in the root namespace with
  10.244.4N.1/22, the gateway; the API server also listens there, and that is the
  `KUBERNETES_SERVICE_HOST` of every real pod. The bridge gets a fixed, locally administered
  MAC address (`02:6b:73:69:6d:NN`) when it is made: without one Linux gives a bridge the lowest
  MAC of its ports, which changes as pod veths come and go, and pods that cached the old
  gateway MAC lose the API server until their ARP entry expires. Its state directory `/run/kubesim/ksimN`
  holds `owner` (pid and start time of the simulator) and the per-pod directories.
- each pod: network namespace `ksimN-<pod uid prefix>`, with `lo` up and `eth0` = one end of
  a veth pair whose other end `ksimNv<k>` is on the bridge; pod IP 10.244.4N.0 + k, k 2-1022
  (a /22 per simulator: room for 1,021 real pods, so a 32 x 8 or 64 x 16 JobSet fits).
  There is no default route: a pod reaches its bridge's subnet (other pods of this simulator,
  the API server), nothing beyond.

Nothing here adds NAT or forwarding, or touches interfaces it did not create.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import shutil
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import structlog

__all__ = ["Bridge", "PodNetwork", "bridge_mac", "open_bridge", "pids_in_netns", "sweep_stale"]

log = structlog.get_logger("sim.network")

PREFIX: Final = "ksim"
STATE_ROOT: Final = Path("/run/kubesim")
NETNS_DIR: Final = Path("/run/netns")
SUPERNET: Final = ipaddress.IPv4Network("10.244.0.0/16")
# Each simulator's bridge has a /22 of SUPERNET: 64 of them, 1,021 pod addresses each.
BRIDGE_PREFIX: Final = 22
MAX_BRIDGES: Final = 2 ** (BRIDGE_PREFIX - SUPERNET.prefixlen)
# Host numbers a pod can have: not the network (0), the gateway (1) or the broadcast address.
POD_SLOTS: Final = range(2, 2 ** (32 - BRIDGE_PREFIX) - 1)


async def _ip(*args: str, batch: str | None = None, check: bool = True) -> str:
    cmd = ["ip", *args] if batch is None else ["ip", *args, "-batch", "-"]
    proc = await asyncio.create_subprocess_exec(
        *cmd,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate(batch.encode() if batch is not None else None)
    if check and proc.returncode != 0:
        raise OSError(f"ip {' '.join(args)} failed: {err.decode().strip()}")
    return out.decode()


def _start_time(pid: int) -> str:
    """The start time of `pid` (field 22 of /proc/PID/stat), '' if it does not exist."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[19]


def _owner_alive(state: Path) -> bool:
    try:
        pid_s, started = (state / "owner").read_text().split()
    except (OSError, ValueError):
        return False
    return _start_time(int(pid_s)) == started


def netns_inode(name: str) -> int | None:
    try:
        return (NETNS_DIR / name).stat().st_ino
    except OSError:
        return None


def pids_in_netns(inode: int) -> list[int]:
    """Every process whose network namespace is `inode`."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.stat(entry / "ns" / "net").st_ino == inode:
                out.append(int(entry.name))
        except OSError:
            continue
    return out


def kill_netns_processes(name: str) -> None:
    inode = netns_inode(name)
    if inode is None:
        return
    for pid in pids_in_netns(inode):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


async def _remove_bridge_resources(index: int) -> None:
    name = f"{PREFIX}{index}"
    if NETNS_DIR.is_dir():
        for ns in NETNS_DIR.iterdir():
            if ns.name.startswith(f"{name}-"):
                kill_netns_processes(ns.name)
                await _ip("netns", "del", ns.name, check=False)
    links = await _ip("-o", "link", "show", check=False)
    for line in links.splitlines():
        parts = line.split(":")
        if len(parts) < 2:
            continue
        ifname = parts[1].strip().split("@", 1)[0]
        if ifname == name or ifname.startswith(f"{name}v"):
            await _ip("link", "del", ifname, check=False)
    await asyncio.to_thread(_remove_state, name)


def _remove_state(name: str) -> None:
    """The simulator's containers in runc, its mounts (subPath binds, image roots), then its
    files: removing files under a mount left behind would reach a volume's own."""
    from kubesim.kubelet import runc, subpaths

    state = STATE_ROOT / name
    runc.sweep(state, name)
    try:
        subpaths.unmount_all(state)
    except OSError as exc:
        log.error("kept a stopped simulator's state: a mount is left", error=str(exc))
        return
    shutil.rmtree(state, ignore_errors=True)


async def sweep_stale() -> list[int]:
    """Remove what simulators that are no longer running left behind (their owner process is
    gone): processes in their pod namespaces, the namespaces, veths, bridge and state."""
    swept: set[int] = set()
    candidates: set[int] = set()
    if STATE_ROOT.is_dir():
        for state in STATE_ROOT.iterdir():
            idx = state.name[len(PREFIX) :]
            if state.name.startswith(PREFIX) and idx.isdigit() and not _owner_alive(state):
                candidates.add(int(idx))
    if NETNS_DIR.is_dir():
        for ns in NETNS_DIR.iterdir():
            head = ns.name.split("-", 1)[0]
            idx = head[len(PREFIX) :]
            if head.startswith(PREFIX) and idx.isdigit():
                if not _owner_alive(STATE_ROOT / head):
                    candidates.add(int(idx))
    links = await _ip("-o", "link", "show", check=False)
    for line in links.splitlines():
        parts = line.split(":")
        if len(parts) >= 2:
            ifname = parts[1].strip().split("@", 1)[0]
            idx = ifname[len(PREFIX) :].split("v", 1)[0]
            if ifname.startswith(PREFIX) and idx.isdigit():
                if not _owner_alive(STATE_ROOT / f"{PREFIX}{idx}"):
                    candidates.add(int(idx))
    for index in sorted(candidates):
        await _remove_bridge_resources(index)
        swept.add(index)
    if swept:
        log.info("swept resources of stopped simulators", bridges=sorted(swept))
    return sorted(swept)


def bridge_mac(index: int) -> str:
    """The fixed MAC address of bridge `ksim<index>`: locally administered (0x02), unicast."""
    return f"02:6b:73:69:6d:{index:02x}"


@dataclass
class PodNetwork:
    netns: str
    ip: str
    veth: str
    slot: int


@dataclass
class Bridge:
    """This simulator's bridge and the pod namespaces on it."""

    index: int
    state_dir: Path
    pods: dict[str, PodNetwork] = field(default_factory=dict)  # pod uid -> its network

    @property
    def name(self) -> str:
        return f"{PREFIX}{self.index}"

    @property
    def network(self) -> ipaddress.IPv4Network:
        size = 2 ** (32 - BRIDGE_PREFIX)
        return ipaddress.IPv4Network(
            (int(SUPERNET.network_address) + self.index * size, BRIDGE_PREFIX)
        )

    @property
    def gateway(self) -> str:
        return str(self.network.network_address + 1)

    async def add_pod(self, uid: str) -> PodNetwork:
        existing = self.pods.get(uid)
        if existing is not None:
            return existing
        used = {p.slot for p in self.pods.values()}
        slot = next((k for k in POD_SLOTS if k not in used), None)
        if slot is None:
            raise OSError(f"no pod IP left on {self.name} ({self.network})")
        net = PodNetwork(
            netns=f"{self.name}-{uid.replace('-', '')[:12]}",
            ip=str(self.network.network_address + slot),
            veth=f"{self.name}v{slot}",
            slot=slot,
        )
        self.pods[uid] = net
        try:
            await _ip(
                batch=(
                    f"netns add {net.netns}\n"
                    f"link add {net.veth} type veth peer name eth0 netns {net.netns}\n"
                    f"link set {net.veth} master {self.name} up\n"
                )
            )
            await _ip(
                "-n",
                net.netns,
                batch=(
                    "link set lo up\n"
                    f"addr add {net.ip}/{self.network.prefixlen} dev eth0\n"
                    "link set eth0 up\n"
                ),
            )
        except OSError:
            await self.remove_pod(uid)
            raise
        return net

    async def remove_pod(self, uid: str) -> None:
        net = self.pods.pop(uid, None)
        if net is None:
            return
        kill_netns_processes(net.netns)
        await _ip("netns", "del", net.netns, check=False)
        await _ip("link", "del", net.veth, check=False)  # normally gone with the namespace

    async def close(self) -> None:
        for uid in list(self.pods):
            await self.remove_pod(uid)
        await _remove_bridge_resources(self.index)
        with contextlib.suppress(OSError):
            STATE_ROOT.rmdir()  # only when no other simulator uses it


async def open_bridge() -> Bridge:
    """Sweep stale simulators' leftovers, then take the first free bridge number."""
    if os.geteuid() != 0:
        raise PermissionError("--run-image needs root: pods get network and mount namespaces")
    if shutil.which("ip") is None:
        raise FileNotFoundError("--run-image needs the `ip` command (iproute2)")
    await sweep_stale()
    STATE_ROOT.mkdir(parents=True, exist_ok=True, mode=0o755)
    for index in range(MAX_BRIDGES):
        state = STATE_ROOT / f"{PREFIX}{index}"
        if state.exists():
            continue
        # Claimed with its owner file already inside (a rename onto a non-empty directory
        # fails), so a concurrent sweep never sees it ownerless.
        pid = os.getpid()
        tmp = STATE_ROOT / f".claim-{pid}"
        shutil.rmtree(tmp, ignore_errors=True)
        STATE_ROOT.mkdir(parents=True, exist_ok=True, mode=0o755)  # a stopping one may rmdir it
        tmp.mkdir(mode=0o755)
        (tmp / "owner").write_text(f"{pid} {_start_time(pid)}\n")
        try:
            os.rename(tmp, state)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
            continue
        bridge = Bridge(index, state)
        try:
            await _ip(
                batch=(
                    f"link add {bridge.name} address {bridge_mac(index)} type bridge\n"
                    f"addr add {bridge.gateway}/{bridge.network.prefixlen} dev {bridge.name}\n"
                    f"link set {bridge.name} up\n"
                )
            )
        except OSError:
            await _remove_bridge_resources(index)
            raise
        return bridge
    raise OSError(f"all {MAX_BRIDGES} simulator bridges are in use")
