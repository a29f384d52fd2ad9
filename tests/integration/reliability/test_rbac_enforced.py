"""The controller runs under exactly config/rbac - and under exactly the Helm chart's
rendered RBAC - enforced by the simulated cluster.

`jobset sim --sim-level pods` authorizes every request of a ServiceAccount token with RBAC
(src/kubesim/apiserver/rbac.py). A real `jobset controller` gets a token for the
`jobset-controller-manager` ServiceAccount (TokenRequest, as the kubelet mounts one) with
the RBAC objects applied as kustomize renders config/rbac or as Helm's engine renders
charts/jobset (the module runs once for each), and the webhooks installed as in
tests/integration/deploy/test_rbac.py. Then:

- everything works: the certificate Secret (shipped empty) is filled and the caBundle injected (readyz), a
  JobSet is admitted and runs to completion, exclusive placement puts each Job's pods in a
  node pool of its own, and the controller never meets a 403;
- no token (the controller's own, scrapers'), private key or certificate of the webhook
  Secret appears in the controller's log - DEBUG level, JSON for the kustomize run and
  console for the Helm run - or in any event, after admission, reconciles and scrapes of
  the secure metrics endpoint (allowed, refused and unauthenticated), whose certificate the
  internal management issued and the Secret's CA verifies for the metrics Service's name;
- without one rule it needs (creating Jobs), the API server answers 403 with
  kube-apiserver's message, and a new JobSet is stuck without Jobs until the rule is back.

The other half of least privilege - no rule the controller never uses - is proven by
tests/integration/deploy/test_rbac.py (`test_every_rule_is_used`).
"""

from __future__ import annotations

import base64
import json
import ssl
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from jobset.api import constants as c
from jobset.webhooks import manifests
from kubesim.process import SimProcess, start_sim
from tests import builders
from tests.integration.deploy import chart
from tests.integration.deploy.helpers import (
    CONFIG,
    CRD_FILE,
    Controller,
    apply,
    eventually,
    free_port,
    get_json,
    kustomize,
    leaked,
    scrape_secure,
)

pytestmark = [pytest.mark.timeout(400), pytest.mark.kubectl, pytest.mark.helm]
NAMESPACE = "jobset-system"
ACCOUNT = "jobset-controller-manager"
USER = f"system:serviceaccount:{NAMESPACE}:{ACCOUNT}"
NS = "team-a"
POOL = "cloud.google.com/gke-nodepool"
MANAGER_ROLE = "jobset-manager-role"
RBAC_KINDS = {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}


def rbac_objects(source: str) -> list[dict[str, Any]]:
    """The ServiceAccount, roles and bindings an install gives the controller."""
    if source == "kustomize":
        objs = kustomize(CONFIG / "rbac")
    else:  # the chart with default values, release "jobset" (the names match config/)
        objs = chart.objects(namespace=NAMESPACE)
    picked = [o for o in objs if o["kind"] in RBAC_KINDS]
    assert any(o["kind"] == "ServiceAccount" and o["metadata"]["name"] == ACCOUNT for o in picked)
    assert any(o["metadata"]["name"] == MANAGER_ROLE for o in picked)
    return picked


def jobset(
    name: str, exclusive: bool = False, replicas: int = 2, seconds: int = 2
) -> dict[str, Any]:
    env = {"SIM_DURATION": str(seconds), "SIM_EXIT_CODE": "0"}
    workers = builders.rjob("workers", replicas, parallelism=2, indexed=None, env=env)
    annotations = {c.EXCLUSIVE_KEY: POOL} if exclusive else None
    return builders.jobset(name, workers, namespace=NS, annotations=annotations)


def request_token(sim: SimProcess) -> str:
    """A TokenRequest for the ServiceAccount, in JSON (kubectl create token sends protobuf,
    which the simulated cluster does not decode for this kind)."""
    config = yaml.safe_load(Path(sim.kubeconfig).read_text())
    cluster = config["clusters"][0]["cluster"]
    ctx = ssl.create_default_context(
        cadata=base64.b64decode(cluster["certificate-authority-data"]).decode()
    )
    req = urllib.request.Request(
        f"{cluster['server']}/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{ACCOUNT}/token",
        data=json.dumps({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                         "spec": {"expirationSeconds": 3600}}).encode(),
        headers={"Authorization": f"Bearer {config['users'][0]['user']['token']}",
                 "Content-Type": "application/json"},
    )  # fmt: skip
    with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
        return str(json.loads(resp.read())["status"]["token"])


