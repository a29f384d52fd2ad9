"""Deployments, ReplicaSets, Endpoints, PodDisruptionBudgets, `kubectl drain` and webhooks
reached through their Service, against a `jobset sim` process through the real kubectl.

Rollouts are observed through `kubectl get pods --watch`: the assertions are on what every
observed state satisfies (surge and unavailability bounds, Recreate's order), not timings.
"""

from __future__ import annotations

import base64
import http.server
import json
import os
import ssl
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from kubesim.apiserver import certs
from kubesim.process import SimProcess, start_sim
from tests.eventually import eventually_sync

pytestmark = [pytest.mark.kubectl]

T = TypeVar("T")


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    s = start_sim(
        tmp_path_factory.mktemp("workloads"),
        "--sim-level", "pods", "--nodes", "3", "--time-scale", "0.05",
    )  # fmt: skip
    yield s
    s.stop()


def _ns(sim: SimProcess) -> str:
    name = f"w-{uuid.uuid4().hex[:8]}"
    sim.kubectl("create", "namespace", name)
    return name


def get(sim: SimProcess, *args: str) -> Any:
    return json.loads(sim.kubectl("get", *args, "-o", "json").stdout)


def deployment(name: str, ns: str, replicas: int, image: str = "nginx:1.25", **spec: Any) -> str:
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {"name": "web", "image": image,
                         "ports": [{"name": "http", "containerPort": 8080}]}
                    ]
                },
            },
            **spec,
        },
    }  # fmt: skip
    return json.dumps(body)


class PodWatch:
    """`kubectl get pods -l app=NAME --watch --output-watch-events -o json`, collected."""

    def __init__(self, sim: SimProcess, ns: str, app: str) -> None:
        env = {**os.environ, "KUBECONFIG": str(sim.kubeconfig)}
        self.proc = subprocess.Popen(
            ["kubectl", "get", "pods", "-n", ns, "-l", f"app={app}", "--watch",
             "--output-watch-events", "-o", "json"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
        )  # fmt: skip
        self.events: list[dict[str, Any]] = []
        self._buf = ""
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        decoder = json.JSONDecoder()
        for line in self.proc.stdout:
            self._buf += line
            while True:
                text = self._buf.lstrip()
                try:
                    obj, end = decoder.raw_decode(text)
                except json.JSONDecodeError:
                    break
                self.events.append(obj)
                self._buf = text[end:]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)

    def states(self, initial: set[str]) -> Iterator[dict[str, dict[str, Any]]]:
        """The pods after each event, from the moment all `initial` pods have been listed."""
        pods: dict[str, dict[str, Any]] = {}
        started = False
        for ev in list(self.events):
            obj = ev["object"]
            name = obj["metadata"]["name"]
            if ev["type"] == "DELETED":
                pods.pop(name, None)
            else:
                pods[name] = obj
            started = started or initial <= set(pods)
            if started:
                yield pods


def active(pods: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        p
        for p in pods.values()
        if not p["metadata"].get("deletionTimestamp")
        and p.get("status", {}).get("phase") not in ("Succeeded", "Failed")
    ]


def ready(pod: dict[str, Any]) -> bool:
    return any(
        c["type"] == "Ready" and c["status"] == "True"
        for c in pod.get("status", {}).get("conditions") or []
    )


def pod_names(sim: SimProcess, ns: str, app: str) -> set[str]:
    return {p["metadata"]["name"] for p in get(sim, "pods", "-n", ns, "-l", f"app={app}")["items"]}


# ------------------------------------------------------------------------- Deployments


