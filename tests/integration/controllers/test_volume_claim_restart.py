"""volumeClaimPolicies against the simulated cluster's real storage: the JobSet's claim is
provisioned when its first pod is scheduled, every pod mounts the same directory, and the
attempt after a failure restart reads what the failed attempt wrote (the checkpoint story).

The pods run as real processes (`--run-image`, root needed as in sim/test_processes.py);
the controller runs in-process against the cluster.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jobset.controllers.crd import apply_crds
from jobset.resources import JOBSETS
from jobset.runtime.client import PVCS, Client
from kubesim.cluster import SimCluster, SimOptions
from kubesim.process import SimProcess
from tests.eventually import eventually

from .conftest import running_controller
from .helpers import has_condition, jobset, rjob

pytestmark = [pytest.mark.kubectl]

REALPOD = Path(__file__).parents[1] / "sim" / "realpod"
# A worker that fails once: without a checkpoint it writes one and fails; with one it
# reports it and succeeds. The checkpoint is in the claim, so only a shared, kept volume
# lets the restarted attempt succeed.
WORKER = (
    "if [ -s /srv/ckpt ]; then echo resumed-from-$(cat /srv/ckpt); exit 0; fi; "
    "echo step-3 > /srv/ckpt; exit 1"
)


async def test_restarted_attempt_reads_the_checkpoint_in_the_claim(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kc"
    cluster = SimCluster(
        SimOptions(
            kubeconfig=str(kubeconfig),
            nodes="2",
            time_scale=0.1,
            run_images={"example.com/web": str(REALPOD)},
        )
    )
    await cluster.start()
    client = await Client.connect(str(kubeconfig))
    try:
        await apply_crds(client)
        sim = SimProcess(None, kubeconfig, cluster.url, [])  # type: ignore[arg-type]
        async with running_controller(sim):
            workers = rjob(
                "w",
                2,
                image="example.com/web:v1",
                command=["sh", "-c", WORKER],
                container_fields={"volumeMounts": [{"name": "ckpt", "mountPath": "/srv"}]},
            )
            claim: dict[str, Any] = {
                "metadata": {"name": "ckpt"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            }
            js = jobset(
                "train",
                workers,
                namespace="default",
                volumeClaimPolicies=[{"templates": [claim]}],
                failurePolicy={"maxRestarts": 2},
            )
            await client.create(JOBSETS, js, namespace="default")

            def done(o: dict[str, Any]) -> bool:
                return has_condition(o, "Completed") or has_condition(o, "Failed")

            final = await eventually(
                lambda: client.get(JOBSETS, "train", namespace="default"), done, within=60
            )
            assert has_condition(final, "Completed"), final["status"]
            assert final["status"]["restarts"] >= 1
            pvc = await client.get(PVCS, "ckpt-train", namespace="default")
            assert pvc["status"]["phase"] == "Bound"
            assert pvc["spec"]["storageClassName"] == "standard"
            nodes = set()
            for pod in cluster.store.resource(("", "pods")).objects.values():
                nodes.add(pod["spec"].get("nodeName"))
            assert len(nodes) == 1  # a ReadWriteOnce local volume keeps its pods on its node
    finally:
        await client.close()
        await cluster.stop()
