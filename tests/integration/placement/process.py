"""Start the controller harness (`harness.py`) as a child process next to a `jobset sim`."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from kubesim.process import SimProcess, free_port, spawn_until_ready


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
    proc, output, _ = spawn_until_ready(cmd, "harness ready", timeout=timeout, cwd=root)
    return HarnessProcess(proc, webhook_port, health_port, output)
