"""SIGTERM drains the webhook server (`--webhook-drain-seconds`): readiness
turns false at once, yet every admission review sent during the drain is answered and
admitted - with `Connection: close`, so a caller's kept-alive connection ends and its next
request dials another replica - and only then does the server stop and the process exit 0.

The review is posted straight to the webhook port without verifying the certificate: what
is tested is the drain; the certificate chain is tests/integration/webhooks/test_certs.py's.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import signal
import ssl
import time
from pathlib import Path

import pytest

from jobset.runtime.client import Client
from tests import builders

from .conftest import ClusterFactory
from .harness import Controllers, eventually, make_namespace

DRAIN = 4.0
PATH = "/mutate-jobset-x-k8s-io-v1alpha2-jobset"
REVIEW = {
    "apiVersion": "admission.k8s.io/v1",
    "kind": "AdmissionReview",
    "request": {
        "uid": "drain-1",
        "kind": {"group": "jobset.x-k8s.io", "version": "v1alpha2", "kind": "JobSet"},
        "resource": {"group": "jobset.x-k8s.io", "version": "v1alpha2", "resource": "jobsets"},
        "operation": "CREATE",
        "namespace": "default",
        "name": "drained",
        "object": builders.jobset("drained", builders.rjob("w"), namespace="default"),
        "userInfo": {"username": "kubernetes-admin", "groups": ["system:masters"]},
    },
}


def post_review(port: int) -> tuple[int, str]:
    """(HTTP status, Connection header) of one review on a fresh connection; (0, error)
    when nothing answers."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=5)
    try:
        conn.request(
            "POST", PATH, body=json.dumps(REVIEW), headers={"Content-Type": "application/json"}
        )
        resp = conn.getresponse()
        body = json.loads(resp.read())
        assert body["response"]["uid"] == "drain-1", body
        # Admitted: what the webhook reads (its caches, its client) is still up meanwhile.
        assert body["response"]["allowed"] is True, body
        return resp.status, (resp.getheader("Connection") or "").lower()
    except OSError as err:
        return 0, repr(err)
    finally:
        conn.close()


@pytest.mark.timeout(180)
async def test_sigterm_drains_the_webhook_server(
    cluster_factory: ClusterFactory, controllers: Controllers, tmp_path: Path
) -> None:
    async with cluster_factory() as (cluster, _invariants):
        client = await Client.connect(cluster.kubeconfig)
        try:
            await make_namespace(client, "jobset-system")  # the webhook certificate's Secret
        finally:
            await client.close()
        ctrl = controllers.start(
            cluster.kubeconfig,
            tmp_path / "controller.log",
            "--webhook-drain-seconds",
            str(DRAIN),
            health=True,
            log_level="INFO",
        )
        args = [str(a) for a in ctrl.proc.args]  # type: ignore[union-attr]
        port = int(args[args.index("--webhook-port") + 1])
        await eventually(lambda: asyncio.to_thread(ctrl.readyz), lambda r: r[0] == 200, 90, "ready")
        status, connection = await asyncio.to_thread(post_review, port)
        assert status == 200 and connection != "close", (status, connection)  # kept alive
        t0 = time.monotonic()
        ctrl.proc.send_signal(signal.SIGTERM)
        await asyncio.sleep(0.5)  # the signal handled
        during: list[tuple[float, int, str, int]] = []
        while time.monotonic() - t0 < DRAIN - 0.5:
            ready, _ = await asyncio.to_thread(ctrl.readyz, False)
            answer = await asyncio.to_thread(post_review, port)
            during.append((round(time.monotonic() - t0, 2), *answer, ready))
            await asyncio.sleep(0.2)
        assert len(during) >= 3, during
        # Every review answered, each closing its connection; never ready meanwhile.
        assert all(s == 200 and c == "close" and r != 200 for _, s, c, r in during), during
        rc = await asyncio.to_thread(ctrl.proc.wait, 60)
        assert rc == 0, ctrl.text()[-3000:]
        assert time.monotonic() - t0 >= DRAIN
        assert (await asyncio.to_thread(post_review, port))[0] == 0
        assert "draining webhook connections" in ctrl.text()
