"""TLS material and server settings shared by every HTTPS server of the project.

Three servers speak TLS: the simulated API server (`sim/`), the admission webhook server
(`webhooks/`) and, with `--metrics-secure`, the metrics server (`runtime/health.py`). They
need the same things - a CA, serving certificates signed by it, and one way of configuring
an `ssl.SSLContext` - and `sim` must not import the controller side nor the other way round,
so both import this module, which depends on nothing of the project.

Certificates: EC P-256 keys (generated in a millisecond, which matters because every test
cluster and every rotation makes fresh ones; Go's crypto/x509 and OpenSSL accept them), with
the extensions strict verifiers insist on (key usage, subject/authority key identifiers,
SANs rather than a CN-only name). They are back-dated a few minutes so a peer whose clock
lags does not see them as "not yet valid".

Server settings (`server_context`): TLS 1.2 or 1.3 only; TLS 1.2 with forward-secret AEAD
suites only (Mozilla "intermediate": every Go client - kube-apiserver, Prometheus, kubectl -
offers them); ALPN announces only http/1.1, so Go clients that offer h2 first fall back
cleanly to the protocol aiohttp speaks.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import shutil
import ssl
import tempfile
from pathlib import Path
from typing import Any, Final

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = [
    "CLOCK_SKEW",
    "TLS12_CIPHERS",
    "ServingCert",
    "client_context",
    "issue_client_cert",
    "issue_serving_cert",
    "key_pem",
    "load_cert_chain",
    "load_key",
    "make_ca",
    "not_after",
    "peer_common_name",
    "require_client_certs",
    "self_signed",
    "server_context",
    "spki",
]

# TLS 1.2 suites: ECDHE key exchange with AES-GCM or ChaCha20-Poly1305. No CBC, no SHA-1
# MAC, no RC4/3DES, no static-RSA exchange. TLS 1.3 suites are all AEAD and unaffected.
TLS12_CIPHERS: Final = "ECDHE+AESGCM:ECDHE+CHACHA20"
CLOCK_SKEW: Final = dt.timedelta(minutes=5)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    """A private key as unencrypted PKCS#8 PEM (what Kubernetes Secrets of type TLS hold)."""
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def load_key(pem: bytes) -> ec.EllipticCurvePrivateKey:
    """An EC private key from PEM (ValueError for anything else)."""
    key = serialization.load_pem_private_key(pem, password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError("expected an EC private key")
    return key


def spki(public_key: Any) -> bytes:
    """A public key's canonical bytes, to tell whether a key belongs to a certificate."""
    der: bytes = public_key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return der


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def make_ca(
    common_name: str,
    validity: dt.timedelta,
    *,
    organization: str | None = None,
    now: dt.datetime | None = None,
) -> tuple[bytes, bytes]:
    """A self-signed CA that signs serving certificates only: (certificate PEM, key PEM)."""
    now = now or _now()
    key = ec.generate_private_key(ec.SECP256R1())
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attrs.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    name = x509.Name(attrs)
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW)
        .not_valid_after(now + validity)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .add_extension(ski, critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False
        )
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem(key)


def issue_serving_cert(
    ca_cert_pem: bytes,
    ca_key_pem: bytes,
    hosts: list[str],
    validity: dt.timedelta,
    *,
    now: dt.datetime | None = None,
) -> tuple[bytes, bytes]:
    """A server certificate for `hosts` (DNS names and IP addresses) signed by the CA:
    (certificate PEM, key PEM).

    Clients check the address they dialled against the SANs, so every name the server is
    reached by must be listed. The certificate never outlives its CA: a chain whose CA
    expired first is useless.
    """
    if not hosts:
        raise ValueError("a serving certificate needs at least one host")
    now = now or _now()
    ca_cert = x509.load_pem_x509_certificate(ca_cert_pem)
    ca_key = load_key(ca_key_pem)
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = []
    for host in hosts:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            sans.append(x509.DNSName(host))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW)
        .not_valid_after(min(now + validity, ca_cert.not_valid_after_utc))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem(key)


def issue_client_cert(
    ca_cert_pem: bytes,
    ca_key_pem: bytes,
    common_name: str,
    validity: dt.timedelta,
    *,
    organizations: tuple[str, ...] = (),
    now: dt.datetime | None = None,
) -> tuple[bytes, bytes]:
    """A client certificate signed by the CA: (certificate PEM, key PEM).

    Kubernetes reads a client certificate's identity as user = CN, groups = O (one per
    organization), which is how a webhook server that verifies its callers sees the API
    server (`kube-apiserver`). Extended key usage clientAuth only: it cannot serve.
    """
    now = now or _now()
    ca_cert = x509.load_pem_x509_certificate(ca_cert_pem)
    ca_key = load_key(ca_key_pem)
    key = ec.generate_private_key(ec.SECP256R1())
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(attrs))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW)
        .not_valid_after(min(now + validity, ca_cert.not_valid_after_utc))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem(key)