def test_rolling_update_history_undo_restart(sim: SimProcess) -> None:
    ns = _ns(sim)
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    sim.kubectl("apply", "-f", "-", input=deployment("web", ns, 4, strategy=strategy))
    out = sim.kubectl("rollout", "status", "deployment/web", "-n", ns, "--timeout=60s").stdout
    assert 'deployment "web" successfully rolled out' in out
    d = get(sim, "deployment", "web", "-n", ns)
    status = d["status"]
    assert (status["replicas"], status["updatedReplicas"], status["readyReplicas"],
            status["availableReplicas"]) == (4, 4, 4, 4)  # fmt: skip
    assert status["observedGeneration"] == d["metadata"]["generation"]
    conds = {c["type"]: c["reason"] for c in status["conditions"]}
    assert conds == {
        "Available": "MinimumReplicasAvailable",
        "Progressing": "NewReplicaSetAvailable",
    }
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    (rs1,) = get(sim, "rs", "-n", ns)["items"]
    pod_hash = rs1["metadata"]["labels"]["pod-template-hash"]
    assert rs1["metadata"]["name"] == f"web-{pod_hash}"
    assert rs1["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": pod_hash}
    assert rs1["metadata"]["ownerReferences"][0]["controller"] is True
    for p in get(sim, "pods", "-n", ns, "-l", "app=web")["items"]:
        (ref,) = p["metadata"]["ownerReferences"]
        assert (ref["kind"], ref["name"], ref["controller"]) == (
            "ReplicaSet",
            rs1["metadata"]["name"],
            True,
        )
        assert p["metadata"]["labels"]["pod-template-hash"] == pod_hash

    # A new image: 4 replicas, at most 5 pods, never fewer than 4 ready ones.
    first = pod_names(sim, ns, "web")
    watch = PodWatch(sim, ns, "web")
    try:
        eventually_sync(lambda: first <= {e["object"]["metadata"]["name"] for e in watch.events})
        sim.kubectl("set", "image", "deployment/web", "web=nginx:1.26", "-n", ns)
        sim.kubectl("rollout", "status", "deployment/web", "-n", ns, "--timeout=60s")
        eventually_sync(lambda: {e["object"]["metadata"]["name"] for e in watch.events
                            if e["type"] == "DELETED"} >= first)  # fmt: skip
    finally:
        watch.stop()
    seen = 0
    for pods in watch.states(first):
        now = active(pods)
        assert len(now) <= 5, [p["metadata"]["name"] for p in now]
        assert sum(1 for p in now if ready(p)) >= 4
        seen += 1
    assert seen > 8
    assert not (pod_names(sim, ns, "web") & first)

    history = sim.kubectl("rollout", "history", "deployment/web", "-n", ns).stdout
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["1", "2"]
    rev1 = sim.kubectl("rollout", "history", "deployment/web", "-n", ns, "--revision=1").stdout
    assert "nginx:1.25" in rev1

    # undo: the first ReplicaSet comes back as revision 3.
    sim.kubectl("rollout", "undo", "deployment/web", "-n", ns)
    sim.kubectl("rollout", "status", "deployment/web", "-n", ns, "--timeout=60s")
    d = get(sim, "deployment", "web", "-n", ns)
    assert d["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.25"
    rs = {r["metadata"]["name"]: r for r in get(sim, "rs", "-n", ns)["items"]}
    assert len(rs) == 2
    back = rs[rs1["metadata"]["name"]]
    ann = back["metadata"]["annotations"]
    assert ann["deployment.kubernetes.io/revision"] == "3"
    assert ann["deployment.kubernetes.io/revision-history"] == "1"
    assert back["spec"]["replicas"] == 4 and back["status"]["availableReplicas"] == 4

    # restart: a template annotation, a new ReplicaSet, every pod replaced.
    before = pod_names(sim, ns, "web")
    sim.kubectl("rollout", "restart", "deployment/web", "-n", ns)
    sim.kubectl("rollout", "status", "deployment/web", "-n", ns, "--timeout=60s")
    d = get(sim, "deployment", "web", "-n", ns)
    assert "kubectl.kubernetes.io/restartedAt" in d["spec"]["template"]["metadata"]["annotations"]
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "4"
    eventually_sync(
        lambda: len(pod_names(sim, ns, "web")) == 4 and not pod_names(sim, ns, "web") & before
    )
    history = sim.kubectl("rollout", "history", "deployment/web", "-n", ns).stdout
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["2", "3", "4"]


def test_revision_history_limit_and_scale(sim: SimProcess) -> None:
    ns = _ns(sim)
    sim.kubectl("apply", "-f", "-", input=deployment("lim", ns, 2, revisionHistoryLimit=1))
    for tag in ("1", "2", "3"):
        sim.kubectl("set", "image", "deployment/lim", f"web=nginx:{tag}", "-n", ns)
        sim.kubectl("rollout", "status", "deployment/lim", "-n", ns, "--timeout=60s")
    eventually_sync(lambda: len(get(sim, "rs", "-n", ns)["items"]) == 2)  # the current one plus 1
    sim.kubectl("scale", "deployment/lim", "--replicas=5", "-n", ns)
    sim.kubectl("rollout", "status", "deployment/lim", "-n", ns, "--timeout=60s")
    eventually_sync(
        lambda: get(sim, "deployment", "lim", "-n", ns)["status"]["availableReplicas"] == 5
    )
    table = sim.kubectl("get", "deployment", "lim", "-n", ns).stdout
    assert "5/5" in table


def test_recreate_replaces_all_pods_before_starting_new_ones(sim: SimProcess) -> None:
    ns = _ns(sim)
    sim.kubectl("apply", "-f", "-", input=deployment("rec", ns, 3, strategy={"type": "Recreate"}))
    sim.kubectl("rollout", "status", "deployment/rec", "-n", ns, "--timeout=60s")
    first = pod_names(sim, ns, "rec")
    watch = PodWatch(sim, ns, "rec")
    try:
        eventually_sync(lambda: first <= {e["object"]["metadata"]["name"] for e in watch.events})
        sim.kubectl("set", "image", "deployment/rec", "web=nginx:2", "-n", ns)
        sim.kubectl("rollout", "status", "deployment/rec", "-n", ns, "--timeout=60s")
        eventually_sync(lambda: len({e["object"]["metadata"]["name"] for e in watch.events}) >= 6)
    finally:
        watch.stop()
    gone: set[str] = set()
    for ev in watch.events:
        name = ev["object"]["metadata"]["name"]
        if ev["type"] == "DELETED":
            gone.add(name)
        elif name not in first:
            assert gone >= first, f"{name} appeared while old pods remained: {first - gone}"
    assert len(pod_names(sim, ns, "rec") - first) == 3


def test_replicaset_adopts_orphans_and_replaces_deleted_pods(sim: SimProcess) -> None:
    ns = _ns(sim)
    orphan = {"apiVersion": "v1", "kind": "Pod",
              "metadata": {"name": "stray", "namespace": ns, "labels": {"app": "rs"}},
              "spec": {"containers": [{"name": "c", "image": "busybox"}]}}  # fmt: skip
    sim.kubectl("apply", "-f", "-", input=json.dumps(orphan))
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
          "metadata": {"name": "rs", "namespace": ns},
          "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "rs"}},
                   "template": {"metadata": {"labels": {"app": "rs"}},
                                "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}  # fmt: skip
    sim.kubectl("apply", "-f", "-", input=json.dumps(rs))
    eventually_sync(
        lambda: get(sim, "rs", "rs", "-n", ns).get("status", {}).get("readyReplicas") == 2
    )
    stray = get(sim, "pod", "stray", "-n", ns)
    assert stray["metadata"]["ownerReferences"][0]["name"] == "rs"  # adopted
    assert len(pod_names(sim, ns, "rs")) == 2  # so only one was created
    victim = sorted(pod_names(sim, ns, "rs"))[0]
    sim.kubectl("delete", "pod", victim, "-n", ns, "--wait=false")
    eventually_sync(lambda: len(pod_names(sim, ns, "rs") - {victim}) == 2)
    # Relabelled: released, and replaced.
    sim.kubectl("label", "pod", "stray", "app=other", "--overwrite", "-n", ns)
    eventually_sync(
        lambda: not get(sim, "pod", "stray", "-n", ns)["metadata"].get("ownerReferences")
    )
    eventually_sync(lambda: len(pod_names(sim, ns, "rs")) == 2)


# ------------------------------------------------------------------------- Endpoints


def test_endpoints_and_slices_follow_readiness(sim: SimProcess) -> None:
    ns = _ns(sim)
    sim.kubectl("apply", "-f", "-", input=deployment("ep", ns, 2))
    crashing = {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "crash", "namespace": ns, "labels": {"app": "ep"}},
                "spec": {"containers": [{"name": "web", "image": "busybox", "command": ["sh", "-c", "exit 1"],
                                         "ports": [{"name": "http", "containerPort": 8080}]}]}}  # fmt: skip
    sim.kubectl("apply", "-f", "-", input=json.dumps(crashing))
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ep", "namespace": ns},
           "spec": {"selector": {"app": "ep"}, "ports": [{"name": "web", "port": 80, "targetPort": "http"}]}}  # fmt: skip
    sim.kubectl("apply", "-f", "-", input=json.dumps(svc))

    def subsets() -> tuple[int, int] | None:
        ep = get(sim, "endpoints", "ep", "-n", ns)
        (subset,) = ep.get("subsets") or [{}]
        got = (len(subset.get("addresses") or []), len(subset.get("notReadyAddresses") or []))
        return got if got == (2, 1) else None

    eventually_sync(subsets)
    ep = get(sim, "endpoints", "ep", "-n", ns)
    assert ep["subsets"][0]["ports"] == [{"name": "web", "port": 8080, "protocol": "TCP"}]
    assert {a["targetRef"]["name"] for a in ep["subsets"][0]["notReadyAddresses"]} == {"crash"}
    (sl,) = get(sim, "endpointslices", "-n", ns, "-l", "kubernetes.io/service-name=ep")["items"]
    assert sl["addressType"] == "IPv4" and sl["ports"] == [
        {"name": "web", "port": 8080, "protocol": "TCP"}
    ]
    assert sl["metadata"]["ownerReferences"][0]["kind"] == "Service"
    assert sorted(e["conditions"]["ready"] for e in sl["endpoints"]) == [False, True, True]
    assert "8080" in sim.kubectl("get", "endpoints", "ep", "-n", ns).stdout

    sim.kubectl("delete", "pod", "crash", "-n", ns)
    sim.kubectl("scale", "deployment/ep", "--replicas=3", "-n", ns)

    def three() -> bool:
        (subset,) = get(sim, "endpoints", "ep", "-n", ns).get("subsets") or [{}]
        return len(subset.get("addresses") or []) == 3 and not subset.get("notReadyAddresses")

    eventually_sync(three)
    sim.kubectl("scale", "deployment/ep", "--replicas=0", "-n", ns)
    eventually_sync(lambda: not get(sim, "endpoints", "ep", "-n", ns).get("subsets"))
    eventually_sync(
        lambda: get(sim, "endpointslices", "-n", ns)["items"][0]["endpoints"] in (None, [])
    )
    sim.kubectl("delete", "service", "ep", "-n", ns)
    eventually_sync(lambda: not get(sim, "endpoints", "-n", ns)["items"])


