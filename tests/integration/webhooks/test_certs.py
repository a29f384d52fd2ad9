"""Internal certificate management against the simulated cluster.

A harness whose certificates live 8 s (rotated 4 s before expiry) must keep serving
admission throughout several rotations with the same caBundle, re-inject the caBundle when
someone wipes it, and serve the certificate the Secret holds.
"""

from __future__ import annotations

import base64
import json
import socket
import ssl
import time
from collections.abc import Iterator

import pytest
import yaml
from cryptography import x509

from kubesim.process import SimProcess, start_sim
from tests.integration.placement.process import HarnessProcess, start_harness

pytestmark = [pytest.mark.timeout(180), pytest.mark.kubectl]


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    s = start_sim(tmp_path_factory.mktemp("sim"), "--sim-level", "none")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def rotating(sim: SimProcess) -> Iterator[HarnessProcess]:
    h = start_harness(sim, "--cert-validity", "8", "--cert-lookahead", "4")
    yield h
    h.stop()


def served_cert(port: int, ca_pem: bytes) -> x509.Certificate:
    ctx = ssl.create_default_context(cadata=ca_pem.decode())
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with ctx.wrap_socket(
            raw, server_hostname="jobset-webhook-service.jobset-system.svc"
        ) as tls:
            der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der)


def secret_data(sim: SimProcess) -> dict[str, bytes]:
    secret = json.loads(
        sim.kubectl(
            "get", "secret", "-n", "jobset-system", "jobset-webhook-server-cert", "-o", "json"
        ).stdout
    )
    return {k: base64.b64decode(v) for k, v in secret["data"].items()}


def ca_bundles(sim: SimProcess) -> set[str]:
    out: set[str] = set()
    for kind, name in (
        ("mutatingwebhookconfiguration", "jobset-mutating-webhook-configuration"),
        ("validatingwebhookconfiguration", "jobset-validating-webhook-configuration"),
    ):
        config = json.loads(sim.kubectl("get", kind, name, "-o", "json").stdout)
        out.update(h["clientConfig"].get("caBundle", "") for h in config["webhooks"])
    return out


def create_jobset(sim: SimProcess, name: str) -> None:
    obj = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name},
        "spec": {
            "replicatedJobs": [
                {
                    "name": "w",
                    "template": {
                        "spec": {
                            "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}
                        }
                    },
                }
            ]
        },
    }
    sim.kubectl("apply", "-f", "-", input=yaml.safe_dump(obj))


def test_certificates_rotate_before_expiry_without_failing_admission(
    sim: SimProcess, rotating: HarnessProcess
) -> None:
    data = secret_data(sim)
    ca = data["ca.crt"]
    assert ca_bundles(sim) == {base64.b64encode(ca).decode()}
    first = served_cert(rotating.webhook_port, ca)
    assert first.serial_number == x509.load_pem_x509_certificate(data["tls.crt"]).serial_number
    serials = {first.serial_number}
    deadline = time.monotonic() + 20
    i = 0
    while time.monotonic() < deadline:
        create_jobset(sim, f"during-rotation-{i}")  # fails loudly if admission breaks
        i += 1
        cert = served_cert(rotating.webhook_port, ca)
        assert cert.not_valid_after_utc.timestamp() > time.time(), "served an expired cert"
        serials.add(cert.serial_number)
        time.sleep(0.5)
    assert len(serials) >= 3, "expected several rotations in 20 s of 8 s certificates"
    # The CA outlives the serving certificates: the published bundle did not change.
    assert secret_data(sim)["ca.crt"] == ca
    assert ca_bundles(sim) == {base64.b64encode(ca).decode()}


def test_a_wiped_ca_bundle_is_injected_again(sim: SimProcess, rotating: HarnessProcess) -> None:
    patch = json.dumps(
        [{"op": "replace", "path": "/webhooks/0/clientConfig/caBundle", "value": ""}]
    )
    sim.kubectl(
        "patch",
        "validatingwebhookconfiguration",
        "jobset-validating-webhook-configuration",
        "--type=json",
        "-p",
        patch,
    )
    ca = base64.b64encode(secret_data(sim)["ca.crt"]).decode()
    deadline = time.monotonic() + 10
    while ca_bundles(sim) != {ca}:
        assert time.monotonic() < deadline, "caBundle not restored"
        time.sleep(0.2)
    create_jobset(sim, "after-wipe")
