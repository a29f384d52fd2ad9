"""Start one container process in its pod's namespaces; run as a script, standard library only.

`python -I -S launch.py` reads a JSON spec on stdin, then:

- mode `run`: this process stays outside as the container's shim: it unshares a PID
  namespace and forks the container's init (PID 1 there), forwards SIGTERM and the other
  catchable signals to it, and exits with its status. The init enters the pod's network
  namespace, unshares a mount and a UTS namespace (hostname = the pod's), builds the
  container's root (`_build_root`: overlays of the host's root and its other mounts,
  read-only underneath, with a per-container writable layer; a fresh /run, /dev and /proc, a
  read-only /sys), enters it with
  pivot_root, mounts the volumes and the kubelet's files (/etc/hosts, /etc/resolv.conf,
  /etc/hostname), applies `readOnlyRootFilesystem`, drops capabilities to the container's set,
  switches to its uid / gid / groups and executes the command: the command itself is PID 1,
  as under containerd without an init, so when it ends the kernel kills every process left in
  the container.
- mode `join`: enters the namespaces of a running container (the host pid of its init: PID,
  network, UTS and mount) and runs a command there, as a child, with that container's user,
  capabilities and environment (exec probes, `kubectl exec`).

A failure before the command runs is written to `status_file` (run mode) and the launcher
exits 128, which the runtime reports as the container's `StartError`, as containerd does.
"""

from __future__ import annotations

import ctypes
import json
import os
import select
import shutil
import signal
import stat
import sys
from typing import Any

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2
PR_SET_PDEATHSIG = 1
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
START_ERROR = 128
# Host paths the container does not see from the host: kernel file systems it gets fresh,
# and /run, a per-container directory (the host's sockets and pid files live there).
FRESH = ("/proc", "/sys", "/dev", "/run")
PSEUDO_FS = frozenset(
    "proc sysfs devtmpfs devpts mqueue cgroup cgroup2 nsfs bpf tracefs debugfs securityfs "
    "fusectl configfs binfmt_misc autofs pstore efivarfs hugetlbfs rpc_pipefs".split()
)
DEVICES = {"null": (1, 3), "zero": (1, 5), "full": (1, 7), "random": (1, 8)}
DEVICES |= {"urandom": (1, 9), "tty": (5, 0)}
FORWARDED = frozenset(
    getattr(signal, f"SIG{name}") for name in "TERM INT HUP QUIT USR1 USR2 WINCH".split()
)

_libc = ctypes.CDLL(None, use_errno=True)


class LaunchError(Exception):
    pass


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise LaunchError(f"{what}: {os.strerror(err)}")


def _setns(fd: int, nstype: int, what: str) -> None:
    _check(_libc.setns(fd, nstype), f"setns {what}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    _check(
        _libc.mount(
            source.encode() if source else None,
            target.encode(),
            fstype.encode() if fstype else None,
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        ),
        f"mount {source or fstype or ''} on {target}",
    )


def _remount_ro(target: str) -> None:
    flags = MS_BIND | MS_REMOUNT | MS_RDONLY
    st = os.statvfs(target)
    for bit, flag in (
        (os.ST_NOSUID, MS_NOSUID),
        (os.ST_NODEV, MS_NODEV),
        (os.ST_NOEXEC, MS_NOEXEC),
    ):
        if st.f_flag & bit:
            flags |= flag
    _mount(None, target, None, flags)


