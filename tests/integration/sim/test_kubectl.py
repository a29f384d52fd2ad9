"""The real kubectl, with default flags, against a running `jobset sim`."""

from __future__ import annotations

import json
import subprocess
import time
import uuid

import pytest

from kubesim.process import SimProcess

pytestmark = [pytest.mark.kubectl]


def _ns(sim: SimProcess) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    sim.kubectl(
        "apply", "-f", "-", input=f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n"
    )
    return name


CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget, shortNames: [gd]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    - {name: Ready, type: string, jsonPath: '.status.conditions[?(@.type=="Ready")].status'}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: What the gadget should be.
            properties:
              size: {type: integer, default: 3, description: How many parts the gadget has.}
              color: {type: string, enum: [red, blue]}
          status:
            type: object
            properties:
              conditions:
                type: array
                items:
                  type: object
                  properties:
                    type: {type: string}
                    status: {type: string}
"""


def test_cluster_info_and_api_resources(sim: SimProcess) -> None:
    out = sim.kubectl("cluster-info").stdout
    assert "is running at" in out and sim.url in out
    resources = sim.kubectl("api-resources").stdout
    for line in ("pods ", "jobs ", "customresourcedefinitions", "leases", "events"):
        assert line in resources
    assert "po " in resources  # short names come from discovery


def test_apply_create_and_change(sim: SimProcess) -> None:
    ns = _ns(sim)
    manifest = f"""\
apiVersion: v1
kind: ConfigMap
metadata: {{name: settings, namespace: {ns}, labels: {{tier: web}}}}
data: {{mode: fast}}
---
apiVersion: batch/v1
kind: Job
metadata: {{name: once, namespace: {ns}}}
spec:
  suspend: true
  template:
    spec:
      restartPolicy: Never
      containers: [{{name: c, image: busybox, command: [sleep, "1s"]}}]
