"""Start the controller harness (`harness.py`) as a child process next to a `jobset sim`."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from jobset.sim.process import SimProcess


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class HarnessProcess:
    proc: subprocess.Popen[str] = field(repr=False)
    webhook_port: int
    health_port: int
    output: list[str] = field(repr=False)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def log(self) -> str:
        return "".join(self.output)


def start_harness(sim: SimProcess, *flags: str, timeout: float = 90) -> HarnessProcess:
    webhook_port, health_port = free_port(), free_port()
    cmd = [
        sys.executable,
        "-m",
        "tests.integration.placement.harness",
        "--kubeconfig",
        str(sim.kubeconfig),
        "--webhook-port",
        str(webhook_port),
        "--health-port",
        str(health_port),
        *flags,
    ]
    root = Path(__file__).resolve().parents[3]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=root
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
        if "harness ready" in line:

            def drain() -> None:
                assert proc.stdout is not None
                for rest in proc.stdout:
                    output.append(rest)

            threading.Thread(target=drain, daemon=True).start()
            return HarnessProcess(proc, webhook_port, health_port, output)
    proc.kill()
    raise RuntimeError("harness did not become ready:\n" + "".join(output))