def _under(path: str, roots: list[str] | tuple[str, ...]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _unescape(field: str) -> str:
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


# ---------------------------------------------------------------------- the container's root


def _host_mounts(skip: list[str]) -> list[str]:
    """The host's mounts below / that the container sees read-only (other disks, binds):
    parents first, kernel file systems and `skip` left out."""
    points: dict[str, None] = {}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            point = _unescape(fields[4])
            fstype = fields[fields.index("-") + 1]
            if point == "/" or fstype in PSEUDO_FS or _under(point, [*FRESH, *skip]):
                continue
            points.pop(point, None)
            points[point] = None  # the topmost of stacked mounts counts
    return sorted(points, key=lambda p: p.count("/"))


def _mkpoint(path: str, is_dir: bool, mode: int = 0o755) -> None:
    if os.path.lexists(path):
        return
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    if is_dir:
        os.mkdir(path, mode)
    else:
        with open(path, "a"):
            pass


def _fresh_dir(path: str, mode: int) -> str:
    os.makedirs(path, exist_ok=True)
    os.chmod(path, mode)
    return path


def _mount_dev(root: str) -> None:
    """A minimal /dev, as container runtimes make it: the usual character devices, its own
    devpts instance, a /dev/shm and the standard symlinks."""
    dev = f"{root}/dev"
    _mkpoint(dev, True)
    _mount("tmpfs", dev, "tmpfs", MS_NOSUID, "mode=755,size=65536k")
    for name, (major, minor) in DEVICES.items():
        path = f"{dev}/{name}"
        try:
            os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(major, minor))
            os.chmod(path, 0o666)
        except PermissionError:  # no mknod here: the host's node, bound
            _mkpoint(path, False)
            _mount(f"/dev/{name}", path, None, MS_BIND)
    os.mkdir(f"{dev}/pts")
    _mount("devpts", f"{dev}/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666")
    os.symlink("pts/ptmx", f"{dev}/ptmx")
    os.mkdir(f"{dev}/shm")
    _mount("shm", f"{dev}/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=1777")
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0")):
        os.symlink(target, f"{dev}/{name}")
    os.symlink("/proc/self/fd/1", f"{dev}/stdout")
    os.symlink("/proc/self/fd/2", f"{dev}/stderr")


