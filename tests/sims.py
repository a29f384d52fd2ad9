"""Starting simulated clusters for tests (the fixtures are in tests/conftest.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import yaml

from jobset.api.constants import JOBSET_NAME_KEY
from kubesim.process import SimProcess, start_sim

__all__ = ["install_jobset_crd", "kubectl_apply", "live_jobs", "refuse_pods", "start_sim_none"]


def start_sim_none(directory: Path, *flags: str, jobset_crd: bool = False) -> SimProcess:
    """`jobset sim --sim-level none [flags]`; with `jobset_crd`, the JobSet CRD installed and
    established the way the controller installs it (`jobset.controllers.crd.apply_crds`)."""
    s = start_sim(directory, "--sim-level", "none", *flags)
    if jobset_crd:
        try:
            asyncio.run(_install_crds(s))
        except BaseException:
            s.stop()
            raise
    return s


async def _install_crds(s: SimProcess) -> None:
    from jobset.controllers.crd import apply_crds
    from jobset.runtime.client import Client

    client = await Client.connect(str(s.kubeconfig))
    try:
        await apply_crds(client)
    finally:
        await client.close()


def install_jobset_crd(s: SimProcess) -> None:
    """Install the JobSet CRD into a running simulated cluster (any level)."""
    asyncio.run(_install_crds(s))


def refuse_pods(s: SimProcess, namespace: str, hook: str) -> None:
    """A ValidatingWebhookConfiguration (named after `namespace`) that refuses to create pods
    labelled `hooked: yes` in `namespace`: its Service has no endpoints and it fails closed,
    so pod creation fails with `failed calling webhook "HOOK": ...`, as a webhook that is
    down does on a cluster. Delete the configuration (named `namespace`) when done."""
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "hooks", "namespace": namespace},
        "spec": {"selector": {"app": "nobody"}, "ports": [{"port": 443}]},
    }
    rule = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
            "resources": ["pods"]}  # fmt: skip
    config = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": namespace},
        "webhooks": [
            {
                "name": hook,
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "failurePolicy": "Fail",
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                "objectSelector": {"matchLabels": {"hooked": "yes"}},
                "rules": [rule],
                "clientConfig": {"service": {"name": "hooks", "namespace": namespace}},
            }
        ],
    }
    s.kubectl("apply", "-f", "-", input=json.dumps(svc))
    s.kubectl("apply", "-f", "-", input=json.dumps(config))


def kubectl_apply(sim: SimProcess, obj: dict[str, Any]) -> None:
    """`kubectl apply -f -` of one object, as a user applies a manifest."""
    sim.kubectl("apply", "-f", "-", input=yaml.safe_dump(obj))


def live_jobs(sim: SimProcess, jobset: str) -> dict[str, dict[str, Any]]:
    """The JobSet's Jobs that are not being deleted, by name, from one `kubectl get`."""
    out = sim.kubectl("get", "jobs", "-l", f"{JOBSET_NAME_KEY}={jobset}", "-o", "json").stdout
    return {
        j["metadata"]["name"]: j
        for j in json.loads(out)["items"]
        if not j["metadata"].get("deletionTimestamp")
    }