# ------------------------------------------------------------------------- PDBs and drain


def _raw_post(sim: SimProcess, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    import urllib.error
    import urllib.request

    import yaml

    cfg = yaml.safe_load(sim.kubeconfig.read_text())
    cluster = cfg["clusters"][0]["cluster"]
    token = cfg["users"][0]["user"]["token"]
    ctx = ssl.create_default_context(
        cadata=base64.b64decode(cluster["certificate-authority-data"]).decode()
    )
    request = urllib.request.Request(
        cluster["server"] + path, data=json.dumps(body).encode(), method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(request, context=ctx) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def _pdb(name: str, ns: str, **spec: Any) -> str:
    return json.dumps({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                       "metadata": {"name": name, "namespace": ns},
                       "spec": {"selector": {"matchLabels": {"app": name}}, **spec}})  # fmt: skip


def test_pdb_status_and_eviction_429(sim: SimProcess) -> None:
    ns = _ns(sim)
    sim.kubectl("apply", "-f", "-", input=deployment("pdb", ns, 2))
    sim.kubectl("rollout", "status", "deployment/pdb", "-n", ns, "--timeout=60s")
    sim.kubectl("apply", "-f", "-", input=_pdb("pdb", ns, maxUnavailable=0))
    status = eventually_sync(
        lambda: get(sim, "pdb", "pdb", "-n", ns).get("status", {}).get("observedGeneration") and
        get(sim, "pdb", "pdb", "-n", ns)["status"]
    )  # fmt: skip
    assert (status["currentHealthy"], status["desiredHealthy"], status["expectedPods"],
            status["disruptionsAllowed"]) == (2, 2, 2, 0)  # fmt: skip
    victim = sorted(pod_names(sim, ns, "pdb"))[0]
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": victim, "namespace": ns},
    }
    code, answer = _raw_post(sim, f"/api/v1/namespaces/{ns}/pods/{victim}/eviction", eviction)
    assert code == 429 and answer["reason"] == "TooManyRequests"
    assert answer["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert answer["details"]["causes"] == [
        {
            "reason": "DisruptionBudget",
            "message": "The disruption budget pdb needs 2 healthy pods and has 2 currently",
        }
    ]
    assert victim in pod_names(sim, ns, "pdb")
    sim.kubectl(
        "patch", "pdb", "pdb", "-n", ns, "--type=merge", "-p", '{"spec": {"maxUnavailable": 1}}'
    )
    eventually_sync(lambda: get(sim, "pdb", "pdb", "-n", ns)["status"]["disruptionsAllowed"] == 1)
    code, answer = _raw_post(sim, f"/api/v1/namespaces/{ns}/pods/{victim}/eviction", eviction)
    assert code == 201 and answer["status"] == "Success"
    eventually_sync(
        lambda: victim not in pod_names(sim, ns, "pdb") and len(pod_names(sim, ns, "pdb")) == 2
    )
    table = sim.kubectl("get", "pdb", "-n", ns).stdout
    assert "MAX UNAVAILABLE" in table and "ALLOWED DISRUPTIONS" in table


def test_drain_respects_the_pdb_and_uncordon(sim: SimProcess) -> None:
    ns = _ns(sim)
    volumes = [{"name": "scratch", "emptyDir": {}}]
    body = json.loads(deployment("drain", ns, 3))
    body["spec"]["template"]["spec"]["volumes"] = volumes
    sim.kubectl("apply", "-f", "-", input=json.dumps(body))
    sim.kubectl("rollout", "status", "deployment/drain", "-n", ns, "--timeout=60s")
    sim.kubectl("apply", "-f", "-", input=_pdb("drain", ns, minAvailable=3))
    eventually_sync(
        lambda: get(sim, "pdb", "drain", "-n", ns).get("status", {}).get("expectedPods") == 3
    )
    pods = get(sim, "pods", "-n", ns, "-l", "app=drain")["items"]
    # A node without pods that declare no controller (other tests of this module leave some,
    # e.g. the ReplicaSet test's released `stray`): drain refuses those before any eviction.
    bare = {p["spec"].get("nodeName") for p in get(sim, "pods", "-A")["items"]
            if not p["metadata"].get("ownerReferences")}  # fmt: skip
    node = next(p["spec"]["nodeName"] for p in pods if p["spec"]["nodeName"] not in bare)
    on_node = {p["metadata"]["name"] for p in pods if p["spec"]["nodeName"] == node}
    blocked = sim.kubectl(
        "drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=3s", check=False
    )
    assert blocked.returncode != 0
    assert "Cannot evict pod as it would violate the pod's disruption budget" in blocked.stderr
    assert get(sim, "node", node)["spec"]["unschedulable"] is True
    assert on_node <= pod_names(sim, ns, "drain")

    sim.kubectl(
        "patch", "pdb", "drain", "-n", ns, "--type=merge", "-p", '{"spec": {"minAvailable": 2}}'
    )
    done = sim.kubectl(
        "drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=60s"
    )
    assert f"node/{node} drained" in done.stdout
    assert not on_node & pod_names(sim, ns, "drain")
    sim.kubectl("rollout", "status", "deployment/drain", "-n", ns, "--timeout=60s")
    assert all(
        p["spec"]["nodeName"] != node
        for p in get(sim, "pods", "-n", ns, "-l", "app=drain")["items"]
    )
    sim.kubectl("uncordon", node)
    assert not get(sim, "node", node)["spec"].get("unschedulable")


# ------------------------------------------------------------------------- webhooks


class _Denier(http.server.BaseHTTPRequestHandler):
    calls: list[str] = []

    def do_POST(self) -> None:
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Denier.calls.append(review["request"]["name"])
        answer = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                  "response": {"uid": review["request"]["uid"], "allowed": False,
                               "status": {"message": "denied by the pod behind the service"}}}  # fmt: skip
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_webhook_through_service_endpoints(sim: SimProcess, tmp_path: Path) -> None:
    ns = _ns(sim)
    ca, ca_key = certs.make_ca("hooks-ca")
    cert, key = certs.make_serving_cert(ca, ca_key, [f"hooks.{ns}.svc"])
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Denier)
    server.socket = certs.server_ssl_context(cert, key).wrap_socket(server.socket, server_side=True)
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "hooks", "namespace": ns},
           "spec": {"selector": {"app": "hooks"}, "ports": [{"port": 443, "targetPort": port}]}}  # fmt: skip
    sim.kubectl("apply", "-f", "-", input=json.dumps(svc))
    hook_name = f"deny.{ns}.example.com"
    config = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
              "metadata": {"name": ns},
              "webhooks": [{"name": hook_name, "admissionReviewVersions": ["v1"], "sideEffects": "None",
                            "failurePolicy": "Fail",
                            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                            "objectSelector": {"matchLabels": {"hooked": "yes"}},
                            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                       "resources": ["configmaps"]}],
                            "clientConfig": {"service": {"name": "hooks", "namespace": ns, "path": "/v"},
                                             "caBundle": base64.b64encode(ca).decode()}}]}  # fmt: skip
    sim.kubectl("apply", "-f", "-", input=json.dumps(config))
    sim.kubectl("label", "namespace", ns, f"kubernetes.io/metadata.name={ns}", "--overwrite")

    def create(name: str) -> subprocess.CompletedProcess[str]:
        return sim.kubectl("create", "configmap", name, "-n", ns, check=False, input=None)

    def labelled(name: str) -> subprocess.CompletedProcess[str]:
        cm = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": name, "namespace": ns, "labels": {"hooked": "yes"}}}  # fmt: skip
        return sim.kubectl("create", "-f", "-", input=json.dumps(cm), check=False)

    eventually_sync(lambda: get(sim, "endpoints", "hooks", "-n", ns))
    failed = labelled("a")
    assert failed.returncode != 0
    assert (
        f'failed calling webhook "{hook_name}": failed to call webhook: Post '
        f'"https://hooks.{ns}.svc:443/v?timeout=10s": no endpoints available for service "hooks"'
        in failed.stderr
    )
    assert create("unlabelled").returncode == 0

    patch = [{"op": "replace", "path": "/webhooks/0/failurePolicy", "value": "Ignore"}]
    sim.kubectl(
        "patch", "validatingwebhookconfiguration", ns, "--type=json", "-p", json.dumps(patch)
    )
    assert labelled("b").returncode == 0  # Ignore: admitted without the webhook
    assert _Denier.calls == []

    # Ready (simulated) pods behind the Service: the call reaches the host at targetPort.
    sim.kubectl("apply", "-f", "-", input=deployment("hooks", ns, 1))
    sim.kubectl("rollout", "status", "deployment/hooks", "-n", ns, "--timeout=60s")
    eventually_sync(
        lambda: (get(sim, "endpoints", "hooks", "-n", ns).get("subsets") or [{}])[0].get(
            "addresses"
        )
    )
    denied = labelled("c")
    assert denied.returncode != 0
    assert (
        f'admission webhook "{hook_name}" denied the request: denied by the pod behind the service'
        in denied.stderr
    )
    assert _Denier.calls == ["c"]

    sim.kubectl("scale", "deployment/hooks", "--replicas=0", "-n", ns)
    eventually_sync(lambda: not get(sim, "endpoints", "hooks", "-n", ns).get("subsets"))
    assert labelled("d").returncode == 0  # Ignore again
    sim.kubectl("delete", "validatingwebhookconfiguration", ns)
    server.shutdown()
