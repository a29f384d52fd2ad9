"""core/v1 ReplicationControllers: served with status and scale, in discovery, applied with
`kubectl apply`, and their pods kept at `spec.replicas` by the replication manager (the
ReplicaSet controller behind an adapter, as in kube-controller-manager)."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pytest

from kubesim.process import SimProcess

pytestmark = [pytest.mark.kubectl]

MANIFEST = """
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {mode: fast}
---
apiVersion: v1
kind: ReplicationController
metadata: {name: web}
spec:
  replicas: 3
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx, command: [sleep, "3600"]}]
"""


def _wait(sim: SimProcess, ns: str, what: str, check: Any) -> Any:
    last: Any = None
    for _ in range(400):
        last = json.loads(sim.kubectl("get", "-n", ns, what, "-o", "json").stdout)
        if check(last):
            return last
        time.sleep(0.05)
    raise AssertionError(f"{what}: {last}")


def _pods(sim: SimProcess, ns: str, n: int) -> list[dict[str, Any]]:
    def check(listed: dict[str, Any]) -> bool:
        live = [p for p in listed["items"] if not p["metadata"].get("deletionTimestamp")]
        return len(live) == n

    items = _wait(sim, ns, "pods", check)["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def test_replication_controller_is_served_applied_and_managed(sim: SimProcess) -> None:
    resources = sim.kubectl("api-resources", "--api-group=", "-o", "name").stdout.split()
    assert "replicationcontrollers" in resources
    ns = f"rc-{uuid.uuid4().hex[:8]}"
    sim.kubectl("create", "namespace", ns)
    out = sim.kubectl("apply", "-n", ns, "-f", "-", input=MANIFEST).stdout
    assert out.splitlines() == ["configmap/settings created", "replicationcontroller/web created"]
    rc = json.loads(sim.kubectl("get", "-n", ns, "rc", "web", "-o", "json").stdout)
    assert rc["spec"]["selector"] == {"app": "web"}  # defaulted from the template
    assert rc["metadata"]["labels"] == {"app": "web"}
    pods = _pods(sim, ns, 3)
    for pod in pods:
        (ref,) = pod["metadata"]["ownerReferences"]
        assert (ref["apiVersion"], ref["kind"], ref["name"], ref["controller"]) == (
            "v1",
            "ReplicationController",
            "web",
            True,
        )
    _wait(sim, ns, "rc/web", lambda o: (o.get("status") or {}).get("readyReplicas") == 3)
    table = sim.kubectl("get", "-n", ns, "rc", "web").stdout.splitlines()
    assert table[0].split() == ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]
    assert table[1].split()[:4] == ["web", "3", "3", "3"]

    assert sim.kubectl("scale", "-n", ns, "rc/web", "--replicas=1").stdout.strip() == (
        "replicationcontroller/web scaled"
    )
    _pods(sim, ns, 1)
    scale = json.loads(
        sim.kubectl(
            "get", "--raw", f"/api/v1/namespaces/{ns}/replicationcontrollers/web/scale"
        ).stdout
    )
    assert scale["spec"]["replicas"] == 1 and scale["status"]["selector"] == "app=web"
    # Applying the file again restores its 3 replicas; deleting it removes the pods too.
    again = sim.kubectl("apply", "-n", ns, "-f", "-", input=MANIFEST).stdout
    assert "replicationcontroller/web configured" in again
    _pods(sim, ns, 3)
    sim.kubectl("delete", "-n", ns, "rc", "web")
    _pods(sim, ns, 0)


def test_replication_controller_template_is_validated(sim: SimProcess) -> None:
    ns = f"rc-{uuid.uuid4().hex[:8]}"
    sim.kubectl("create", "namespace", ns)
    bad = MANIFEST.split("---")[1].replace("replicas: 3", "replicas: 1\n  selector: {app: other}")
    result = sim.kubectl("apply", "-n", ns, "-f", "-", input=bad, check=False)
    assert result.returncode == 1
    assert (
        'The ReplicationController "web" is invalid: spec.template.metadata.labels: Invalid '
        'value: map[string]string{"app":"web"}: `selector` does not match template `labels`'
    ) in result.stderr