"""
    out = sim.kubectl("apply", "-f", "-", input=manifest).stdout
    assert "configmap/settings created" in out and "job.batch/once created" in out
    out = sim.kubectl("apply", "-f", "-", input=manifest).stdout
    assert "configmap/settings unchanged" in out
    changed = manifest.replace("mode: fast", "mode: slow")
    out = sim.kubectl("apply", "-f", "-", input=changed).stdout
    assert "configmap/settings configured" in out
    got = json.loads(sim.kubectl("get", "cm", "settings", "-n", ns, "-o", "json").stdout)
    assert got["data"] == {"mode": "slow"}
    job = json.loads(sim.kubectl("get", "job", "once", "-n", ns, "-o", "json").stdout)
    assert job["spec"]["suspend"] is True
    assert job["spec"]["template"]["metadata"]["labels"]["batch.kubernetes.io/job-name"] == "once"


def test_server_side_apply(sim: SimProcess) -> None:
    ns = _ns(sim)
    cm = f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: ssa, namespace: {ns}}}\ndata: {{a: '1', b: '2'}}\n"
    out = sim.kubectl("apply", "--server-side", "-f", "-", input=cm).stdout
    assert "serverside-applied" in out
    smaller = cm.replace(", b: '2'", "")
    sim.kubectl("apply", "--server-side", "-f", "-", input=smaller)
    got = json.loads(
        sim.kubectl("get", "cm", "ssa", "-n", ns, "-o", "json", "--show-managed-fields").stdout
    )
    assert got["data"] == {"a": "1"}  # a field the manager stopped applying is removed
    managers = {m["manager"] for m in got["metadata"]["managedFields"]}
    assert "kubectl" in managers


def test_get_tables_json_jsonpath_selectors(sim: SimProcess) -> None:
    ns = _ns(sim)
    for name, tier in (("a", "web"), ("b", "db"), ("c", "web")):
        sim.kubectl(
            "apply",
            "-f",
            "-",
            input=f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: {ns}, "
            f"labels: {{tier: {tier}}}}}\ndata: {{k: v}}\n",
        )
    table = sim.kubectl("get", "cm", "-n", ns).stdout.splitlines()
    assert table[0].split() == ["NAME", "DATA", "AGE"]
    assert [line.split()[0] for line in table[1:]] == ["a", "b", "c"]
    web = sim.kubectl(
        "get", "cm", "-n", ns, "-l", "tier=web", "-o", "jsonpath={.items[*].metadata.name}"
    )
    assert web.stdout.split() == ["a", "c"]
    notweb = sim.kubectl(
        "get", "cm", "-n", ns, "-l", "tier notin (web)", "-o", "name"
    ).stdout.split()
    assert notweb == ["configmap/b"]
    by_name = sim.kubectl(
        "get", "cm", "-n", ns, "--field-selector", "metadata.name=b", "-o", "json"
    )
    assert [i["metadata"]["name"] for i in json.loads(by_name.stdout)["items"]] == ["b"]
    bad = sim.kubectl("get", "cm", "-n", ns, "--field-selector", "data.k=v", check=False)
    assert bad.returncode != 0 and "field label not supported" in bad.stderr
    nodes = sim.kubectl("get", "nodes").stdout.splitlines()
    assert nodes[0].split()[:3] == ["NAME", "STATUS", "ROLES"] and "Ready" in nodes[1]


def test_get_watch_sees_update(sim: SimProcess) -> None:
    ns = _ns(sim)
    sim.kubectl(
        "apply",
        "-f",
        "-",
        input=f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: w, namespace: {ns}}}\ndata: {{count: '1'}}\n",
    )
    import os

    env = {**os.environ, "KUBECONFIG": str(sim.kubeconfig)}
    watcher = subprocess.Popen(
        ["kubectl", "get", "cm", "w", "-n", ns, "-w", "-o", 'jsonpath={.data.count}{"\\n"}'],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        time.sleep(1.5)
        sim.kubectl("patch", "cm", "w", "-n", ns, "--type", "merge", "-p", '{"data":{"count":"2"}}')
        time.sleep(1.5)
    finally:
        watcher.terminate()
        out, _ = watcher.communicate(timeout=10)
    assert out.split() == ["1", "2"]


def test_patch_types_and_status_subresource(sim: SimProcess) -> None:
    ns = _ns(sim)
    sim.kubectl("apply", "-f", "-", input=CRD)
    sim.kubectl("wait", "--for=condition=Established", "crd/gadgets.example.com", "--timeout=30s")
    sim.kubectl(
        "apply",
        "-f",
        "-",
        input=f"apiVersion: example.com/v1\nkind: Gadget\nmetadata: {{name: g, namespace: {ns}}}\nspec: {{color: red}}\n",
    )
    sim.kubectl(
        "patch", "gadget", "g", "-n", ns, "--type", "merge", "-p", '{"spec":{"color":"blue"}}'
    )
    sim.kubectl(
        "patch",
        "gadget",
        "g",
        "-n",
        ns,
        "--type",
        "json",
        "-p",
        '[{"op":"replace","path":"/spec/size","value":7}]',
    )
    sim.kubectl(
        "patch",
        "gadget",
        "g",
        "-n",
        ns,
        "--subresource=status",
        "--type",
        "merge",
        "-p",
        '{"status":{"conditions":[{"type":"Ready","status":"True"}]}}',
    )
    g = json.loads(sim.kubectl("get", "gadget", "g", "-n", ns, "-o", "json").stdout)
    assert g["spec"] == {"color": "blue", "size": 7}
    assert g["status"]["conditions"][0]["status"] == "True"
    assert g["metadata"]["generation"] == 3  # two spec changes; the status write does not count
    table = sim.kubectl("get", "gd", "-n", ns).stdout.splitlines()
    assert table[0].split() == ["NAME", "SIZE", "READY"] and table[1].split() == ["g", "7", "True"]
    # strategic merge patch on a built-in merges lists by their merge key
    sim.kubectl(
        "apply",
        "-f",
        "-",
        input=f"""apiVersion: v1
kind: Pod
metadata: {{name: p, namespace: {ns}}}
spec:
  schedulingGates: [{{name: hold}}]
  containers:
  - {{name: a, image: busybox, env: [{{name: X, value: "1"}}]}}
  - {{name: b, image: busybox}}