def completed(sim: SimProcess, name: str) -> bool:
    js = get_json(sim, "jobset", name, "-n", NS)
    return any(
        x.get("type") == "Completed" and x.get("status") == "True"
        for x in (js.get("status") or {}).get("conditions") or []
    )


@pytest.fixture(scope="module", params=["kustomize", "helm"])
def cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[SimProcess, Controller]]:
    tmp = tmp_path_factory.mktemp(f"rbac-enforced-{request.param}")
    sim = start_sim(tmp, "--sim-level", "pods", "--nodes", f"pools=4x2,label={POOL}")
    controller: Controller | None = None
    try:
        for ns in (NAMESPACE, NS):
            sim.kubectl("create", "namespace", ns)
        sim.kubectl("create", "-f", str(CRD_FILE))
        sim.kubectl("wait", "--for=condition=Established", "crd/jobsets.jobset.x-k8s.io")
        apply(sim, rbac_objects(request.param))
        port = free_port()
        # With the (empty) Secret, as config/webhook and the chart ship it: the controller
        # may fill it, not create it.
        apply(sim, [*manifests.manifests(NAMESPACE, port, f"127.0.0.1:{port}"),
                    manifests.secret(NAMESPACE)])  # fmt: skip
        token = request_token(sim)
        assert token and token not in Path(sim.kubeconfig).read_text()
        config = yaml.safe_load(Path(sim.kubeconfig).read_text())
        for user in config["users"]:
            user["user"] = {"token": token}
        kubeconfig = tmp / "controller.kubeconfig"
        kubeconfig.write_text(yaml.safe_dump(config))
        controller = Controller(
            kubeconfig,
            "--leader-elect",
            "--leader-election-namespace",
            NAMESPACE,
            "--webhook-port",
            str(port),
            # Every log line the controller has, in both formats (one per run).
            "--log-level",
            "DEBUG",
            "--log-format",
            "json" if request.param == "kustomize" else "console",
            log=tmp / "controller.log",
        )
        controller.wait_ready(within=120)  # the Secret filled, the caBundle injected
        yield sim, controller
    finally:
        if controller is not None:
            controller.stop()
        sim.stop()


def test_the_token_is_the_service_account_and_is_held_to_its_rules(
    cluster: tuple[SimProcess, Controller], tmp_path: Path
) -> None:
    sim, _ = cluster
    token = request_token(sim)
    as_sa = ("--token", token)
    # Allowed by config/rbac: list Jobs everywhere; not allowed: Secrets outside its Role.
    assert sim.kubectl("get", "jobs", "-A", *as_sa).returncode == 0
    denied = sim.kubectl("get", "secrets", "-n", NS, *as_sa, check=False)
    assert denied.returncode != 0
    assert (
        f'secrets is forbidden: User "{USER}" cannot list resource "secrets" in API group "" '
        f'in the namespace "{NS}"'
    ) in denied.stderr
    bad = sim.kubectl("get", "jobs", "-A", "--token", "not-a-token", check=False)
    assert bad.returncode != 0 and "Unauthorized" in bad.stderr


def test_everything_works_under_exactly_the_installed_rbac(
    cluster: tuple[SimProcess, Controller],
) -> None:
    sim, controller = cluster
    # Exclusivity holds among running pods: a Job whose leader waited for the plain pods to
    # leave may rightly reuse a pool whose Job has finished. The exclusive pods therefore
    # run long enough for the check below to see all of them running at once.
    apply(sim, [jobset("plain"), jobset("excl", exclusive=True, seconds=20)])
    eventually(lambda: completed(sim, "plain"), within=120, interval=0.5)

    def placed() -> bool:
        pods = get_json(sim, "pods", "-n", NS, "-l", f"{c.JOBSET_NAME_KEY}=excl")["items"]
        if len(pods) != 4 or not all(p["spec"].get("nodeName") for p in pods):
            return False
        assert all((p.get("status") or {}).get("phase") != "Succeeded" for p in pods), (
            "an exclusive pod finished before all four were placed"
        )
        pools: dict[str, set[str]] = {}
        for p in pods:
            node = get_json(sim, "node", p["spec"]["nodeName"])
            labels = p["metadata"]["labels"]
            job = labels.get(c.JOB_KEY) or labels["job-name"]
            pools.setdefault(job, set()).add(node["metadata"]["labels"][POOL])
        assert all(len(v) == 1 for v in pools.values()), pools  # one pool per Job
        assert len(set().union(*pools.values())) == len(pools), pools  # no pool shared
        return True

    eventually(placed, within=120, interval=0.5)
    eventually(lambda: completed(sim, "excl"), within=120, interval=0.5)
    log = controller.output()
    assert "forbidden" not in log.lower() and " 403" not in log, log[-4000:]


