"""Calling an admission webhook as kube-apiserver does: where the call goes (a URL, or a
Service resolved to an endpoint, a pod's through `pod_host`), TLS with the webhook's CA
bundle and the cluster's client certificate, the AdmissionReview POST, and the checks of the
answer (upstream's VerifyAdmissionResponse). Failures are `CallError`s worded as
kube-apiserver words them; the webhook's failurePolicy (`admission.py`) decides what they do.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import errno
import re
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

import orjson

from kubesim.apiserver import certs
from kubesim.apiserver.core.store import Store
from kubesim.apiserver.core.webhookconfig import Webhook
from kubesim.apiserver.core.webhookhttp import (
    Endpoint,
    HttpPool,
    ProtocolError,
    request_bytes,
)

__all__ = [
    "CallError",
    "PodHost",
    "ServiceEndpoint",
    "ServiceResolver",
    "ServiceUnavailable",
    "WebhookClient",
]

_MAX_ERROR_BODY = 512
# Connections kept to one webhook server. A call finding all of them busy waits for one
# (within the webhook's timeout) rather than dialling: a burst of pod creations otherwise
# opened a TLS connection per pod in flight, and the handshakes on both sides cost more
# than the calls. A webhook server answers from one event loop, so more connections than
# this only queue there.
CONNECTIONS_PER_HOST = 16
IDLE_TIMEOUT = 30.0  # seconds an unused connection is kept


class ServiceUnavailable(Exception):
    """A Service cannot be reached; the message is what kube-apiserver reports."""


# How an endpoint address of a pod is dialled: given the pod and its IP, the host to connect
# to (the host itself for simulated pods, which listen nowhere; the IP for real ones).
PodHost = Callable[[Mapping[str, Any], str], str]


class ServiceEndpoint(Protocol):
    """Where a call to a Service goes."""

    @property
    def host(self) -> str: ...
    @property
    def port(self) -> int: ...


class ServiceResolver(Protocol):
    """Resolves `service <namespace>/<name>` port `port` to an endpoint to dial, or raises
    ServiceUnavailable with kube-apiserver's wording."""

    def __call__(
        self, store: Store, namespace: str, name: str, port: int, *, pod_host: PodHost
    ) -> ServiceEndpoint: ...


class CallError(Exception):
    """The webhook could not be called or answered nonsense (kube-apiserver's
    ErrCallingWebhook): the webhook's failurePolicy decides whether the request fails."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class _Target:
    """Where a call goes: `display` is the URL as kube-apiserver prints it in errors, then the
    host and port actually dialled (different for services), the path with its query, the
    TLS name to verify (None: the dialled host) and the Host header."""

    display: str
    scheme: str
    host: str
    port: int
    path: str
    server_hostname: str | None
    host_header: str


def _url_target(url: str, timeout: str) -> _Target:
    display = f"{url}{'&' if '?' in url else '?'}{timeout}"
    parts = urlsplit(display)
    host = parts.hostname or ""
    try:
        port = parts.port or (80 if parts.scheme == "http" else 443)
    except ValueError as exc:  # a port out of range or not a number
        raise CallError(f'failed to call webhook: Post "{display}": {exc}') from None
    path = parts.path or "/"
    if parts.query:
        path = f"{path}?{parts.query}"
    netloc = parts.netloc.rpartition("@")[2]
    return _Target(display, parts.scheme, host, port, path, None, netloc)


def _go_duration(seconds: float) -> str:
    """A duration as Go's `time.Duration.String()` writes it in the `timeout` query parameter."""
    if seconds == int(seconds):
        return f"{int(seconds)}s"
    return f"{seconds:g}s"


