"""TLS material for the simulated cluster: a CA, serving certificates, SSL contexts, kubeconfig.

The simulated API server serves HTTPS by default so that kubectl, Helm and kubernetes_asyncio
verify it exactly as they would verify a real cluster (no `insecure-skip-tls-verify`), and it
calls admission webhooks over HTTPS checked against their `caBundle`. Keys are EC P-256: they
are generated in milliseconds, which matters because every test cluster makes fresh ones.

Certificates carry the extensions strict verifiers insist on (key usage, subject/authority key
identifiers, SANs rather than a CN-only name) so Go's crypto/x509 and OpenSSL's strict mode
accept them.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import os
import secrets
import ssl
import tempfile
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = [
    "client_ssl_context",
    "make_ca",
    "make_serving_cert",
    "new_token",
    "server_ssl_context",
    "write_kubeconfig",
]

# Certificates are back-dated a little so that a client whose clock is slightly behind the
# server's does not reject a certificate that is "not yet valid".
_CLOCK_SKEW = dt.timedelta(minutes=5)


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _load_key(key_pem: bytes) -> ec.EllipticCurvePrivateKey:
    key = serialization.load_pem_private_key(key_pem, password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError("expected an EC private key")
    return key


def make_ca(common_name: str, days: int = 3650) -> tuple[bytes, bytes]:
    """A self-signed CA certificate and its private key, both PEM."""
    key = _new_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = dt.datetime.now(dt.UTC)
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _CLOCK_SKEW)
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(ski, critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False
        )
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def make_serving_cert(
    ca_cert_pem: bytes, ca_key_pem: bytes, hosts: list[str], days: int = 365
) -> tuple[bytes, bytes]:
    """A server certificate signed by the CA, valid for `hosts` (DNS names and IP addresses).

    Clients check the address they dialled against the SANs, so every name the server will
    be reached by (`localhost`, `127.0.0.1`, a webhook Service's DNS name) must be listed.
    """
    if not hosts:
        raise ValueError("a serving certificate needs at least one host")
    ca_cert = x509.load_pem_x509_certificate(ca_cert_pem)
    ca_key = _load_key(ca_key_pem)
    key = _new_key()
    sans: list[x509.GeneralName] = []
    for host in hosts:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            sans.append(x509.DNSName(host))
    now = dt.datetime.now(dt.UTC)
    ca_ski = ca_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _CLOCK_SKEW)
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def server_ssl_context(cert_pem: bytes, key_pem: bytes) -> ssl.SSLContext:
    """An SSL context for an HTTPS server presenting this certificate.

    The `ssl` module only loads certificate chains from files, so the PEMs go through a
    private temporary directory that is removed before returning.
    """
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    # Go clients (kubectl, Helm) offer h2 first; announcing only http/1.1 makes them fall back
    # cleanly to the protocol the server speaks.
    ctx.set_alpn_protocols(["http/1.1"])
    with tempfile.TemporaryDirectory(prefix="jobset-sim-tls-") as tmp:
        cert_file = Path(tmp) / "tls.crt"
        key_file = Path(tmp) / "tls.key"
        cert_file.write_bytes(cert_pem)
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key_pem)
        ctx.load_cert_chain(str(cert_file), str(key_file))
    return ctx


def client_ssl_context(ca_pem: bytes | str) -> ssl.SSLContext:
    """An SSL context that trusts only `ca_pem` (one or more PEM certificates) and checks the
    server's hostname, as the API server does when it calls a webhook with a `caBundle`."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.check_hostname = True
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.load_verify_locations(cadata=ca_pem.decode() if isinstance(ca_pem, bytes) else ca_pem)
    return ctx


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