""",
    )
    sim.kubectl(
        "patch",
        "pod",
        "p",
        "-n",
        ns,
        "--type",
        "strategic",
        "-p",
        '{"spec":{"containers":[{"name":"b","image":"busybox:1.36"}]}}',
    )
    pod = json.loads(sim.kubectl("get", "pod", "p", "-n", ns, "-o", "json").stdout)
    assert [c["name"] for c in pod["spec"]["containers"]] == ["a", "b"]
    assert pod["spec"]["containers"][1]["image"] == "busybox:1.36"
    assert pod["spec"]["containers"][0]["env"] == [{"name": "X", "value": "1"}]
    smp_crd = sim.kubectl(
        "patch", "gadget", "g", "-n", ns, "--type", "strategic", "-p", "{}", check=False
    )
    assert smp_crd.returncode != 0


def test_explain_crd_fields(sim: SimProcess) -> None:
    sim.kubectl("apply", "-f", "-", input=CRD)
    sim.kubectl("wait", "--for=condition=Established", "crd/gadgets.example.com", "--timeout=30s")
    out = sim.kubectl("explain", "gadget.spec").stdout
    assert "What the gadget should be." in out
    assert "size" in out and "How many parts the gadget has." in out
    assert "red, blue" in out


def test_wait_job_complete_logs_and_pods_on_nodes(sim: SimProcess) -> None:
    ns = _ns(sim)
    sim.kubectl(
        "apply",
        "-f",
        "-",
        input=f"""apiVersion: batch/v1
kind: Job
metadata: {{name: hello, namespace: {ns}}}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: ["bash", "-c", "echo hello world; sleep 2s; exit 0"]
""",
    )
    sim.kubectl(
        "wait", "--for=condition=complete", "job/hello", "-n", ns, "--timeout=60s", timeout=90
    )
    pods = json.loads(
        sim.kubectl("get", "pods", "-n", ns, "-l", "job-name=hello", "-o", "json").stdout
    )
    assert len(pods["items"]) == 1 and pods["items"][0]["spec"]["nodeName"]
    logs = sim.kubectl("logs", pods["items"][0]["metadata"]["name"], "-n", ns).stdout
    assert "hello world" in logs


def test_delete_job_foreground_removes_pods_first(sim: SimProcess) -> None:
    ns = _ns(sim)
    sim.kubectl(
        "apply",
        "-f",
        "-",
        input=f"""apiVersion: batch/v1
kind: Job
metadata: {{name: long, namespace: {ns}}}
spec:
  parallelism: 3
  completions: 3
  template:
    spec:
      restartPolicy: Never
      containers: [{{name: c, image: busybox, command: [sleep, "infinity"]}}]
""",
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        names = sim.kubectl(
            "get", "pods", "-n", ns, "-l", "job-name=long", "-o", "name"
        ).stdout.split()
        if len(names) == 3:
            break
        time.sleep(0.3)
    assert len(names) == 3
    sim.kubectl(
        "delete", "job", "long", "-n", ns, "--cascade=foreground", "--wait=true", timeout=60
    )
    assert (
        sim.kubectl("get", "pods", "-n", ns, "-l", "job-name=long", "-o", "name").stdout.split()
        == []
    )
    # Deleting without a policy through the API orphans a Job's pods, as in Kubernetes.
    sim.kubectl(
        "apply",
        "-f",
        "-",
        input=f"""apiVersion: batch/v1
kind: Job
metadata: {{name: orphaner, namespace: {ns}}}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{{name: c, image: busybox, command: [sleep, "infinity"]}}]
""",
    )
    deadline = time.monotonic() + 30
    while (
        time.monotonic() < deadline
        and not sim.kubectl("get", "pods", "-n", ns, "-o", "name").stdout.strip()
    ):
        time.sleep(0.3)
    sim.kubectl("get", "--raw", f"/apis/batch/v1/namespaces/{ns}/jobs/orphaner")
    # `--raw` sends a DELETE with no body: no propagation policy at all.
    raw = sim.kubectl(
        "delete", "--raw", f"/apis/batch/v1/namespaces/{ns}/jobs/orphaner", check=False
    )
    assert raw.returncode == 0, raw.stderr
    time.sleep(1.0)
    pods = json.loads(sim.kubectl("get", "pods", "-n", ns, "-o", "json").stdout)["items"]
    assert len(pods) == 1 and not pods[0]["metadata"].get("ownerReferences")


@pytest.mark.parametrize("resource", ["configmaps", "jobs.batch"])
def test_unknown_object_is_not_found(sim: SimProcess, resource: str) -> None:
    out = sim.kubectl("get", resource, "does-not-exist", check=False)
    assert out.returncode != 0 and "NotFound" in out.stderr and "does-not-exist" in out.stderr
