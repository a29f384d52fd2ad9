"""The webhook server's TLS settings, as the API server (and a scanner) sees them.

- TLS 1.2 is the minimum: a client limited to TLS 1.0/1.1 is refused by the server.
- Only modern suites for TLS 1.2: forward-secret AEAD (ECDHE with AES-GCM or ChaCha20).
  RC4, 3DES, CBC with SHA-1 - and CBC at all, and static-RSA key exchange - are refused.
- Certificates rotate without downtime under continuous load: the same harness as
  `tests/integration/webhooks/test_certs.py` (8 s certificates, rotated 4 s before expiry),
  whose rotation test sends one request at a time; here several clients hammer the webhook
  on fresh TLS connections (verifying the chain against the caBundle and the Service name)
  while JobSets are admitted through the API server, and not one request may fail.
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
import time
import urllib.request
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from cryptography import x509

from jobset.api import constants as c
from kubesim.process import SimProcess, start_sim
from tests.integration.placement.process import HarnessProcess, start_harness
from tests.integration.webhooks.test_certs import create_jobset, secret_data, served_cert

pytestmark = pytest.mark.timeout(240)
SERVER_NAME = "jobset-webhook-service.jobset-system.svc"


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


def _handshake(port: int, ctx: ssl.SSLContext) -> tuple[str, str]:
    """(protocol, cipher) the server agreed to; raises ssl.SSLError if it refused."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname=SERVER_NAME) as tls:
            cipher = tls.cipher()
            assert cipher is not None
            return str(tls.version()), cipher[0]


def _client(
    ciphers: str = "DEFAULT",
    lo: ssl.TLSVersion = ssl.TLSVersion.TLSv1_2,
    hi: ssl.TLSVersion = ssl.TLSVersion.TLSv1_2,
) -> ssl.SSLContext:  # fmt: skip
    """A client as permissive as OpenSSL allows: it offers what the test says, nothing is
    refused on its side (security level 0), the certificate is not the point here."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_ciphers(f"{ciphers}:@SECLEVEL=0")
    ctx.minimum_version, ctx.maximum_version = lo, hi
    return ctx


def test_tls_1_1_is_refused_and_1_2_accepted(rotating: HarnessProcess) -> None:
    port = rotating.webhook_port
    assert _handshake(port, _client())[0] == "TLSv1.2"
    assert _handshake(port, _client(hi=ssl.TLSVersion.MAXIMUM_SUPPORTED))[0] == "TLSv1.3"
    with warnings.catch_warnings():  # TLS 1.0/1.1 are deprecated: that is the point
        warnings.simplefilter("ignore", DeprecationWarning)
        old = _client(lo=ssl.TLSVersion.TLSv1, hi=ssl.TLSVersion.TLSv1_1)
    with pytest.raises(ssl.SSLError) as refused:
        _handshake(port, old)
    assert _refused_by_server(refused.value), refused.value


def _refused_by_server(err: ssl.SSLError) -> bool:
    """The server hung up on (or sent an alert to) a ClientHello this client did send - as
    opposed to this client's OpenSSL refusing to offer it (NO_PROTOCOLS/CIPHERS_AVAILABLE)."""
    return isinstance(err, ssl.SSLEOFError) or "ALERT" in str(err).upper()


MODERN = ("ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384",
          "ECDHE-ECDSA-CHACHA20-POLY1305")  # fmt: skip
WEAK = (
    "ECDHE-ECDSA-AES128-SHA",  # CBC, SHA-1
    "ECDHE-ECDSA-AES256-SHA",  # CBC, SHA-1
    "ECDHE-ECDSA-AES128-SHA256",  # CBC
    "ECDHE-ECDSA-AES256-SHA384",  # CBC
    "AES128-SHA",  # static RSA, CBC, SHA-1
    "AES128-GCM-SHA256",  # static RSA (no forward secrecy)
    "DES-CBC3-SHA",  # 3DES
    "ECDHE-ECDSA-DES-CBC3-SHA",  # 3DES
    "RC4-SHA",  # RC4
    "ECDHE-ECDSA-RC4-SHA",  # RC4
)


