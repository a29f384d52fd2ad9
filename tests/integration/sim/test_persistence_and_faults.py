"""`jobset sim --data-dir` keeps state across restarts; `--faults` is visible to clients."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from kubesim.process import start_sim

pytestmark = [pytest.mark.kubectl]


def test_objects_survive_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = start_sim(tmp_path, "--sim-level", "none", "--data-dir", str(data))
    try:
        first.kubectl(
            "apply",
            "-f",
            "-",
            input="""\
apiVersion: v1
kind: Namespace
metadata: {name: keep}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: kept, namespace: keep}
data: {answer: "42"}
""",
        )
        first.kubectl(
            "apply", "-f", "-", input=Path(__file__).with_name("widget_crd.yaml").read_text()
        )
        first.kubectl("wait", "--for=condition=Established", "crd/widgets.example.com")
        first.kubectl(
            "apply",
            "-f",
            "-",
            input="apiVersion: example.com/v1\nkind: Widget\n"
            "metadata: {name: w, namespace: keep}\nspec: {size: 5}\n",
        )
        before = json.loads(first.kubectl("get", "cm", "kept", "-n", "keep", "-o", "json").stdout)
    finally:
        assert first.stop(signal.SIGTERM) == 0
    port = int(first.url.rsplit(":", 1)[1])
    second = start_sim(tmp_path, "--sim-level", "none", "--data-dir", str(data), port=port)
    try:
        after = json.loads(second.kubectl("get", "cm", "kept", "-n", "keep", "-o", "json").stdout)
        assert after["data"] == {"answer": "42"}
        assert after["metadata"]["uid"] == before["metadata"]["uid"]
        assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
        widget = json.loads(second.kubectl("get", "widget", "w", "-n", "keep", "-o", "json").stdout)
        assert widget["spec"]["size"] == 5
        # New writes continue the resourceVersion sequence.
        second.kubectl("patch", "cm", "kept", "-n", "keep", "-p", '{"data":{"answer":"43"}}')
        patched = json.loads(second.kubectl("get", "cm", "kept", "-n", "keep", "-o", "json").stdout)
        assert int(patched["metadata"]["resourceVersion"]) > int(
            after["metadata"]["resourceVersion"]
        )
    finally:
        second.stop()


def test_injected_errors_and_cut_watches_are_observable(tmp_path: Path) -> None:
    faults = tmp_path / "faults.yaml"
    faults.write_text("""\
seed: 7
rules:
  - name: broken-configmap-lists
    match: {verb: list, resource: configmaps}
    error: {code: 500, probability: 1.0}
  - name: short-watches
    match: {verb: watch, resource: namespaces}
    watchCut: {afterEvents: 2}
""")
    sim = start_sim(tmp_path, "--sim-level", "none", "--faults", str(faults))
    try:
        failed = sim.kubectl("get", "configmaps", "-A", check=False)
        assert failed.returncode != 0
        assert "InternalError" in failed.stderr or "500" in failed.stderr
        # Other requests are untouched.
        assert "default" in sim.kubectl("get", "namespaces", "-o", "name").stdout
        # A watch of namespaces (4 exist at boot) is cut after 2 events: the stream ends early.
        env = {**os.environ, "KUBECONFIG": str(sim.kubeconfig)}
        raw = subprocess.run(
            ["kubectl", "get", "--raw", "/api/v1/namespaces?watch=true"],
            capture_output=True,
            text=True,
            env=env,
            timeout=30,
        )
        events = [json.loads(line) for line in raw.stdout.splitlines() if line.strip()]
        assert len(events) == 2
    finally:
        sim.stop()
