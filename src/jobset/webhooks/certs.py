"""Self-signed TLS material for the webhook server: a CA, a serving certificate, and checks.

The API server only talks to admission webhooks over HTTPS and verifies them against the
`caBundle` of the webhook configuration, so the controller needs a certificate for its
Service name (`<service>.<namespace>.svc`) signed by a CA it can publish. Upstream gets both
from open-policy-agent's cert-controller; this module is the pure part of our equivalent
(the Secret and the injection live in `certcontroller.py`): make a CA, sign a serving
certificate, and decide whether stored material is still good enough to serve.

The certificate generation itself lives in `kubeutil.tls`, shared with the simulated API
server and the metrics server. Validity and the rotation look-ahead are parameters so tests
can watch a rotation happen in seconds; the defaults are upstream's (10 years, rotate 90 days
before expiry).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from cryptography import x509
from cryptography.exceptions import InvalidSignature

from kubeutil import tls
from kubeutil.tls import load_key as _load_key
from kubeutil.tls import not_after
from kubeutil.tls import spki as _spki

__all__ = [
    "CA_CERT_KEY",
    "CA_KEY_KEY",
    "DEFAULT_LOOKAHEAD",
    "DEFAULT_VALIDITY",
    "TLS_CERT_KEY",
    "TLS_KEY_KEY",
    "CertBundle",
    "issue_bundle",
    "issue_serving_cert",
    "make_ca",
    "not_after",
]

# Keys of the Secret holding the material, as cert-controller and cert-manager write them.
CA_CERT_KEY: Final = "ca.crt"
CA_KEY_KEY: Final = "ca.key"
TLS_CERT_KEY: Final = "tls.crt"
TLS_KEY_KEY: Final = "tls.key"

DEFAULT_VALIDITY: Final = dt.timedelta(days=3650)
DEFAULT_LOOKAHEAD: Final = dt.timedelta(days=90)
CA_NAME: Final = "jobset-ca"
CA_ORGANIZATION: Final = "jobset"


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def make_ca(
    validity: dt.timedelta = DEFAULT_VALIDITY, *, now: dt.datetime | None = None
) -> tuple[bytes, bytes]:
    """A self-signed CA (certificate PEM, key PEM) named like upstream's (`jobset-ca`)."""
    return tls.make_ca(CA_NAME, validity, organization=CA_ORGANIZATION, now=now)


def issue_serving_cert(
    ca_cert_pem: bytes,
    ca_key_pem: bytes,
    dns_names: list[str],
    validity: dt.timedelta = DEFAULT_VALIDITY,
    *,
    now: dt.datetime | None = None,
) -> tuple[bytes, bytes]:
    """A serving certificate for `dns_names` signed by the CA (certificate PEM, key PEM);
    it never outlives its CA."""
    if not dns_names:
        raise ValueError("a serving certificate needs at least one DNS name")
    return tls.issue_serving_cert(ca_cert_pem, ca_key_pem, dns_names, validity, now=now)


