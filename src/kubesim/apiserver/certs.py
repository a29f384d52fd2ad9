"""TLS material for the simulated cluster: a CA, serving certificates, SSL contexts, kubeconfig.

The simulated API server serves HTTPS by default so that kubectl, Helm and kubernetes_asyncio
verify it exactly as they would verify a real cluster (no `insecure-skip-tls-verify`), and it
calls admission webhooks over HTTPS checked against their `caBundle`. Keys are EC P-256: they
are generated in milliseconds, which matters because every test cluster makes fresh ones.

Certificate generation and the server's TLS settings are `kubeutil.tls`, shared with the
controller's webhook and metrics servers (which this package must not import).
"""

from __future__ import annotations

import base64
import datetime as dt
import os
import secrets
import ssl
import tempfile
from pathlib import Path

import yaml

from kubeutil import tls

__all__ = [
    "API_SERVER_CLIENT_NAME",
    "client_ssl_context",
    "make_ca",
    "make_client_cert",
    "make_serving_cert",
    "new_token",
    "present_client_cert",
    "server_ssl_context",
    "write_kubeconfig",
]


def make_ca(common_name: str, days: int = 3650) -> tuple[bytes, bytes]:
    """A self-signed CA certificate and its private key, both PEM."""
    return tls.make_ca(common_name, dt.timedelta(days=days))


def make_serving_cert(
    ca_cert_pem: bytes, ca_key_pem: bytes, hosts: list[str], days: int = 365
) -> tuple[bytes, bytes]:
    """A server certificate signed by the CA, valid for `hosts` (DNS names and IP addresses).

    Clients check the address they dialled against the SANs, so every name the server will
    be reached by (`localhost`, `127.0.0.1`, a webhook Service's DNS name) must be listed.
    """
    return tls.issue_serving_cert(ca_cert_pem, ca_key_pem, hosts, dt.timedelta(days=days))


# The identity the simulated API server presents to webhooks (user = CN, groups = O).
API_SERVER_CLIENT_NAME = "kube-apiserver"


def make_client_cert(
    ca_cert_pem: bytes,
    ca_key_pem: bytes,
    common_name: str = API_SERVER_CLIENT_NAME,
    days: int = 365,
) -> tuple[bytes, bytes]:
    """A client certificate signed by the CA (clientAuth only): (certificate PEM, key PEM)."""
    return tls.issue_client_cert(ca_cert_pem, ca_key_pem, common_name, dt.timedelta(days=days))


def present_client_cert(ctx: ssl.SSLContext, cert_pem: bytes, key_pem: bytes) -> None:
    """Make a client context present this certificate to servers that ask for one."""
    tls.load_cert_chain(ctx, cert_pem, key_pem)


def server_ssl_context(cert_pem: bytes, key_pem: bytes) -> ssl.SSLContext:
    """An SSL context for an HTTPS server presenting this certificate (`kubeutil.tls` settings:
    TLS 1.2+, forward-secret AEAD suites, ALPN http/1.1 for Go clients that offer h2)."""
    return tls.server_context(cert_pem, key_pem)


def client_ssl_context(ca_pem: bytes | str) -> ssl.SSLContext:
    """An SSL context that trusts only `ca_pem` (one or more PEM certificates) and checks the
    server's hostname, as the API server does when it calls a webhook with a `caBundle`."""
    return tls.client_context(ca_pem)


def new_token() -> str:
    """A fresh bearer token for the kubeconfig user."""
    return secrets.token_urlsafe(32)


def write_kubeconfig(
    path: str | os.PathLike[str],
    server_url: str,
    ca_pem: bytes,
    token: str,
    cluster_name: str = "jobset-sim",
    context: str = "jobset-sim",
    user: str = "admin",
    namespace: str = "default",
) -> None:
    """Write a standard kubeconfig for the simulated cluster.

    It holds a bearer token, so it is created 0600. It is written to a temporary file in the
    same directory and renamed into place, so a client polling for it (a test waiting for the
    server to come up) never reads a half-written file.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [
            {
                "name": cluster_name,
                "cluster": {
                    "server": server_url,
                    "certificate-authority-data": base64.b64encode(ca_pem).decode("ascii"),
                },
            }
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [
            {
                "name": context,
                "context": {"cluster": cluster_name, "user": user, "namespace": namespace},
            }
        ],
        "current-context": context,
    }
    text = yaml.safe_dump(config, default_flow_style=False, sort_keys=False)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            os.fchmod(f.fileno(), 0o600)
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp_name, target)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        raise