def require_client_certs(ctx: ssl.SSLContext, ca_pem: bytes | str) -> None:
    """Make a server context refuse, during the handshake, any client that does not present
    a certificate chaining to `ca_pem` (one or more PEM certificates)."""
    text = ca_pem.decode() if isinstance(ca_pem, bytes) else ca_pem
    if "-----BEGIN CERTIFICATE-----" not in text:
        raise ValueError("the client CA bundle holds no PEM certificate")
    ctx.load_verify_locations(cadata=text)
    ctx.verify_mode = ssl.CERT_REQUIRED


def peer_common_name(peercert: Any) -> str | None:
    """The subject CN of a verified peer certificate (`SSLObject.getpeercert()`), or None."""
    if not isinstance(peercert, dict):
        return None
    for rdn in peercert.get("subject") or ():
        for key, value in rdn:
            if key == "commonName":
                return str(value)
    return None


def self_signed(
    hosts: list[str], validity: dt.timedelta = dt.timedelta(days=365)
) -> tuple[bytes, bytes, bytes]:
    """A throw-away CA and a serving certificate for `hosts`: (CA PEM, certificate PEM, key
    PEM). What controller-runtime's secure metrics server makes in memory when it is given no
    certificate directory; clients either skip verification or trust the returned CA."""
    if not hosts:
        raise ValueError("a serving certificate needs at least one host")
    ca_cert, ca_key = make_ca(f"{hosts[0]}-ca@{int(_now().timestamp())}", validity)
    cert, key = issue_serving_cert(ca_cert, ca_key, hosts, validity)
    return ca_cert, cert, key


def not_after(cert_pem: bytes) -> dt.datetime:
    """Expiry of the first certificate in `cert_pem`."""
    return x509.load_pem_x509_certificate(cert_pem).not_valid_after_utc


def load_cert_chain(ctx: ssl.SSLContext, cert_pem: bytes, key_pem: bytes) -> None:
    """Load a certificate and key given as PEM bytes into `ctx`.

    `ssl.SSLContext.load_cert_chain` only reads files, so the PEMs go through a private
    directory (mode 0700, key file 0600) that is removed before returning. OpenSSL copies the
    certificate into each new connection, so loading into a context that is serving swaps
    the certificate for new handshakes while open connections keep theirs.
    """
    tmp = Path(tempfile.mkdtemp(prefix="jobset-tls-"))
    try:
        os.chmod(tmp, 0o700)
        cert_file, key_file = tmp / "tls.crt", tmp / "tls.key"
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key_pem)
        cert_file.write_bytes(cert_pem)
        ctx.load_cert_chain(cert_file, key_file)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def server_context(cert_pem: bytes | None = None, key_pem: bytes | None = None) -> ssl.SSLContext:
    """An `ssl.SSLContext` for an HTTPS server with the settings of the module docstring,
    presenting `cert_pem`/`key_pem` when given (else load one later: `load_cert_chain`)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_ciphers(TLS12_CIPHERS)
    ctx.set_alpn_protocols(["http/1.1"])
    if cert_pem is not None and key_pem is not None:
        load_cert_chain(ctx, cert_pem, key_pem)
    return ctx


def client_context(ca_pem: bytes | str) -> ssl.SSLContext:
    """A client context that trusts only `ca_pem` (one or more PEM certificates) and checks
    the server's name, as kube-apiserver does when it calls a webhook with a `caBundle`."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.check_hostname = True
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.load_verify_locations(cadata=ca_pem.decode() if isinstance(ca_pem, bytes) else ca_pem)
    return ctx


class ServingCert:
    """The certificate a server presents, replaceable while it serves (rotation, or
    cert-manager renewing mounted files): `update` reloads the one `SSLContext` in place."""

    def __init__(self) -> None:
        self.context = server_context()
        self.cert_pem: bytes | None = None
        self.not_after: float = 0.0
        self.loaded_at: float = 0.0

    def update(self, cert_pem: bytes, key_pem: bytes) -> bool:
        """Serve this certificate from the next handshake on; False if it is the current one.

        Raises `ssl.SSLError`/`ValueError` for a certificate and key that do not go together
        or do not parse; the previous certificate then stays in service.
        """
        if cert_pem == self.cert_pem:
            return False
        expiry = not_after(cert_pem).timestamp()
        load_cert_chain(self.context, cert_pem, key_pem)
        self.cert_pem = cert_pem
        self.not_after = expiry
        self.loaded_at = _now().timestamp()
        return True

    def problem(self) -> str | None:
        """Why this server cannot serve TLS now (None: it can)."""
        if self.cert_pem is None:
            return "no serving certificate yet"
        if _now().timestamp() >= self.not_after:
            return "serving certificate expired"
        return None

    def close(self) -> None:
        """Nothing is kept on disk; kept so callers can release it like other resources."""
