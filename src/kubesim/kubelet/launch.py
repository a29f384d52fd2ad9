"""Start one container process in its pod's namespaces; run as a script, standard library only.

`python -I -S launch.py` reads a JSON spec on stdin, then:

- mode `run`: enters the pod's network namespace, unshares a private mount namespace and a
  UTS namespace (hostname = the pod's), mounts the container's volumes at their mountPaths
  (bind mounts of the per-pod volume directories; a mountPath whose parent directories do not
  exist gets them on a copy-on-write overlay of its nearest existing ancestor, so nothing is
  created on the host), makes the root file system read-only for `readOnlyRootFilesystem`,
  switches to the container's uid / gid / groups, and executes the command with the
  container's environment. It never returns to Python: the process *is* the container.
- mode `join`: enters the namespaces of a running container (its pid) and executes a command
  there with that container's user and environment (exec probes, `kubectl exec`). With
  `python -I -S launch.py --spec-fd N` the spec is read from fd N and the launcher's standard
  streams are the command's (`kubectl exec -i`). With `console_fd` (a Unix socket) the command
  gets a new pseudo-terminal instead, made inside the container (its /dev/ptmx) as runc makes
  one, as its controlling terminal and standard streams; the terminal's other end is sent back
  over the socket.

A failure before the command runs is written to `status_file` (run mode) and the launcher
exits 128, which the runtime reports as the container's `StartError`, as containerd does.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import sys
from typing import Any

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
PR_SET_PDEATHSIG = 1
TIOCSCTTY = 0x540E
START_ERROR = 128
SCRATCH_CANDIDATES = ("/mnt", "/media", "/srv", "/opt", "/home", "/boot")
KERNEL_MOUNTS = ("/proc", "/sys", "/dev")

_libc = ctypes.CDLL(None, use_errno=True)


class LaunchError(Exception):
    pass


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise LaunchError(f"{what}: {os.strerror(err)}")


def _setns(path: str, nstype: int) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        _check(_libc.setns(fd, nstype), f"setns {path}")
    finally:
        os.close(fd)


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


def _mountpoints() -> list[str]:
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            out.append(line.split()[4].replace("\\040", " "))
    return out


def _under(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


class _Mounter:
    """Volume mounts inside the fresh mount namespace."""

    def __init__(self, targets: list[str]) -> None:
        self.mounted: list[str] = []  # volume targets and overlays, writable places of ours
        self.scratch = ""
        self.overlays = 0
        self.targets = targets

    def _scratch(self) -> str:
        if not self.scratch:
            for cand in SCRATCH_CANDIDATES:
                if (
                    os.path.isdir(cand)
                    and not _under(cand, self.targets)
                    and not any(_under(t, [cand]) for t in self.targets)
                ):
                    _mount("tmpfs", cand, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700")
                    self.scratch = cand
                    break
            else:
                raise LaunchError("no directory for overlay scratch space")
        return self.scratch

    def make_mountpoint(self, target: str, is_dir: bool) -> None:
        if os.path.lexists(target):
            return
        missing: list[str] = []
        ancestor = target
        while not os.path.exists(ancestor):
            ancestor, tail = os.path.split(ancestor)
            missing.insert(0, tail)
        ancestor = os.path.realpath(ancestor)
        if not _under(ancestor, self.mounted):
            if ancestor == "/":
                raise LaunchError(
                    f"mountPath {target}: /{missing[0]} does not exist on the host and the "
                    "root directory cannot be overlaid; mount under an existing directory"
                )
            scratch = self._scratch()
            self.overlays += 1
            upper = f"{scratch}/o{self.overlays}/upper"
            work = f"{scratch}/o{self.overlays}/work"
            os.makedirs(upper)
            os.makedirs(work)
            st = os.stat(ancestor)
            os.chmod(upper, st.st_mode & 0o7777)
            os.chown(upper, st.st_uid, st.st_gid)
            _mount(
                "overlay",
                ancestor,
                "overlay",
                0,
                f"lowerdir={ancestor},upperdir={upper},workdir={work}",
            )
            self.mounted.append(ancestor)
        full = os.path.join(ancestor, *missing)
        if is_dir:
            os.makedirs(full, mode=0o755, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(full), mode=0o755, exist_ok=True)
            with open(full, "a"):
                pass

    def bind(self, source: str, target: str, read_only: bool) -> None:
        self.make_mountpoint(target, os.path.isdir(source))
        _mount(source, target, None, MS_BIND | MS_REC)
        if read_only:
            _remount_ro(target)
        self.mounted.append(os.path.realpath(target))


def _identity(spec: dict[str, Any]) -> None:
    uid, gid = spec.get("uid"), spec.get("gid")
    groups = [int(g) for g in spec.get("groups") or []]
    os.setgroups(groups)
    if gid is not None:
        os.setresgid(int(gid), int(gid), int(gid))
    if uid is not None:
        os.setresuid(int(uid), int(uid), int(uid))


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


def run(spec: dict[str, Any]) -> None:
    status_fd = os.open(
        spec["status_file"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600
    )
    parent = os.getppid()
    try:
        _setns(spec["netns"], CLONE_NEWNET)
        _check(_libc.unshare(CLONE_NEWNS | CLONE_NEWUTS), "unshare")
        hostname = str(spec.get("hostname") or "")[:63].encode()
        _check(_libc.sethostname(hostname, len(hostname)), "sethostname")
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
        volumes_fd = os.open(spec["volumes"], os.O_PATH | os.O_CLOEXEC)
        mounts = spec.get("mounts") or []
        mounter = _Mounter([m["target"] for m in mounts])
        for m in mounts:
            source = str(m["source"])
            if not source.startswith("/"):
                source = f"/proc/self/fd/{volumes_fd}/{source}"
            mounter.bind(source, m["target"], bool(m.get("read_only")))
        if spec.get("read_only_root"):
            keep = [*mounter.mounted, *KERNEL_MOUNTS]
            if mounter.scratch:
                keep.append(mounter.scratch)
            overlays = [p for p in mounter.mounted if p not in [m["target"] for m in mounts]]
            _remount_ro("/")
            for point in _mountpoints():
                if point != "/" and (point in overlays or not _under(point, keep)):
                    try:
                        _remount_ro(point)
                    except (LaunchError, OSError):
                        continue  # shadowed by an overlay of ours: not reachable anyway
        os.close(volumes_fd)
        os.chdir(spec.get("workdir") or "/")
        _identity(spec)
        # Die with the simulator even if it is killed outright (set after the uid change,
        # which clears it); the process group and namespace are swept besides.
        _check(_libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl")
        if os.getppid() != parent:
            raise LaunchError("the simulator went away")
        _exec(spec, status_fd)
    except (LaunchError, OSError) as exc:
        os.write(status_fd, str(exc).encode())
        os.close(status_fd)
        os._exit(START_ERROR)


def _console(sock_fd: int) -> None:
    """A new terminal from the current mount namespace's /dev/ptmx: the master end goes back
    over the socket `sock_fd`, the other end becomes this process's controlling terminal and
    its stdin, stdout and stderr."""
    import fcntl
    import socket

    master, slave = os.openpty()
    with socket.socket(fileno=sock_fd) as sock:
        socket.send_fds(sock, [b"pty"], [master])
    os.close(master)
    if os.getsid(0) != os.getpid():
        os.setsid()
    fcntl.ioctl(slave, TIOCSCTTY, 0)
    for fd in (0, 1, 2):
        os.dup2(slave, fd)
    if slave > 2:
        os.close(slave)


def join(spec: dict[str, Any]) -> None:
    pid = int(spec["pid"])
    try:
        _setns(f"/proc/{pid}/ns/net", CLONE_NEWNET)
        _setns(f"/proc/{pid}/ns/uts", CLONE_NEWUTS)
        _setns(f"/proc/{pid}/ns/mnt", CLONE_NEWNS)
        os.chdir(spec.get("workdir") or "/")
        if spec.get("console_fd") is not None:
            _console(int(spec["console_fd"]))
        _identity(spec)
        _exec(spec, None)
    except (LaunchError, OSError) as exc:
        print(f"exec in container: {exc}", file=sys.stderr)
        os._exit(START_ERROR)


def _read_fd(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--spec-fd":
        spec = json.loads(_read_fd(int(sys.argv[2])))  # stdin is the command's
    else:
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