@dataclass(frozen=True)
class CertBundle:
    """The four PEM blobs kept in the Secret."""

    ca_cert: bytes
    ca_key: bytes
    cert: bytes
    key: bytes

    @classmethod
    def from_secret_data(cls, data: dict[str, bytes]) -> CertBundle | None:
        """The bundle in decoded Secret data, or None when a key is missing or empty."""
        parts = [data.get(k) for k in (CA_CERT_KEY, CA_KEY_KEY, TLS_CERT_KEY, TLS_KEY_KEY)]
        if not all(parts):
            return None
        ca_cert, ca_key, cert, key = (p for p in parts if p is not None)
        return cls(ca_cert, ca_key, cert, key)

    def secret_data(self) -> dict[str, bytes]:
        return {
            CA_CERT_KEY: self.ca_cert,
            CA_KEY_KEY: self.ca_key,
            TLS_CERT_KEY: self.cert,
            TLS_KEY_KEY: self.key,
        }

    def problem(
        self,
        dns_name: str | Sequence[str],
        lookahead: dt.timedelta = DEFAULT_LOOKAHEAD,
        *,
        now: dt.datetime | None = None,
    ) -> str | None:
        """Why this bundle must be replaced (None: it is good to serve for `lookahead`).

        Checks what an API server would check when calling the webhook (the chain, the
        name, the validity window) plus that the key matches the certificate, and treats a
        certificate expiring within `lookahead` as already bad, so it is replaced early.
        `dns_name` may be several names, all of which the certificate must be valid for (a
        name added by an upgrade gets a certificate that has it).
        """
        now = now or _now()
        try:
            ca = x509.load_pem_x509_certificate(self.ca_cert)
            cert = x509.load_pem_x509_certificate(self.cert)
            ca_key = _load_key(self.ca_key)
            key = _load_key(self.key)
        except ValueError as exc:
            return f"unreadable: {exc}"
        if _spki(ca_key.public_key()) != _spki(ca.public_key()):
            return "CA key does not match the CA certificate"
        if _spki(key.public_key()) != _spki(cert.public_key()):
            return "key does not match the certificate"
        try:
            cert.verify_directly_issued_by(ca)
        except (ValueError, TypeError, InvalidSignature):
            return "certificate is not signed by the CA"
        horizon = now + lookahead
        for what, c in (("CA", ca), ("certificate", cert)):
            if c.not_valid_before_utc > now:
                return f"{what} is not valid yet"
            if c.not_valid_after_utc <= horizon:
                return f"{what} expires at {c.not_valid_after_utc.isoformat()}"
        try:
            sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
        except x509.ExtensionNotFound:
            return "certificate has no subject alternative names"
        names = sans.value.get_values_for_type(x509.DNSName)
        for wanted in [dns_name] if isinstance(dns_name, str) else dns_name:
            if wanted not in names:
                return f"certificate is not valid for {wanted}"
        return None

    def expires(self) -> dt.datetime:
        """When this bundle stops being servable: the earlier of the two expiries."""
        return min(not_after(self.cert), not_after(self.ca_cert))


def _first_pem(pem: bytes) -> bytes:
    """The first certificate of a PEM bundle (the current CA; older ones may follow)."""
    end = b"-----END CERTIFICATE-----"
    cut = pem.find(end)
    return pem if cut < 0 else pem[: cut + len(end)] + b"\n"


def issue_bundle(
    dns_names: list[str],
    validity: dt.timedelta = DEFAULT_VALIDITY,
    *,
    ca_validity: dt.timedelta | None = None,
    reuse_ca: CertBundle | None = None,
    lookahead: dt.timedelta = DEFAULT_LOOKAHEAD,
    now: dt.datetime | None = None,
) -> CertBundle:
    """A fresh serving certificate, signed by `reuse_ca`'s CA when that CA is still good for
    longer than `lookahead` (so the published caBundle stays the same), else by a new CA.

    When the CA is replaced, the old CA certificate - if still valid - stays in `ca_cert`
    after the new one: the published caBundle then trusts both, so replicas still serving
    a certificate of the old CA keep answering while they pick up the new one.
    """
    now = now or _now()
    ca_cert: bytes | None = None
    ca_key: bytes | None = None
    previous = b""
    if reuse_ca is not None:
        try:
            ca = x509.load_pem_x509_certificate(reuse_ca.ca_cert)
            _load_key(reuse_ca.ca_key)
        except ValueError:
            ca = None
        if ca is not None and ca.not_valid_after_utc > now + lookahead:
            ca_cert, ca_key = reuse_ca.ca_cert, reuse_ca.ca_key
        elif ca is not None and ca.not_valid_after_utc > now:
            previous = _first_pem(reuse_ca.ca_cert)
    if ca_cert is None or ca_key is None:
        fresh_cert, ca_key = make_ca(ca_validity or validity, now=now)
        ca_cert = fresh_cert + previous
    cert, key = issue_serving_cert(_first_pem(ca_cert), ca_key, dns_names, validity, now=now)
    return CertBundle(ca_cert, ca_key, cert, key)
