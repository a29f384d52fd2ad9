"""Only the API server may call the webhooks (docs/reliability.md, "Threat model").

With `--webhook-client-ca-from-cluster` the webhook server reads the front-proxy CA and the
allowed names from `kube-system/extension-apiserver-authentication`, which the simulated
API server publishes as kube-apiserver does, and requires a client certificate from it:
the simulated API server presents one (CN `kube-apiserver`) and admission works as before;
a caller without one - any pod that can reach the port, with an AdmissionReview claiming
any namespace and user - is refused in the TLS handshake, before any handler runs.
"""

from __future__ import annotations

import datetime as dt
import json
import ssl
from collections.abc import Iterator

import aiohttp
import pytest

from jobset.api import constants as c
from jobset.webhooks import certs
from jobset.webhooks.review import AdmissionRequest, AdmissionResponse
from jobset.webhooks.server import ServingCert, WebhookServer
from kubesim.process import SimProcess
from kubeutil import tls
from tests.integration.placement.process import HarnessProcess, start_harness

pytestmark = pytest.mark.timeout(180)

REVIEW = {
    "apiVersion": "admission.k8s.io/v1",
    "kind": "AdmissionReview",
    "request": {
        "uid": "u-1",
        "operation": "CREATE",
        "namespace": "someone-else",
        "userInfo": {"username": "admin", "groups": ["system:masters"]},
        "object": {"metadata": {"name": "x"}},
    },
}


@pytest.fixture(scope="module")
def authenticated(sim_none: SimProcess) -> Iterator[HarnessProcess]:
    h = start_harness(sim_none, "--webhook-client-ca-from-cluster")
    yield h
    h.stop()


def client_context(cert: tuple[bytes, bytes] | None = None) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # the caller does not care who serves
    if cert is not None:
        tls.load_cert_chain(ctx, *cert)
    return ctx


async def post(port: int, ctx: ssl.SSLContext, path: str) -> tuple[int, bytes]:
    async with (
        aiohttp.ClientSession() as s,
        s.post(f"https://127.0.0.1:{port}{path}", json=REVIEW, ssl=ctx) as r,
    ):
        return r.status, await r.read()


def test_the_api_server_is_served(sim_none: SimProcess, authenticated: HarnessProcess) -> None:
    js = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "ok", "namespace": "default"},
        "spec": {
            "replicatedJobs": [
                {
                    "name": "w",
                    "template": {
                        "spec": {
                            "template": {"spec": {"containers": [{"name": "c", "image": "b"}]}}
                        }
                    },
                }
            ]
        },
    }
    r = sim_none.kubectl(
        "create", "--dry-run=server", "-o", "json", "-f", "-", input=json.dumps(js)
    )
    # Defaulted by the mutating webhook, so the API server's call went through.
    assert json.loads(r.stdout)["spec"]["replicatedJobs"][0]["replicas"] == 1


@pytest.mark.parametrize("cert", ["none", "other CA"])
async def test_a_caller_without_the_api_servers_certificate_is_refused_in_the_handshake(
    authenticated: HarnessProcess, cert: str
) -> None:
    presented = None
    if cert == "other CA":
        ca, key = tls.make_ca("intruder-ca", dt.timedelta(days=1))
        presented = tls.issue_client_cert(ca, key, "kube-apiserver", dt.timedelta(days=1))
    with pytest.raises((aiohttp.ClientError, ssl.SSLError, ConnectionError)):
        await post(
            authenticated.webhook_port, client_context(presented), c.VALIDATING_JOBSET_WEBHOOK_PATH
        )


async def test_a_certificate_from_the_ca_needs_an_allowed_name() -> None:
    bundle = certs.issue_bundle(["localhost"])
    serving = ServingCert()
    serving.update(bundle.cert, bundle.key)
    server = WebhookServer(serving, host="127.0.0.1", port=0)
    calls: list[AdmissionRequest] = []

    async def allow(req: AdmissionRequest) -> AdmissionResponse:
        calls.append(req)
        return AdmissionResponse.allow()

    server.register("/x", allow)
    ca, key = tls.make_ca("front-proxy-ca", dt.timedelta(days=1))
    server.require_client_certs(ca, ("kube-apiserver",))
    await server.start()
    try:
        week = dt.timedelta(days=7)
        other = tls.issue_client_cert(ca, key, "some-user", week)
        status, body = await post(server.port, client_context(other), "/x")
        assert status == 403 and b"AdmissionReview" not in body and not calls
        apiserver = tls.issue_client_cert(ca, key, "kube-apiserver", week)
        status, body = await post(server.port, client_context(apiserver), "/x")
        assert status == 200 and json.loads(body)["response"]["allowed"] is True
        assert len(calls) == 1
    finally:
        await server.stop()
        serving.close()


async def test_without_the_flag_anyone_is_served(harness: HarnessProcess) -> None:
    """The default (compatibility): no client authentication - what the NetworkPolicy and
    the handlers' own care (test_pvc_oracle.py) must make up for."""
    status, _ = await post(harness.webhook_port, client_context(), c.VALIDATING_JOBSET_WEBHOOK_PATH)
    assert status == 200