def test_only_modern_tls_1_2_suites_are_accepted(rotating: HarnessProcess) -> None:
    port = rotating.webhook_port
    for suite in MODERN:
        assert _handshake(port, _client(suite)) == ("TLSv1.2", suite)
    tried = []
    for suite in WEAK:
        try:
            ctx = _client(suite)
        except ssl.SSLError:
            continue  # this OpenSSL cannot even offer it (RC4 and 3DES are compiled out)
        tried.append(suite)
        with pytest.raises(ssl.SSLError) as refused:
            got = _handshake(port, ctx)
            raise AssertionError(f"the server agreed to {got} when offered only {suite}")
        assert _refused_by_server(refused.value), (suite, refused.value)
    # The CBC suites at least are offerable by any OpenSSL: the check above was not vacuous.
    assert {"ECDHE-ECDSA-AES128-SHA", "ECDHE-ECDSA-AES128-SHA256"} <= set(tried), tried


REVIEW: dict[str, Any] = {
    "apiVersion": "admission.k8s.io/v1",
    "kind": "AdmissionReview",
    "request": {
        "uid": "",
        "kind": {"group": "jobset.x-k8s.io", "version": "v1alpha2", "kind": "JobSet"},
        "resource": {"group": "jobset.x-k8s.io", "version": "v1alpha2", "resource": "jobsets"},
        "operation": "CREATE",
        "namespace": "default",
        "name": "load",
        "object": {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": {"name": "load", "namespace": "default"},
            "spec": {"replicatedJobs": []},
        },
    },
}


@pytest.mark.soak  # webhooks/test_certs rotates under admission in make test
def test_rotation_under_continuous_load_fails_no_request(
    sim: SimProcess, rotating: HarnessProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The Service name resolves to this machine (as `jobset dev` points the API server at
    # the controller), so urllib checks the certificate against the real Service name.
    real = socket.getaddrinfo

    def resolve(host: str | None, *args: Any, **kwargs: Any) -> Any:
        return real("127.0.0.1" if host == SERVER_NAME else host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    ca = secret_data(sim)["ca.crt"]
    ctx = ssl.create_default_context(cadata=ca.decode())  # verifies chain and Service name
    url = f"https://{SERVER_NAME}:{rotating.webhook_port}{c.VALIDATING_JOBSET_WEBHOOK_PATH}"
    stop = threading.Event()
    ok = [0]
    failures: list[str] = []
    serials: set[int] = set()
    lock = threading.Lock()

    def direct(worker: int) -> None:
        n = 0
        while not stop.is_set():
            n += 1
            uid = f"w{worker}-{n}"
            body = json.dumps({**REVIEW, "request": {**REVIEW["request"], "uid": uid}})
            req = urllib.request.Request(
                url, data=body.encode(), headers={"Content-Type": "application/json"}
            )
            try:
                # Fresh connection each time (urllib does not keep connections): a handshake
                # per request, so every rotation is met by handshakes in flight.
                with urllib.request.urlopen(req, context=ctx, timeout=15) as resp:
                    got = json.loads(resp.read())
                assert got["response"]["uid"] == uid, got
                with lock:
                    ok[0] += 1
            except Exception as err:
                with lock:
                    failures.append(f"{uid}: {err!r}")

    def watcher() -> None:
        while not stop.is_set():
            try:
                cert = served_cert(rotating.webhook_port, ca)
                assert cert.not_valid_after_utc.timestamp() > time.time(), "expired cert"
                with lock:
                    serials.add(cert.serial_number)
            except Exception as err:
                with lock:
                    failures.append(f"served cert: {err!r}")
            time.sleep(0.3)

    threads = [threading.Thread(target=direct, args=(i,)) for i in range(4)]
    threads.append(threading.Thread(target=watcher))
    for t in threads:
        t.start()
    admitted = 0
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            create_jobset(sim, f"under-load-{admitted}")  # through the API server
            admitted += 1
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    print(f"{ok[0]} direct requests, {admitted} admitted JobSets, {len(serials)} certificates")
    assert not failures, failures[:10]
    assert len(serials) >= 3, "expected several rotations in 20 s of 8 s certificates"
    assert ok[0] >= 40 and admitted >= 5, (ok[0], admitted)
    assert secret_data(sim)["ca.crt"] == ca  # the caBundle stayed valid throughout
    first = x509.load_pem_x509_certificate(secret_data(sim)["tls.crt"])
    assert first.not_valid_after_utc.timestamp() > time.time()