def _tls_reason(err: ssl.SSLCertVerificationError, host: str) -> str:
    """Word a certificate failure as Go's crypto/tls does, since that is what users search for."""
    code = getattr(err, "verify_code", 0)
    if code in (2, 18, 19, 20, 21):  # unknown issuer, self-signed, incomplete chain
        why = "x509: certificate signed by unknown authority"
    elif code == 62:  # hostname mismatch
        why = f"x509: certificate is not valid for {host}"
    elif code in (9, 10):
        why = "x509: certificate has expired or is not yet valid"
    else:
        why = f"x509: {getattr(err, 'verify_message', '') or err}"
    return f"tls: failed to verify certificate: {why}"


def _conn_reason(err: OSError, host: str, port: int) -> str:
    """Word a connection failure as Go's net package does (`dial tcp h:p: connect: ...`)."""
    addr = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if err.errno == errno.ECONNREFUSED:
        return f"dial tcp {addr}: connect: connection refused"
    if isinstance(err, ssl.SSLError):
        return f"remote error: tls: {err.reason or err}"
    text = err.strerror or str(err)
    return f"dial tcp {addr}: {text.lower() if text else 'connect failed'}"


_CONTROL = re.compile(r"[\x00-\x20\x7f]")


def _bad_request_line(text: str) -> bool:
    """Whether a path or Host header would break the request line (Go's url.Parse refuses
    control characters; a space would split the line)."""
    return _CONTROL.search(text) is not None


def _status_message(raw: bytes) -> str:
    """What kube-apiserver reports of a non-200 answer: a Status's message, else the body."""
    try:
        decoded = orjson.loads(raw)
        if isinstance(decoded, dict) and decoded.get("kind") == "Status":
            message = str(decoded.get("message") or "")
            if message:
                return message
    except orjson.JSONDecodeError:
        pass
    text = raw[:_MAX_ERROR_BODY].decode("utf-8", "replace").strip()
    return f'an error on the server ("{text}") has prevented the request from succeeding'


