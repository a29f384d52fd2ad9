"""runc, driven as containerd's shim drives it: one OCI bundle per container instance.

- `Runc.run` starts `runc run --keep` in the foreground: runc is the container's shim (it
  passes the container's output to the instance's log, forwards signals to its init and exits
  with its status, 128 + signal when a signal ended it); the init's host pid is in the
  bundle's `init.pid` once the command runs. `--keep` leaves the container (and its cgroup)
  until `delete`, so that an out-of-memory kill can be read from the cgroup first.
- `exec_command` is `runc exec` of a process JSON (the container's user, capabilities and
  environment with another command); with a terminal it goes through `runcshim.py exec`.
- runc's state directory is under the simulator's own state (`/run/kubesim/ksimN/runc`), its
  cgroups under `/kubesim/ksimN`; a reaper process (`runcshim.py reaper`) deletes every
  container when the simulator exits, however it exits, and `sweep` removes what a crashed
  simulator left (containers, cgroups).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import IO, Any, Final

__all__ = ["MissingRuntime", "Runc", "find_runc", "oom_killed", "sweep"]

PACKAGE: Final = "runc"
SHIM: Final = str(Path(__file__).with_name("runcshim.py"))
CGROUP_ROOT: Final = Path("/sys/fs/cgroup")
CGROUP_PARENT: Final = "kubesim"
DEFAULT_PATH: Final = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class MissingRuntime(ValueError):
    """runc is not installed."""


def find_runc() -> str:
    """runc's path, or MissingRuntime naming the Debian package."""
    path = shutil.which(PACKAGE)  # on PATH, as the kubelet's runtime finds it
    if path is None:
        raise MissingRuntime(
            "--run-image needs the OCI runtime runc: install the Debian package "
            f"`{PACKAGE}` (apt-get install {PACKAGE}; `make test` installs it)"
        )
    return path


def cgroup_dirs(relative: str) -> list[Path]:
    """The directories of cgroup `relative` in every cgroup v1 hierarchy (or the v2 one)."""
    if (CGROUP_ROOT / "cgroup.controllers").exists():
        return [CGROUP_ROOT / relative]
    out = []
    with contextlib.suppress(OSError):
        for entry in CGROUP_ROOT.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                out.append(entry / relative)
    return out


def oom_killed(cgroup: str) -> bool:
    """Whether the kernel's OOM killer killed a process of the container's cgroup."""
    v1 = CGROUP_ROOT / "memory" / cgroup.lstrip("/") / "memory.oom_control"
    v2 = CGROUP_ROOT / cgroup.lstrip("/") / "memory.events"
    for path in (v1, v2):
        with contextlib.suppress(OSError):
            for line in path.read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and int(value or 0) > 0:
                    return True
    return False


def _remove_cgroup_tree(relative: str) -> None:
    """rmdir a cgroup and its children, deepest first, in every hierarchy (empty ones only)."""
    for top in cgroup_dirs(relative):
        if not top.is_dir():
            continue
        for dirpath, dirs, _ in sorted(os.walk(top), key=lambda e: -e[0].count("/")):
            for d in dirs:
                with contextlib.suppress(OSError):
                    os.rmdir(os.path.join(dirpath, d))
        with contextlib.suppress(OSError):
            top.rmdir()


def sweep(state: Path, name: str) -> None:
    """Force-delete what a stopped simulator `name` left in runc (its state dir `state`)."""
    root = state / "runc"
    runc = shutil.which(PACKAGE, path=DEFAULT_PATH)
    if runc is not None and root.is_dir():
        for entry in root.iterdir():
            subprocess.run(
                [runc, "--root", str(root), "delete", "--force", entry.name],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            )
    _remove_cgroup_tree(f"{CGROUP_PARENT}/{name}")


class Runc:
    """runc for one simulator: its state directory and cgroup parent, and the reaper."""

    def __init__(self, binary: str, state: Path, name: str) -> None:
        self.binary = binary
        self.root = state / "runc"
        self.cgroup_parent = f"/{CGROUP_PARENT}/{name}"
        self.root.mkdir(mode=0o700, exist_ok=True)
        self._reaper: subprocess.Popen[bytes] | None = None

    def start_reaper(self) -> None:
        self._reaper = subprocess.Popen(
            [sys.executable, "-I", "-S", SHIM, "reaper", self.binary, str(self.root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )

    def stop_reaper(self) -> None:
        if self._reaper is not None:
            assert self._reaper.stdin is not None
            self._reaper.stdin.close()
            self._reaper.wait()
            self._reaper = None

    def command(self, *args: str) -> list[str]:
        return [self.binary, "--root", str(self.root), *args]

    def cgroup(self, cid: str) -> str:
        return f"{self.cgroup_parent}/{cid}"

    def run(
        self, cid: str, bundle: Path, spec: dict[str, Any], log: IO[bytes]
    ) -> subprocess.Popen[bytes]:
        """Write the bundle's config.json and start the container; stdout and stderr go to
        `log` (runc's own errors too, and its JSON log to the bundle's runc.log)."""
        (bundle / "config.json").write_text(json.dumps(spec))
        return subprocess.Popen(
            self.command(*self._run_args(bundle), cid),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
            env={"PATH": DEFAULT_PATH},
        )

    @staticmethod
    def _run_args(bundle: Path) -> list[str]:
        log = ["--log", str(bundle / "runc.log"), "--log-format", "json"]
        return [
            *log,
            "run",
            "--keep",
            "--pid-file",
            str(bundle / "init.pid"),
            "--bundle",
            str(bundle),
        ]

    @staticmethod
    def init_pid(bundle: Path) -> int | None:
        """The container's init (host pid), once it runs the container's command."""
        try:
            return int((bundle / "init.pid").read_text().strip())
        except (OSError, ValueError):
            return None

    @staticmethod
    def start_error(bundle: Path) -> str:
        """Why runc could not start the container (its last logged error), '' if unknown."""
        message = ""
        with contextlib.suppress(OSError):
            for line in (bundle / "runc.log").read_text().splitlines():
                with contextlib.suppress(ValueError):
                    entry = json.loads(line)
                    if entry.get("level") in ("error", "fatal"):
                        message = str(entry.get("msg") or "")
        return message

    def delete(self, cid: str) -> None:
        subprocess.run(
            self.command("delete", "--force", cid),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )

    def exec_command(self, cid: str, process: Path, tty_socket: str | None = None) -> list[str]:
        """The command line that runs the process JSON `process` in container `cid`."""
        if tty_socket is None:
            return self.command("exec", "--process", str(process), cid)
        shim = [sys.executable, "-I", "-S", SHIM, "exec", self.binary, str(self.root)]
        return [*shim, cid, str(process), tty_socket]

    def close(self) -> None:
        self.stop_reaper()
        _remove_cgroup_tree(self.cgroup_parent.lstrip("/"))
