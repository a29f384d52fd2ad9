"""Which client CA (and which names) authenticate the API server when it calls the webhooks.

The webhook server trusts what an AdmissionReview says (`request.namespace`, `userInfo`),
so it must know the caller is the API server, not any pod that can reach its port
(docs/reliability.md, "Threat model"). Kubernetes offers no automatic way: kube-apiserver
presents a client certificate to a webhook only when its operator configures one, with
`--admission-control-config-file` naming a `WebhookAdmissionConfiguration` whose kubeconfig
holds the certificate for the webhook's Service name (`jobset-webhook-service.jobset-system.svc`)
- see docs/operations.md, "Authenticating the API server to the webhooks". Two sources of
the CA that signed it:

- `--webhook-client-ca-file PATH`: a PEM bundle mounted into the pod; with
  `--webhook-client-names` (comma-separated CNs; empty: any certificate from that CA).
- `--webhook-client-ca-from-cluster`: what kube-apiserver itself publishes for extension
  API servers, the ConfigMap `kube-system/extension-apiserver-authentication`:
  `requestheader-client-ca-file` (the front-proxy CA, which signs the certificate the API
  server presents when it proxies, e.g. kubeadm's `front-proxy-client`) and
  `requestheader-allowed-names` (the CNs allowed to use it). Pointing the admission
  kubeconfig at that same proxy-client certificate then needs no new CA. The ConfigMap's
  `client-ca-file` is deliberately not used: that CA signs every user's client certificate
  (admins, kubelets), so it would authenticate far more than the API server. Reading the
  ConfigMap needs the built-in Role `extension-apiserver-authentication-reader` in
  kube-system (the chart binds it when `webhook.clientAuth.fromCluster` is set). It is read
  once at start: restart the controller after rotating the front-proxy CA.

Limits, honestly: managed control planes (GKE, EKS, AKS) do not let you set kube-apiserver
flags, so neither option can be used there; what then guards the port is the chart's
NetworkPolicy, and what keeps an unauthenticated caller from learning anything is that
the handlers reveal nothing a requester could not read (`access.py`) - but such a caller
can still claim any `userInfo`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from jobset.runtime.client import CONFIGMAPS, Client

__all__ = [
    "AUTHENTICATION_CONFIGMAP",
    "ClientAuth",
    "client_auth_from_cluster",
    "client_auth_from_file",
]

AUTHENTICATION_CONFIGMAP: Final = ("kube-system", "extension-apiserver-authentication")


@dataclass(frozen=True)
class ClientAuth:
    """The CA bundle (PEM) client certificates must chain to, and the CNs allowed (empty:
    any certificate from the CA)."""

    ca_pem: bytes
    allowed_names: tuple[str, ...] = ()


def _names(text: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in text.split(",") if n.strip())


def client_auth_from_file(path: str, names: str = "") -> ClientAuth:
    """`--webhook-client-ca-file` (and `--webhook-client-names`)."""
    return ClientAuth(Path(path).read_bytes(), _names(names))


async def client_auth_from_cluster(client: Client) -> ClientAuth:
    """`--webhook-client-ca-from-cluster`: the requestheader CA and allowed names the API
    server publishes. Raises ValueError when the ConfigMap has no requestheader CA."""
    namespace, name = AUTHENTICATION_CONFIGMAP
    cm = await client.get(CONFIGMAPS, name, namespace)
    data = cm.get("data") or {}
    ca = str(data.get("requestheader-client-ca-file") or "")
    if not ca.strip():
        raise ValueError(
            f"{namespace}/{name} has no requestheader-client-ca-file: the API server runs "
            "without --requestheader-client-ca-file; use --webhook-client-ca-file"
        )
    raw = str(data.get("requestheader-allowed-names") or "[]")
    try:
        names = json.loads(raw)
    except json.JSONDecodeError:
        names = None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ValueError(f"{namespace}/{name}: requestheader-allowed-names is not a JSON list")
    return ClientAuth(ca.encode(), tuple(names))