def test_no_token_key_or_certificate_in_logs_or_events(
    cluster: tuple[SimProcess, Controller],
) -> None:
    sim, controller = cluster
    kubeconfig = yaml.safe_load((controller.log.parent / "controller.kubeconfig").read_text())
    secrets: dict[str, bytes | str] = {"controller token": kubeconfig["users"][0]["user"]["token"]}
    data = get_json(sim, "secret", manifests.SECRET, "-n", NAMESPACE)["data"]
    for key in ("ca.crt", "ca.key", "tls.crt", "tls.key"):
        secrets[f"Secret {key}"] = base64.b64decode(data[key])
    ca, metrics_dns = secrets["Secret ca.crt"], f"{manifests.METRICS_SERVICE}.{NAMESPACE}.svc"
    assert isinstance(ca, bytes)
    for name, bound in (("reader", True), ("stranger", False)):
        sim.kubectl("create", "serviceaccount", name, "-n", NS)
        if bound:
            sim.kubectl("create", "clusterrolebinding", f"test-{name}-metrics",
                        "--clusterrole=jobset-metrics-reader",
                        f"--serviceaccount={NS}:{name}")  # fmt: skip
        token = sim.kubectl("create", "token", name, "-n", NS).stdout.strip()
        secrets[f"{name} token"] = token
        status, body = scrape_secure(controller.metrics_port, token, ca, metrics_dns)
        assert status == (200 if bound else 403), body
        if bound:  # the rotator's passes count as certificate reads (certwatcher's series)
            assert "\ncertwatcher_read_certificate_total " in body
            assert "\ncertwatcher_read_certificate_errors_total 0.0\n" in body
    assert scrape_secure(controller.metrics_port, "not-a-token", ca, metrics_dns)[0] == 401
    log = controller.output()
    events = sim.kubectl("get", "events", "-A", "-o", "json").stdout
    # The log is the full one (debug lines, the reconciles, the reviews' users), the events
    # are those of the JobSets above.
    assert "serving certificate loaded" in log and "authorization denied" in log, log[-2000:]
    assert "jobset" in events.lower()
    assert leaked(log, secrets) == [], log[-4000:]
    assert leaked(events, secrets) == []


def test_without_a_needed_rule_the_controller_is_refused_and_stuck(
    cluster: tuple[SimProcess, Controller],
) -> None:
    sim, controller = cluster
    role = get_json(sim, "clusterrole", MANAGER_ROLE)
    original = [dict(r) for r in role["rules"]]
    role["rules"] = [r for r in original if r.get("resources") != ["jobs"]]
    assert len(role["rules"]) == len(original) - 1
    for k in ("resourceVersion", "uid", "creationTimestamp", "managedFields"):
        role["metadata"].pop(k, None)
    sim.kubectl("replace", "-f", "-", input=json.dumps(role))
    try:
        apply(sim, [jobset("denied", replicas=1)])
        needle = (
            f'jobs.batch is forbidden: User "{USER}" cannot create resource "jobs" '
            f'in API group "batch" in the namespace "{NS}"'
        )
        # (The kustomize run logs JSON, where the message's quotes are escaped.)
        eventually(
            lambda: needle in controller.output().replace('\\"', '"'), within=60, interval=0.5
        )
        jobs = get_json(sim, "jobs", "-n", NS, "-l", f"{c.JOBSET_NAME_KEY}=denied")["items"]
        assert jobs == [] and not completed(sim, "denied")
    finally:
        role["rules"] = original
        sim.kubectl("replace", "-f", "-", input=json.dumps(role))
    # The rule back, the same controller gets on with it (it was RBAC, nothing else).
    eventually(lambda: completed(sim, "denied"), within=180, interval=0.5)
