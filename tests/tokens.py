"""ServiceAccount tokens from a simulated cluster, for tests that act as a workload would."""

from __future__ import annotations

import base64
import json
import ssl
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from kubesim.process import SimProcess

__all__ = ["kubeconfig_as", "request_token"]


def request_token(
    sim: SimProcess, namespace: str, account: str, bound_pod: dict[str, Any] | None = None
) -> str:
    """A TokenRequest (in JSON: kubectl sends protobuf) for the ServiceAccount; bound to
    `bound_pod` (its name and uid) as the kubelet's projected tokens are, if given."""
    config = yaml.safe_load(Path(sim.kubeconfig).read_text())
    cluster = config["clusters"][0]["cluster"]
    ctx = ssl.create_default_context(
        cadata=base64.b64decode(cluster["certificate-authority-data"]).decode()
    )
    spec: dict[str, Any] = {}
    if bound_pod is not None:
        meta = bound_pod["metadata"]
        spec["boundObjectRef"] = {
            "apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]
        }  # fmt: skip
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
    req = urllib.request.Request(
        f"{cluster['server']}/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token",
        data=json.dumps(body).encode(),
        headers={
            "Authorization": f"Bearer {config['users'][0]['user']['token']}",
            "Content-Type": "application/json",
        },
    )
    with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
        return str(json.loads(resp.read())["status"]["token"])


def kubeconfig_as(sim: SimProcess, token: str, path: Path) -> Path:
    """A copy of the cluster's kubeconfig whose user is `token`."""
    config = yaml.safe_load(Path(sim.kubeconfig).read_text())
    for user in config["users"]:
        user["user"] = {"token": token}
    path.write_text(yaml.safe_dump(config))
    return path
