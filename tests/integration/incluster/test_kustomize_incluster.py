"""`kubectl apply --server-side -k` of config/default and of config/install, the kustomize
installs, run for real: the controller Deployment rolls out (the wheel's `jobset controller`
as uid 65532 with the in-cluster config and the kustomize RBAC, the internal certificate
management filling the shipped Secret), an example JobSet reaches its outcome, an invalid
JobSet is denied by the in-cluster webhook, and `kubectl delete -k` ends every controller
process.

config/default is config/install plus the Prometheus Operator objects (ServiceMonitor,
PrometheusRule), so it is applied with those CRDs present; config/install must work
without them. `kubectl delete -k` runs with --ignore-not-found: it deletes the Namespace
first, and the namespaced objects it then asks for may already have gone with it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from tests.integration.incluster.conftest import (
    DEPLOYMENT,
    NS,
    REPO,
    WEBHOOK_CONFIGURATIONS,
    Cluster,
    example_reaches_its_outcome,
    gone,
    invalid_jobset_is_denied,
    namespace,
    no_controller_left,
    thirdparty_crds,
)
from tests.logs import traceback_lines

pytestmark = pytest.mark.timeout(600)


@pytest.mark.parametrize(
    "overlay", ["default", pytest.param("install", marks=pytest.mark.soak)]
)  # install = default minus Prometheus objects: make soak
def test_kustomize_install_runs_admits_and_uninstalls(cluster: Cluster, overlay: str) -> None:
    config = str(REPO / "config" / overlay)
    with contextlib.ExitStack() as stack:
        if overlay == "default":
            stack.enter_context(thirdparty_crds(cluster))
        stack.enter_context(_applied(cluster, config))
        cluster.rollout()
        (pod,) = cluster.controller_pods()
        procs = cluster.controller_processes()
        assert len(procs) == 1 and procs[0][1] == 65532, procs
        assert "--leader-elect" in procs[0][2] and "--kubeconfig" not in procs[0][2]
        assert pod["status"]["podIP"] != pod["status"]["hostIP"]
        # Internal certificate management: the controller filled the Secret config/ ships
        # empty, and injected its CA into both webhook configurations.
        secret = cluster.json("get", "secret", "jobset-webhook-server-cert", "-n", NS)
        assert {"tls.crt", "tls.key", "ca.crt"} <= set(secret.get("data") or {})
        for kind, name in WEBHOOK_CONFIGURATIONS:
            hooks = cluster.json("get", kind, name)["webhooks"]
            assert all(h["clientConfig"].get("caBundle") for h in hooks), name
        ns = stack.enter_context(namespace(cluster, f"kustomize-{overlay}"))
        example_reaches_its_outcome(cluster, "simple.yaml", ns)
        invalid_jobset_is_denied(cluster, ns)
        log = cluster.kubectl("logs", pod["metadata"]["name"], "-n", NS)
        for problem in ("Read-only file system", "Permission denied"):
            assert problem not in log, log
        assert not traceback_lines(log), log
    # Everything of the install is gone, and with it every controller process.
    no_controller_left(cluster)
    gone(cluster, "namespace", NS)
    gone(cluster, "crd", "jobsets.jobset.x-k8s.io")
    for kind, name in WEBHOOK_CONFIGURATIONS:
        gone(cluster, kind, name)


@contextlib.contextmanager
def _applied(cluster: Cluster, config: str) -> Iterator[None]:
    out = cluster.kubectl("apply", "--server-side", "-k", config, timeout=120)
    assert f"deployment.apps/{DEPLOYMENT} serverside-applied" in out, out
    try:
        yield
    finally:
        cluster.kubectl("delete", "-k", config, "--ignore-not-found", "--wait=false", timeout=120)
