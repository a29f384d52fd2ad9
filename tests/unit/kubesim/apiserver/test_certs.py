"""TLS material: a real handshake over loopback, certificate contents, and the kubeconfig."""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import os
import ssl
import stat
from pathlib import Path

import pytest
import yaml
from cryptography import x509

from kubesim.apiserver.certs import (
    client_ssl_context,
    make_ca,
    make_serving_cert,
    new_token,
    server_ssl_context,
    write_kubeconfig,
)


@pytest.fixture(scope="module")
def ca() -> tuple[bytes, bytes]:
    return make_ca("jobset-sim-ca")


async def _handshake(
    server_ctx: ssl.SSLContext, client_ctx: ssl.SSLContext, server_hostname: str
) -> bytes:
    """Run an echo server on 127.0.0.1 and send one line through TLS; return the echo."""

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            writer.write(await reader.readline())
            await writer.drain()
        except (ssl.SSLError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0, ssl=server_ctx)
    port = server.sockets[0].getsockname()[1]
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(
                "127.0.0.1", port, ssl=client_ctx, server_hostname=server_hostname
            ),
            timeout=10,
        )
        writer.write(b"ping\n")
        await writer.drain()
        data = await asyncio.wait_for(reader.readline(), timeout=10)
        writer.close()
        return data
    finally:
        server.close()
        await server.wait_closed()


async def test_handshake_verifies_server_by_ip_and_dns(ca: tuple[bytes, bytes]) -> None:
    cert, key = make_serving_cert(*ca, ["localhost", "127.0.0.1"])
    server_ctx = server_ssl_context(cert, key)
    client_ctx = client_ssl_context(ca[0])
    assert await _handshake(server_ctx, client_ctx, "127.0.0.1") == b"ping\n"
    assert await _handshake(server_ctx, client_ctx, "localhost") == b"ping\n"


async def test_handshake_rejects_name_not_in_certificate(ca: tuple[bytes, bytes]) -> None:
    cert, key = make_serving_cert(*ca, ["localhost"])
    with pytest.raises(ssl.SSLCertVerificationError):
        await _handshake(server_ssl_context(cert, key), client_ssl_context(ca[0]), "example.com")


async def test_handshake_rejects_other_ca(ca: tuple[bytes, bytes]) -> None:
    cert, key = make_serving_cert(*ca, ["127.0.0.1"])
    other_ca, _ = make_ca("someone-else")
    with pytest.raises(ssl.SSLCertVerificationError):
        await _handshake(server_ssl_context(cert, key), client_ssl_context(other_ca), "127.0.0.1")


async def test_client_context_accepts_a_bundle(ca: tuple[bytes, bytes]) -> None:
    """A caBundle may hold several certificates; any of them may be the issuer."""
    cert, key = make_serving_cert(*ca, ["127.0.0.1"])
    other_ca, _ = make_ca("someone-else")
    bundle = (other_ca + ca[0]).decode()
    got = await _handshake(server_ssl_context(cert, key), client_ssl_context(bundle), "127.0.0.1")
    assert got == b"ping\n"


def test_certificate_contents(ca: tuple[bytes, bytes]) -> None:
    ca_cert = x509.load_pem_x509_certificate(ca[0])
    assert ca_cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    cert_pem, key_pem = make_serving_cert(*ca, ["localhost", "127.0.0.1", "::1"], days=30)
    cert = x509.load_pem_x509_certificate(cert_pem)
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["localhost"]
    assert san.get_values_for_type(x509.IPAddress) == [
        ipaddress.ip_address("127.0.0.1"),
        ipaddress.ip_address("::1"),
    ]
    assert cert.issuer == ca_cert.subject
    assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    assert 30 <= lifetime.days <= 31
    assert b"PRIVATE KEY" in key_pem


def test_serving_cert_needs_a_host(ca: tuple[bytes, bytes]) -> None:
    with pytest.raises(ValueError):
        make_serving_cert(*ca, [])


def test_write_kubeconfig(tmp_path: Path, ca: tuple[bytes, bytes]) -> None:
    path = tmp_path / "nested" / "dir" / "kubeconfig"
    token = new_token()
    write_kubeconfig(path, "https://127.0.0.1:6443", ca[0], token, namespace="team-a")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    config = yaml.safe_load(path.read_text())
    assert config["apiVersion"] == "v1"
    assert config["kind"] == "Config"
    assert config["current-context"] == "jobset-sim"
    (cluster,) = config["clusters"]
    assert cluster["name"] == "jobset-sim"
    assert cluster["cluster"]["server"] == "https://127.0.0.1:6443"
    assert base64.b64decode(cluster["cluster"]["certificate-authority-data"]) == ca[0]
    (user,) = config["users"]
    assert user == {"name": "admin", "user": {"token": token}}
    (context,) = config["contexts"]
    assert context == {
        "name": "jobset-sim",
        "context": {"cluster": "jobset-sim", "user": "admin", "namespace": "team-a"},
    }
    # Only the kubeconfig is left behind: the temporary file was renamed into place.
    assert os.listdir(path.parent) == ["kubeconfig"]


def test_write_kubeconfig_replaces_existing(tmp_path: Path, ca: tuple[bytes, bytes]) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text("old")
    path.chmod(0o644)
    write_kubeconfig(path, "https://localhost:1", ca[0], "t1", cluster_name="c", context="x")
    config = yaml.safe_load(path.read_text())
    assert config["current-context"] == "x"
    assert config["contexts"][0]["context"]["cluster"] == "c"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_new_token_is_random_and_url_safe() -> None:
    tokens = {new_token() for _ in range(50)}
    assert len(tokens) == 50
    for t in tokens:
        assert len(t) >= 32
        assert set(t) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