class WebhookClient:
    """Calls webhooks. One connection pool (`webhookhttp.HttpPool`, closed by `close()`)
    keeps connections to webhook servers alive between calls, as kube-apiserver's HTTP/1.1
    client pool does."""

    def __init__(
        self,
        store: Store,
        resolve_service: ServiceResolver,
        pod_host: PodHost,
        client_cert: Callable[[], tuple[bytes, bytes] | None],
    ) -> None:
        self.store = store
        self.resolve_service = resolve_service
        # How a pod endpoint of a webhook Service is dialled: the host for simulated pods,
        # a real pod's IP with a runtime of real pods.
        self.pod_host = pod_host
        # The client certificate (PEM cert, key) presented to every webhook, as
        # kube-apiserver does when --admission-control-config-file gives it one; None: none.
        self.client_cert = client_cert
        self.pool = HttpPool(CONNECTIONS_PER_HOST, idle_timeout=IDLE_TIMEOUT)
        self._ssl: dict[str, ssl.SSLContext] = {}

    async def close(self) -> None:
        self.pool.close()

    def _ssl_context(self, ca_bundle: str) -> ssl.SSLContext:
        ctx = self._ssl.get(ca_bundle)
        if ctx is None:
            if ca_bundle:
                try:
                    pem = base64.b64decode(ca_bundle, validate=True)
                    ctx = certs.client_ssl_context(pem)
                except (binascii.Error, ValueError, ssl.SSLError) as exc:
                    raise CallError(
                        f"could not get REST client: unable to load root certificates: {exc}"
                    ) from None
            else:
                ctx = ssl.create_default_context()
            cert = self.client_cert()
            if cert is not None:
                certs.present_client_cert(ctx, *cert)
            self._ssl[ca_bundle] = ctx
        return ctx

    def _target(self, hook: Webhook) -> _Target:
        cc = hook.client_config
        timeout = f"timeout={_go_duration(hook.timeout)}"
        url = cc.get("url")
        if url:
            return _url_target(str(url), timeout)
        svc = cc.get("service")
        if not isinstance(svc, dict) or not svc.get("name"):
            raise CallError("could not get REST client: webhook has neither a url nor a service")
        name, namespace = str(svc["name"]), str(svc.get("namespace") or "")
        port = int(svc.get("port") or 443)
        path = str(svc.get("path") or "/")
        host = f"{name}.{namespace}.svc"
        display = f"https://{host}:{port}{path}?{timeout}"
        try:
            endpoint = self.resolve_service(
                self.store, namespace, name, port, pod_host=self.pod_host
            )
        except ServiceUnavailable as exc:
            raise CallError(f'failed to call webhook: Post "{display}": {exc}') from None
        dial_host = endpoint.host.strip("[]")
        return _Target(
            display, "https", dial_host, endpoint.port, f"{path}?{timeout}", host, f"{host}:{port}"
        )

    async def post(self, hook: Webhook, version: str, request: dict[str, Any]) -> dict[str, Any]:
        """POST the review and return the decoded, verified `response`."""
        target = self._target(hook)
        prefix = f'failed to call webhook: Post "{target.display}"'
        if _bad_request_line(target.path) or _bad_request_line(target.host_header):
            raise CallError(f"{prefix}: net/url: invalid control character in URL")
        tls = None
        if target.scheme == "https":
            tls = self._ssl_context(str(hook.client_config.get("caBundle") or ""))
        endpoint = Endpoint(target.host, target.port, tls, target.server_hostname)
        # Encoded once, with the request as built (the object is not copied for it).
        body = orjson.dumps(
            {
                "apiVersion": f"admission.k8s.io/{version}",
                "kind": "AdmissionReview",
                "request": request,
            }
        )
        try:
            async with asyncio.timeout(hook.timeout):
                status, raw = await self.pool.post(
                    endpoint, request_bytes(target.host_header, target.path, body)
                )
        except TimeoutError:
            raise CallError(f"{prefix}: context deadline exceeded") from None
        except ssl.SSLCertVerificationError as exc:
            reason = _tls_reason(exc, target.server_hostname or target.host)
            raise CallError(f"{prefix}: {reason}") from None
        except ProtocolError as exc:
            raise CallError(f"{prefix}: {exc}") from None
        except OSError as exc:
            raise CallError(f"{prefix}: {_conn_reason(exc, target.host, target.port)}") from None
        if status != 200:
            raise CallError(f"failed to call webhook: {_status_message(raw)}")
        try:
            review = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise CallError(
                f"failed to call webhook: couldn't get version/kind; json parse error: {exc}"
            ) from None
        return self._verify(hook, version, request["uid"], review)

    def _verify(self, hook: Webhook, version: str, uid: str, review: Any) -> dict[str, Any]:
        """Upstream's VerifyAdmissionResponse, for the review version that was sent."""

        def invalid(why: str) -> CallError:
            return CallError(f"received invalid webhook response: {why}")

        if not isinstance(review, dict):
            raise invalid("expected an AdmissionReview object")
        response = review.get("response")
        if not isinstance(response, dict):
            raise invalid("webhook response was absent")
        if version == "v1":
            if response.get("uid") != uid:
                raise invalid(f'expected response.uid="{uid}", got "{response.get("uid", "")}"')
            api_version, kind = review.get("apiVersion", ""), review.get("kind", "")
            if (api_version, kind) != ("admission.k8s.io/v1", "AdmissionReview"):
                raise invalid(
                    "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, "
                    f"got {api_version}, Kind={kind}"
                )
        patch, patch_type = response.get("patch"), response.get("patchType")
        if hook.mutating:
            if version == "v1":
                if patch and patch_type is None:
                    raise invalid("webhook returned response.patch but not response.patchType")
                if not patch and patch_type is not None:
                    raise invalid("webhook returned response.patchType but not response.patch")
                if patch_type is not None and patch_type != "JSONPatch":
                    raise invalid(f'webhook returned invalid response.patchType of "{patch_type}"')
        elif version == "v1":
            if patch:
                raise invalid("validating webhook may not return response.patch")
            if patch_type is not None:
                raise invalid("validating webhook may not return response.patchType")
        return response
