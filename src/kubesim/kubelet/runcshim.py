"""Helpers around runc that must be processes of their own; run as a script, standard library only.

`python -I -S runcshim.py reaper RUNC ROOT` waits until its stdin reaches end of file (the
simulator that holds the pipe's other end has exited, however it ended) and then force-deletes
every container in runc's state directory ROOT: runc leaves a container running when the
`runc run` that started it dies, so this is what ends them with the simulator.

`python -I -S runcshim.py exec RUNC ROOT ID PROCESS_JSON CONSOLE_SOCKET` is `kubectl exec -t`:
runc gives a terminal only to a detached process (its master end goes to CONSOLE_SOCKET), so
this shim becomes a child subreaper, runs `runc exec --detach --tty`, and adopts and waits for
the process that runc leaves behind, exiting with its status (128 + signal when a signal
ended it), as containerd's shim does. SIGTERM and SIGHUP kill that process.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36

_libc = ctypes.CDLL(None, use_errno=True)


def reaper(runc: str, root: str) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's ^C is for the simulator
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while os.read(0, 4096):
        pass
    if not os.path.isdir(root):
        return
    for name in os.listdir(root):
        if os.path.isdir(os.path.join(root, name)):
            subprocess.run(
                [runc, "--root", root, "delete", "--force", name],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            )


def _status(status: int) -> int:
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def exec_tty(runc: str, root: str, cid: str, process: str, console: str) -> None:
    _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    pid_file = f"{process}.pid"
    cmd = [runc, "--root", root, "exec", "--detach", "--tty", "--console-socket", console]
    done = subprocess.run([*cmd, "--pid-file", pid_file, "--process", process, cid], check=False)
    if done.returncode != 0:
        os._exit(done.returncode)
    with open(pid_file) as f:
        pid = int(f.read().strip())

    def kill(_signum: int, _frame: object) -> None:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    signal.signal(signal.SIGTERM, kill)
    signal.signal(signal.SIGHUP, kill)
    while True:
        try:
            child, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(1)  # it was never ours: runc reaped it
        if child == pid:
            os._exit(_status(status))


def main() -> None:
    if sys.argv[1] == "reaper":
        reaper(sys.argv[2], sys.argv[3])
    else:
        exec_tty(*sys.argv[2:7])


if __name__ == "__main__":
    main()
