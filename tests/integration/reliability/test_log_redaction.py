"""No secret, token or pod spec contents in the controller's logs at the default level,
including on the error paths (every Job and Service create is refused a few times)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobset.runtime.client import Client

from .conftest import ClusterFactory
from .harness import Controllers, create_retrying, eventually, make_namespace, outcomes, workload

FAULTS = """\
seed: 5
rules:
  - name: refuse-creates
    match: {verb: [create, patch, update], resource: [batch/jobs, services, jobsets]}
    error: {code: 500, probability: 0.3}
"""
SECRET = "s3cr3t-VALUE-do-not-log-7f2a"
IMAGE = "registry.example.com/private/trainer@sha256:feedfacecafe"


@pytest.mark.timeout(300)
async def test_default_level_logs_hold_no_secrets_tokens_or_pod_specs(
    cluster_factory: ClusterFactory, controllers: Controllers, tmp_path: Path
) -> None:
    async with cluster_factory(FAULTS) as (cluster, _invariants):
        log = tmp_path / "controller.log"
        client = await Client.connect(cluster.kubeconfig, qps=100, burst=200)
        try:
            await make_namespace(client, "jobset-system")
            ctrl = controllers.start(cluster.kubeconfig, log, health=True, log_level="INFO")
            ns = "secrets"
            await make_namespace(client, ns)
            names = []
            for i, kind in enumerate(("ok", "fails", "restarts")):
                js, _ = workload(f"{kind}-{i}", kind, ns, run_seconds=1)
                for rj in js["spec"]["replicatedJobs"]:
                    c = rj["template"]["spec"]["template"]["spec"]["containers"][0]
                    c["image"] = IMAGE
                    c["env"].append({"name": "API_KEY", "value": SECRET})
                    c["args"] = ["--password", SECRET]
                await create_retrying(client, js)
                names.append(js["metadata"]["name"])
            await eventually(
                lambda: outcomes(client, ns),
                lambda got: len(got) == 3 and all(v is not None for v in got.values()),
                within=180,
                what="the JobSets to finish",
            )
            text = ctrl.text()
            assert "Reconciler error" in text or "retrying" in text, "no error path was taken"
            token = cluster.token
            for needle in (SECRET, token, IMAGE, "sha256:feedfacecafe", "BEGIN", "API_KEY"):
                assert needle not in text, f"{needle!r} leaked into the logs"
        finally:
            await client.close()
