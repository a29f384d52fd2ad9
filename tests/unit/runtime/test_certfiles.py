"""CertFiles: certificate files loaded at start, waited for when they are not there yet."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from jobset.runtime.certfiles import CertFiles
from jobset.runtime.metrics import RuntimeMetrics
from kubeutil import tls


def _write(directory: Path) -> bytes:
    _, cert, key = tls.self_signed(["localhost"])
    (directory / "tls.key").write_bytes(key)
    (directory / "tls.crt").write_bytes(cert)
    return cert


async def test_start_loads_the_files(tmp_path: Path) -> None:
    cert = _write(tmp_path)
    files = CertFiles(tmp_path, tls.ServingCert(), interval=0.05)
    await files.start()
    assert files.serving.cert_pem == cert and files.serving.problem() is None
    await files.stop()


async def test_missing_files_fail_at_once_by_default(tmp_path: Path) -> None:
    files = CertFiles(tmp_path, tls.ServingCert(), interval=0.05)
    with pytest.raises(FileNotFoundError):
        await files.start()


async def test_start_waits_for_files_that_appear_later(tmp_path: Path) -> None:
    """cert-manager writes the Secret after the pod started: the server waits for it."""
    files = CertFiles(tmp_path, tls.ServingCert(), interval=0.05)
    starting = asyncio.create_task(files.start(wait=None))
    await asyncio.sleep(0.3)
    assert not starting.done() and files.serving.problem() == "no serving certificate yet"
    cert = _write(tmp_path)
    await asyncio.wait_for(starting, 5)
    assert files.serving.cert_pem == cert
    await files.stop()


async def test_a_bounded_wait_ends_with_the_last_error(tmp_path: Path) -> None:
    files = CertFiles(tmp_path, tls.ServingCert(), interval=0.05)
    with pytest.raises(FileNotFoundError):
        await asyncio.wait_for(files.start(wait=0.2), 5)


async def test_reads_and_read_errors_are_counted_as_certwatcher_does(tmp_path: Path) -> None:
    """controller-runtime's certwatcher_read_certificate_total / _errors_total: every load
    counts, the ones that fail (here a certificate that is not the key's) count as errors,
    and the certificate served before stays in service."""
    metrics = RuntimeMetrics(CollectorRegistry())
    cert = _write(tmp_path)
    files = CertFiles(tmp_path, tls.ServingCert(), interval=0.05, metrics=metrics)
    await files.start()
    reads = metrics.certwatcher_read_certificate_total
    errors = metrics.certwatcher_read_certificate_errors_total
    try:
        await asyncio.sleep(0.3)  # a few polls
        assert reads._value.get() >= 3 and errors._value.get() == 0
        _, other_cert, _ = tls.self_signed(["localhost"])
        (tmp_path / "tls.crt").write_bytes(other_cert)  # not the key's certificate
        before = errors._value.get()
        await asyncio.sleep(0.3)
        assert errors._value.get() > before
        assert files.serving.cert_pem == cert
    finally:
        await files.stop()
