"""Run `jobset sim` - and `jobset controller` next to it - as child processes: for tests,
benchmarks and the demo.

Starting the real commands (not in-process servers) is how users run them, and keeps the
server's CPU and memory separate from the client's when measuring.
"""

from __future__ import annotations

import functools
import os
import random
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass
class SimProcess:
    """A `jobset sim` subprocess and the kubeconfig it wrote."""

    proc: subprocess.Popen[str]
    kubeconfig: Path
    url: str
    output: list[str]

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """Run the real kubectl against this cluster."""
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig)}
        result = subprocess.run(
            ["kubectl", *args],
            input=input,
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} failed ({result.returncode}):\n"
                f"stdout: {result.stdout}\nstderr: {result.stderr}"
            )
        return result

    def stop(self, sig: int = 15) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def spawn_until_ready(
    cmd: list[str], marker: str, *, timeout: float = 60, cwd: Path | None = None
) -> tuple[subprocess.Popen[str], list[str], str]:
    """Start `cmd` and read its output until a line holds `marker`; return the process, the
    output list (a thread keeps appending what follows) and the marker line. Kills the
    process and raises RuntimeError, with what it printed, when it exits or `timeout` passes
    first."""
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=cwd
    )
    assert proc.stdout is not None
    output: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            if proc.poll() is not None:
                break
            continue
        output.append(line)
        if marker in line:

            def drain() -> None:
                assert proc.stdout is not None
                for rest in proc.stdout:
                    output.append(rest)

            threading.Thread(target=drain, daemon=True).start()
            return proc, output, line
    proc.kill()
    proc.wait()
    raise RuntimeError(f"{' '.join(cmd)} did not become ready:\n" + "".join(output))


# Ports handed out by free_port in this process, never handed out twice.
_GIVEN: set[int] = set()


@functools.cache  # the kernel's setting, read once per process
def ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on `host` now, for a child process to listen on.

    Drawn at random from below the kernel's ephemeral range, never twice in one process:
    a port the kernel picked for `bind(0)` is handed out again by the kernel to the next
    `bind(0)` or outgoing connection - in the child itself, before it binds the port (a
    CI run lost a module to exactly that). Below the range only another explicit choice
    can take it. Servers that can report their port (`jobset sim --port 0`) are still
    better started with 0.
    """
    low, high = ephemeral_range()
    # 12k ports below the range; when the range starts too low, the ones above it.
    start, stop = (max(1024, low - 12288), low) if low - 1024 >= 4096 else (high + 1, 65536)
    for _ in range(1000 if start < stop else 0):
        port = random.randrange(start, stop)
        if port in _GIVEN:
            continue
        with socket.socket() as sock:
            try:
                sock.bind((host, port))
            except OSError:
                continue
        _GIVEN.add(port)
        return port
    raise RuntimeError(f"no free TCP port on {host} in {start}..{stop - 1}")


def controller_command(
    kubeconfig: str | Path, *flags: str, python_flags: Sequence[str] = ()
) -> list[str]:
    """`jobset controller --kubeconfig KUBECONFIG FLAGS...` run by this interpreter, as a
    container runs it; `python_flags` go to the interpreter (`-X importtime`, ...)."""
    return [
        sys.executable,
        *python_flags,
        "-m",
        "jobset.cli",
        "controller",
        "--kubeconfig",
        str(kubeconfig),
        *flags,
    ]


def start_command(tmp: Path, subcommand: str, *args: str, timeout: float = 60) -> SimProcess:
    """Start `jobset SUBCOMMAND --kubeconfig tmp/kubeconfig ARGS...` (`sim` or `dev`) and wait
    for its `jobset SUBCOMMAND ready: URL` line; its output keeps being collected."""
    kubeconfig = tmp / "kubeconfig"
    cmd = [sys.executable, "-m", "jobset.cli", subcommand, "--kubeconfig", str(kubeconfig), *args]
    proc, output, line = spawn_until_ready(cmd, f"jobset {subcommand} ready", timeout=timeout)
    url = line.split("ready:")[1].split()[0] if "ready:" in line else ""
    return SimProcess(proc, kubeconfig, url, output)


def start_sim(tmp: Path, *extra: str, port: int = 0, timeout: float = 60) -> SimProcess:
    """Start `jobset sim` and wait for its `ready` line."""
    return start_command(tmp, "sim", "--port", str(port), *extra, timeout=timeout)
