"""`jobset dev --log-format json` as a real process: every line it writes, on stdout and on
stderr, is one JSON object, through an aiohttp server error, reconcile errors and whatever
asyncio and `warnings` have to say; tracebacks are structured fields, not text.

Induced: a malformed HTTP request to the metrics server (aiohttp logs an error with a
traceback on `aiohttp.server`), and every Job create refused with a 500 by the simulator's
fault plan (the JobSet's reconciles fail and are retried, logged with their traceback).
`PYTHONASYNCIODEBUG=1` puts asyncio in debug mode (its slow-callback warnings: a few
`asyncio` records at startup on this machine, not asserted as they depend on its speed;
tests/unit/runtime/test_logging.py drives asyncio's exception handler deterministically)
and `PYTHONWARNINGS=default` shows every warning once, so anything that would print past
the logger has the chance to.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kubesim.process import SimProcess, free_port
from kubeutil.gilswitch import LOOP_SWITCH_INTERVAL
from tests.eventually import eventually_sync
from tests.logs import json_records

pytestmark = [pytest.mark.kubectl, pytest.mark.timeout(180)]

FAULTS = """\
seed: 1
rules:
  - name: refuse-job-creates
    match: {verb: [create], resource: [batch/jobs]}
    error: {code: 500, probability: 1.0}
"""
JOBSET = """
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: refused, namespace: default}
spec:
  replicatedJobs:
    - name: workers
      replicas: 1
      template:
        spec:
          template:
            spec:
              restartPolicy: Never
              containers: [{name: main, image: busybox, command: [sleep, "1"]}]
"""
# A Content-Length that is not a number: aiohttp answers 400 and logs the parser's error.
MALFORMED = b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n"


@dataclass
class Run:
    stdout: list[dict[str, Any]]
    stderr: list[dict[str, Any]]
    bad_request_answer: bytes
    returncode: int


def _send(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        return sock.recv(4096)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    tmp = tmp_path_factory.mktemp("json-logs")
    (tmp / "faults.yaml").write_text(FAULTS)
    kubeconfig, metrics_port = tmp / "kubeconfig", free_port()
    out, err = tmp / "stdout.log", tmp / "stderr.log"
    with out.open("w") as out_file, err.open("w") as err_file:
        proc = subprocess.Popen(
            [sys.executable, "-m", "jobset.cli", "dev", "--kubeconfig", str(kubeconfig),
             "--time-scale", "0.1", "--nodes", "2", "--metrics-port", str(metrics_port),
             "--faults", str(tmp / "faults.yaml"), "--log-format", "json"],
            stdout=out_file,
            stderr=err_file,
            env={**os.environ, "PYTHONASYNCIODEBUG": "1", "PYTHONWARNINGS": "default"},
        )  # fmt: skip
        try:

            def ready() -> bool:
                assert proc.poll() is None, f"jobset dev exited:\n{err.read_text()[-3000:]}"
                return "jobset dev ready" in out.read_text()

            eventually_sync(ready, within=90, what="jobset dev ready")
            answer = _send(metrics_port, MALFORMED)
            SimProcess(proc, kubeconfig, "", []).kubectl("apply", "-f", "-", input=JOBSET)
            eventually_sync(
                lambda: err.read_text().count('"Reconciler error"') >= 2,
                within=60,
                what="the refused creates' reconcile errors",
            )
        finally:
            proc.terminate()
            try:
                code = proc.wait(timeout=40)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
    yield Run(json_records(out.read_text()), json_records(err.read_text()), answer, code)


def test_every_line_is_a_json_object_and_the_run_ends_cleanly(run: Run) -> None:
    # json_records has parsed each line on its own (it fails naming a line that is not JSON).
    assert run.returncode == 0
    assert [r["event"].split(":")[0] for r in run.stdout] == [
        "jobset dev ready",
        "jobset dev stopped",
    ]
    ready = run.stdout[0]
    assert ready["url"].startswith("https://127.0.0.1:") and ready["kubeconfig"]
    for rec in run.stdout + run.stderr:
        assert {"event", "level", "timestamp"} <= rec.keys(), rec
        assert not isinstance(rec.get("exception"), str), rec  # never a rendered traceback


def test_the_aiohttp_server_error_is_a_record_with_a_structured_traceback(run: Run) -> None:
    assert run.bad_request_answer.startswith(b"HTTP/1.0 400") or run.bad_request_answer.startswith(
        b"HTTP/1.1 400"
    )
    (rec,) = [r for r in run.stderr if r.get("logger") == "aiohttp.server"]
    assert rec["level"] == "error" and rec["event"].startswith("Error handling request")
    (exc,) = rec["exception"]
    assert exc["exc_type"] == "BadHttpMessage" and "Content-Length" in exc["exc_value"]
    assert exc["frames"] and all({"filename", "lineno", "name"} <= f.keys() for f in exc["frames"])


def test_reconcile_errors_carry_the_jobset_key_and_a_structured_traceback(run: Run) -> None:
    errors = [r for r in run.stderr if r["event"] == "Reconciler error"]
    assert len(errors) >= 2
    for rec in errors:
        assert rec["level"] == "error" and rec["controller"] == "jobset"
        assert rec["key"] == "default/refused" and rec["logger"] == "controller"
        assert "injected fault" in rec["error"]
        first = rec["exception"][0]
        assert first["exc_type"] == "ActionError" and "injected fault" in first["exc_value"]
        names = {f["name"] for e in rec["exception"] for f in e["frames"]}
        assert "reconcile" in names, names  # the reconciler's frames, as fields
        assert all("locals" not in f for e in rec["exception"] for f in e["frames"])
    # Retried with backoff, as the requeue count shows.
    assert [r["requeues"] for r in errors][:2] == [1, 2]


def test_the_manager_says_it_runs_with_the_short_switch_interval(run: Run) -> None:
    # `jobset dev` owns its process, so its planning threads give the loop the interpreter
    # back every 0.5 ms (kubeutil.gilswitch), and the manager's first line says so.
    (starting,) = [r for r in run.stderr if r["event"] == "starting"]
    assert starting["logger"] == "manager" and starting["gc_freeze"] is True
    assert starting["gil_switch_interval"] == LOOP_SWITCH_INTERVAL


def test_a_flag_error_is_a_json_line_too(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "jobset.cli", "dev", "--kubeconfig", str(tmp_path / "kc"),
         "--log-format", "json", "--reconcile-timeout", "-1"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 2 and result.stdout == ""
    (rec,) = json_records(result.stderr)
    assert rec["level"] == "error"
    assert rec["event"] == "jobset dev: --reconcile-timeout must not be negative (0: no limit)"