def _mount_kernel_fs(root: str) -> None:
    """/proc of the container's PID namespace and a read-only /sys."""
    _mkpoint(f"{root}/proc", True)
    _mount("proc", f"{root}/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    _mkpoint(f"{root}/sys", True)
    flags = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC
    try:
        _mount("sysfs", f"{root}/sys", "sysfs", flags)
    except LaunchError:
        _mount("/sys", f"{root}/sys", None, MS_BIND)
        _remount_ro(f"{root}/sys")
    _mount_dev(root)


def _overlay(lower: str, target: str, layer: str) -> None:
    """An overlay of `lower` on `target`, its writes in `layer` (whose top directory takes
    the lower one's owner and mode, as the overlay's root shows the upper's)."""
    upper, work = f"{layer}/upper", f"{layer}/work"
    for path in (upper, work):
        os.makedirs(path, mode=0o700)
    st = os.stat(lower)
    os.chown(upper, st.st_uid, st.st_gid)
    os.chmod(upper, stat.S_IMODE(st.st_mode))
    _mount("overlay", target, "overlay", 0, f"lowerdir={lower},upperdir={upper},workdir={work}")


def _build_root(spec: dict[str, Any]) -> tuple[str, list[str]]:
    """The container's root under its directory: an overlay whose lower layer is the host's
    root, the host's other mounts overlaid the same way (read-only if they cannot be), a
    fresh /run, the kernel file systems, the simulator's own state hidden. Returns the root
    and its writable mounts."""
    cdir = str(spec["container_dir"])
    root = f"{cdir}/root"
    os.makedirs(root, mode=0o700, exist_ok=True)
    try:
        _overlay("/", root, f"{cdir}/layer")
    except LaunchError as exc:
        raise LaunchError(
            f"the container's root (an overlay of / with its writable layer in {cdir}): {exc}; "
            "the simulator's state directory must be on a file system that can hold an "
            "overlay's upper layer (tmpfs, ext4, xfs; not overlayfs)"
        ) from exc
    writable = [root]
    hidden = [str(p) for p in spec.get("hide") or []]
    for i, point in enumerate(_host_mounts([*hidden, cdir])):
        target = f"{root}{point}"
        try:
            if os.path.isdir(point):
                _overlay(point, target, f"{cdir}/layers/{i}")
                writable.append(target)
                continue
        except (LaunchError, OSError):
            pass  # a file system overlayfs cannot stack on: shown read-only
        try:
            _mount(point, target, None, MS_BIND)
            _remount_ro(target)
        except (LaunchError, OSError):
            continue  # not bindable (a vanished or special mount): the directory stays
    _mkpoint(f"{root}/run", True)
    _mount(_fresh_dir(f"{cdir}/run", 0o755), f"{root}/run", None, MS_BIND)
    writable.append(f"{root}/run")
    for path in hidden:
        if os.path.isdir(f"{root}{path}"):
            _mount("tmpfs", f"{root}{path}", "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "mode=0")
    _mount_kernel_fs(root)
    return root, [w.removeprefix(root) or "/" for w in writable]


def _pivot(root: str) -> str:
    """Make `root` the root directory; the host's stays reachable at the returned path (so
    that volumes can be bound from it) until `_detach_host` is called."""
    old = f"/.kubesim-host-{os.getpid()}"
    os.mkdir(f"{root}{old}", 0o700)
    number = SYS_PIVOT_ROOT.get(os.uname().machine)
    if number is not None:
        result = _libc.syscall(ctypes.c_long(number), root.encode(), f"{root}{old}".encode())
    else:
        result = _libc.pivot_root(root.encode(), f"{root}{old}".encode())
    _check(result, "pivot_root")
    os.chdir("/")
    return old


def _detach_host(old: str) -> None:
    _check(_libc.umount2(old.encode(), MNT_DETACH), "detach the host's root")
    os.rmdir(old)


# ---------------------------------------------------------------------- volumes and files


def _open_sources(spec: dict[str, Any]) -> dict[str, int]:
    """Handles on every mount source, taken while the host's root is still reachable."""
    fds: dict[str, int] = {}
    for path in [spec["volumes"], spec["pod_files"]]:
        fds[path] = os.open(path, os.O_PATH | os.O_CLOEXEC)
    for m in spec.get("mounts") or []:
        source = str(m["source"])
        if source.startswith("/") and source not in fds:
            fds[source] = os.open(source, os.O_PATH | os.O_CLOEXEC)
    return fds


def _bind(source: str, target: str, read_only: bool) -> None:
    _mkpoint(target, os.path.isdir(source))
    _mount(source, target, None, MS_BIND | MS_REC)
    if read_only:
        _remount_ro(target)


def _mount_volumes(spec: dict[str, Any], fds: dict[str, int]) -> None:
    """Volumes at their mountPaths, then the kubelet's files; paths resolve inside the
    container's root (a symlink there cannot lead out of it)."""
    volumes = fds[spec["volumes"]]
    for m in spec.get("mounts") or []:
        source = str(m["source"])
        if source.startswith("/"):
            path = f"/proc/self/fd/{fds[source]}"
        else:
            path = f"/proc/self/fd/{volumes}/{source}"
        _bind(path, str(m["target"]), bool(m.get("read_only")))
    files = fds[spec["pod_files"]]
    for name in ("hosts", "resolv.conf", "hostname"):
        _bind(f"/proc/self/fd/{files}/{name}", f"/etc/{name}", False)


# ---------------------------------------------------------------------- identity


def _drop_capabilities(keep: list[int] | None) -> None:
    """Drop from the bounding set every capability not kept: at exec, root's permitted and
    effective sets become the bounding set, other users start with none."""
    if keep is None:
        return
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            last = int(f.read())
    except OSError:
        last = 40
    for cap in range(last + 1):
        if cap not in keep:
            _check(_libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), f"drop capability {cap}")


def _identity(spec: dict[str, Any]) -> None:
    _drop_capabilities(spec.get("capabilities"))
    uid, gid = spec.get("uid"), spec.get("gid")
    groups = [int(g) for g in spec.get("groups") or []]
    os.setgroups(groups)
    if gid is not None:
        os.setresgid(int(gid), int(gid), int(gid))
    if uid is not None:
        os.setresuid(int(uid), int(uid), int(uid))
    if spec.get("no_new_privs"):
        _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def _exec(spec: dict[str, Any], status_fd: int | None) -> None:
    argv = [str(a) for a in spec["argv"]]
    env = {str(k): str(v) for k, v in spec["env"].items()}
    if not argv:
        raise LaunchError("no command to run")
    exe = argv[0] if "/" in argv[0] else shutil.which(argv[0], path=env.get("PATH", ""))
    if exe is None:
        raise LaunchError(
            f'exec: "{argv[0]}": executable file not found in $PATH ({env.get("PATH", "")})'
        )
    if status_fd is not None:
        os.close(status_fd)
    try:
        os.execve(exe, argv, env)
    except OSError as exc:
        raise LaunchError(f'exec: "{argv[0]}": {exc.strerror}') from exc


# ---------------------------------------------------------------------- modes


def _container(spec: dict[str, Any], status_fd: int, shim_alive: int) -> None:
    """The container's init: set it up, then become the command (never returns)."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
    try:
        netns = os.open(spec["netns"], os.O_RDONLY | os.O_CLOEXEC)
        _setns(netns, CLONE_NEWNET, spec["netns"])
        os.close(netns)
        _check(_libc.unshare(CLONE_NEWNS | CLONE_NEWUTS), "unshare")
        hostname = str(spec.get("hostname") or "")[:63].encode()
        _check(_libc.sethostname(hostname, len(hostname)), "sethostname")
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
        fds = _open_sources(spec)
        root, writable = _build_root(spec)
        old = _pivot(root)
        # The root's own mounts, held before volumes may cover them (a volume at /tmp).
        layers = [os.open(w, os.O_PATH | os.O_CLOEXEC) for w in writable]
        _mount_volumes(spec, fds)
        for fd in fds.values():
            os.close(fd)
        _detach_host(old)
        workdir = str(spec.get("workdir") or "/")
        os.makedirs(workdir, mode=0o755, exist_ok=True)  # in the container's layer, as runc
        for fd in layers:
            if spec.get("read_only_root"):
                _remount_ro(f"/proc/self/fd/{fd}")
            os.close(fd)
        os.chdir(workdir)
        _identity(spec)
        # Die with the shim even if it is killed outright (set after the uid change, which
        # clears it); then the kernel ends everything else in the PID namespace.
        _check(_libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl")
        if select.select([shim_alive], [], [], 0)[0]:
            raise LaunchError("the runtime went away")
        os.close(shim_alive)
        _exec(spec, status_fd)
    except (LaunchError, OSError) as exc:
        os.write(status_fd, str(exc).encode())
        os.close(status_fd)
    os._exit(START_ERROR)


def _wait_forwarding(child: int) -> None:
    """Pass catchable signals on to `child`, then exit with its status (128 + signal when a
    signal ended it, as a shell reports it)."""

    def forward(signum: int, _frame: object) -> None:
        try:
            os.kill(child, signum)
        except ProcessLookupError:
            pass

    for sig in FORWARDED:
        signal.signal(sig, forward)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
    _, status = os.waitpid(child, 0)
    if os.WIFSIGNALED(status):
        os._exit(128 + os.WTERMSIG(status))
    os._exit(os.WEXITSTATUS(status))


def run(spec: dict[str, Any]) -> None:
    status_fd = os.open(
        spec["status_file"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600
    )
    parent = os.getppid()
    try:
        # The shim dies with the simulator even if it is killed outright; its init follows.
        _check(_libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl")
        if os.getppid() != parent:
            raise LaunchError("the simulator went away")
        _check(_libc.unshare(CLONE_NEWPID), "unshare the PID namespace")
        alive_r, alive_w = os.pipe()
        signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)  # until the forwarding is set up
        child = os.fork()
    except (LaunchError, OSError) as exc:
        os.write(status_fd, str(exc).encode())
        os._exit(START_ERROR)
    if child == 0:
        os.close(alive_w)
        _container(spec, status_fd, alive_r)
    os.close(alive_r)
    os.close(status_fd)
    _wait_forwarding(child)


def join(spec: dict[str, Any]) -> None:
    pid = int(spec["pid"])
    try:
        # Every handle first: once in the container's mount namespace, /proc is its own.
        kinds = [("pid", CLONE_NEWPID), ("net", CLONE_NEWNET), ("uts", CLONE_NEWUTS)]
        kinds.append(("mnt", CLONE_NEWNS))
        fds = [(os.open(f"/proc/{pid}/ns/{k}", os.O_RDONLY | os.O_CLOEXEC), k, t) for k, t in kinds]
        for fd, kind, nstype in fds:
            _setns(fd, nstype, f"/proc/{pid}/ns/{kind}")
            os.close(fd)
        child = os.fork()  # only a child is in the container's PID namespace
        if child == 0:
            os.chdir(spec.get("workdir") or "/")
            _identity(spec)
            _exec(spec, None)
    except (LaunchError, OSError) as exc:
        print(f"exec in container: {exc}", file=sys.stderr)
        os._exit(START_ERROR)
    _wait_forwarding(child)


def main() -> None:
    spec = json.loads(sys.stdin.buffer.read())
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    if spec.get("mode") == "join":
        join(spec)
    else:
        run(spec)


if __name__ == "__main__":
    main()
