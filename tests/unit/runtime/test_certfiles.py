"""CertFiles: certificate files loaded at start, waited for when they are not there yet."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from jobset.runtime.certfiles import CertFiles
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
