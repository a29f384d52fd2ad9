"""A read-only API connection that starts at once: `jobset get`, `describe` and `tree`.

Those commands make a handful of GETs and print. Loading kubernetes_asyncio and aiohttp (and
the TLS trust store aiohttp reads at import) took most of their time, several times kubectl's
whole run. This client speaks HTTP/1.1 over one kept-alive asyncio stream with the standard
library's `ssl`, from the kubeconfig kubectl would use (`jobset.sdk.kubeconfig`); hand-written
because no HTTP library loads in a fraction of that time.

It covers the kubeconfigs it can serve exactly: a server with a CA (file or data) or
`insecure-skip-tls-verify`, `tls-server-name`, and a bearer token (`token`, `tokenFile`) or
a client certificate (file or data). Anything else (an exec or auth-provider plugin, basic
auth, a proxy, the in-cluster account) is left to `jobset.runtime.client.Client`:
`quick_config` returns None and the caller connects the full way.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlencode, urlsplit

from jobset.runtime.apitypes import ApiError, Object, Resource
from jobset.sdk.kubeconfig import Entry, load_merged

__all__ = ["QuickClient", "QuickConfig", "quick_config"]

_PROXY_VARIABLES: Final = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy")
# What a user entry may hold for this client to serve it as kubectl would.
_USER_KEYS: Final = frozenset(
    {"token", "tokenFile", "client-certificate", "client-certificate-data", "client-key",
     "client-key-data"}
)  # fmt: skip


@dataclass(frozen=True)
class QuickConfig:
    """Where the API server is and how to authenticate to it."""

    scheme: str
    host: str
    port: int
    ssl: ssl.SSLContext | None
    server_hostname: str | None
    token: str


def _path(entry: Entry, key: str) -> str | None:
    value = entry.value.get(key)
    if not value:
        return None
    path = os.path.expanduser(str(value))
    return path if os.path.isabs(path) else os.path.join(os.path.dirname(entry.source), path)


def _ssl_context(cluster: Entry, user: Entry) -> ssl.SSLContext:
    if cluster.value.get("insecure-skip-tls-verify"):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    elif cluster.value.get("certificate-authority-data"):
        pem = base64.b64decode(str(cluster.value["certificate-authority-data"])).decode()
        ctx = ssl.create_default_context(cadata=pem)
    else:
        ctx = ssl.create_default_context(cafile=_path(cluster, "certificate-authority"))
    cert, key = _path(user, "client-certificate"), _path(user, "client-key")
    cert_data = user.value.get("client-certificate-data")
    key_data = user.value.get("client-key-data")
    if cert_data or key_data:
        # `load_cert_chain` reads files only: a private directory, gone once loaded.
        import tempfile

        with tempfile.TemporaryDirectory(prefix="jobset-") as tmp:
            if cert_data:
                cert = os.path.join(tmp, "cert.pem")
                _write_private(cert, base64.b64decode(str(cert_data)))
            if key_data:
                key = os.path.join(tmp, "key.pem")
                _write_private(key, base64.b64decode(str(key_data)))
            if cert:
                ctx.load_cert_chain(cert, key)
    elif cert:
        ctx.load_cert_chain(cert, key)
    return ctx


def _write_private(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def _token(user: Entry) -> str:
    if user.value.get("token"):
        return str(user.value["token"])
    path = _path(user, "tokenFile")
    if path:
        with open(path) as fh:
            return fh.read().strip()
    return ""


def quick_config(kubeconfig: str | None, context: str | None) -> QuickConfig | None:
    """The connection kubectl would make, when this client can make it; else None."""
    if any(os.environ.get(v) for v in _PROXY_VARIABLES):
        return None  # the full client resolves proxies and NO_PROXY as kubectl does
    merged = load_merged(kubeconfig)
    ctx = merged.contexts.get(merged.context_name(context))
    if not merged.files or ctx is None:
        return None
    cluster = merged.clusters.get(str(ctx.get("cluster") or ""))
    user = merged.users.get(str(ctx.get("user") or ""), Entry({}, merged.files[0]))
    if cluster is None or "proxy-url" in cluster.value or set(user.value) - _USER_KEYS:
        return None
    url = urlsplit(str(cluster.value.get("server") or ""))
    if url.scheme not in ("http", "https") or not url.hostname or url.path.strip("/"):
        return None
    tls = url.scheme == "https"
    return QuickConfig(
        scheme=url.scheme,
        host=url.hostname,
        port=url.port or (443 if tls else 80),
        ssl=_ssl_context(cluster, user) if tls else None,
        server_hostname=(str(cluster.value.get("tls-server-name") or "") or url.hostname)
        if tls
        else None,
        token=_token(user),
    )


class QuickClient:
    """GETs and LISTs over one kept-alive connection (the `Client` calls the read-only
    commands make: `request` and `list`)."""

    def __init__(self, config: QuickConfig, user_agent: str) -> None:
        self.config = config
        self.user_agent = user_agent
        self._conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def close(self) -> None:
        if self._conn is not None:
            writer = self._conn[1]
            self._conn = None
            writer.close()
            try:
                await writer.wait_closed()
            except (OSError, ssl.SSLError):
                pass  # the server may drop a TLS connection without a close_notify

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        body: Any = None,
        content_type: str = "application/json",
        request_timeout: float | None = 60.0,
        accept: str = "application/json",
    ) -> Any:
        """Send one request and return its parsed JSON body (None when empty); a non-2xx
        answer raises `ApiError` with the server's Status."""
        target = path + ("?" + urlencode(list(query)) if query else "")
        data = b"" if body is None else (body if isinstance(body, bytes) else _encode(body))
        head = [
            f"{method} {target} HTTP/1.1",
            f"Host: {self.config.host}:{self.config.port}",
            f"User-Agent: {self.user_agent}",
            f"Accept: {accept}",
        ]
        if self.config.token:
            head.append(f"Authorization: Bearer {self.config.token}")
        if body is not None:
            head += [f"Content-Type: {content_type}", f"Content-Length: {len(data)}"]
        raw = ("\r\n".join(head) + "\r\n\r\n").encode() + data
        async with asyncio.timeout(request_timeout or None):
            status, reason, payload = await self._exchange(raw)
        if status >= 400:
            raise _api_error(status, reason, payload)
        return json.loads(payload) if payload else None

    async def list(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        limit: int = 0,
        continue_token: str = "",
        resource_version: str = "",
        request_timeout: float | None = 120.0,
    ) -> Object:
        """One page of a list, as `Client.list`."""
        params = {
            "labelSelector": label_selector,
            "fieldSelector": field_selector,
            "limit": str(limit) if limit else "",
            "continue": continue_token,
            "resourceVersion": resource_version,
        }
        query = [(k, v) for k, v in params.items() if v]
        out: Object = await self.request(
            "GET", res.path(namespace), query=query, request_timeout=request_timeout
        )
        return out

    async def _exchange(self, raw: bytes) -> tuple[int, str, bytes]:
        """Write one request and read its answer; a kept-alive connection the server closed
        meanwhile is replaced once (nothing was read: the request is sent again)."""
        for attempt in (0, 1):
            reused = self._conn is not None
            reader, writer = await self._connection()
            writer.write(raw)
            try:
                await writer.drain()
                line = await reader.readline()
            except (ConnectionError, ssl.SSLError):
                line = b""
            if line or not reused or attempt:
                return await self._answer(line, reader)
            await self.close()
        raise AssertionError("unreachable")  # pragma: no cover

    async def _connection(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self._conn is None:
            cfg = self.config
            try:
                self._conn = await asyncio.open_connection(
                    cfg.host,
                    cfg.port,
                    ssl=cfg.ssl,
                    server_hostname=cfg.server_hostname,
                    limit=2**21,
                )
            except OSError as exc:  # ssl.SSLError included: a certificate the CA did not sign
                raise ConnectionError(
                    f"cannot connect to the API server {cfg.scheme}://{cfg.host}:{cfg.port}: "
                    f"{exc.strerror or exc}"
                ) from exc
        return self._conn

    async def _answer(self, line: bytes, reader: asyncio.StreamReader) -> tuple[int, str, bytes]:
        parts = line.decode("latin-1").rstrip("\r\n").split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
            await self.close()
            raise ConnectionError(f"the API server answered {line[:80]!r}, not HTTP/1.1")
        headers: dict[str, str] = {}
        while (header := await reader.readline()) not in (b"\r\n", b"\n", b""):
            name, _, value = header.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            payload = await _chunked(reader)
        elif "content-length" in headers:
            payload = await reader.readexactly(int(headers["content-length"]))
        else:
            payload = await reader.read()
            headers["connection"] = "close"
        if headers.get("connection", "").lower() == "close":
            await self.close()
        return int(parts[1]), parts[2] if len(parts) > 2 else "", payload


async def _chunked(reader: asyncio.StreamReader) -> bytes:
    chunks: list[bytes] = []
    while True:
        size = int((await reader.readline()).split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(chunks)
        chunks.append(await reader.readexactly(size))
        await reader.readexactly(2)


def _encode(body: Any) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode()


def _api_error(status: int, reason: str, payload: bytes) -> ApiError:
    try:
        parsed = json.loads(payload) if payload else None
    except ValueError:  # not JSON (a proxy's page), or not UTF-8
        parsed = None
    if isinstance(parsed, Mapping) and parsed.get("kind") == "Status":
        return ApiError.from_status(status, dict(parsed))
    return ApiError(status, reason, payload.decode("utf-8", "replace")[:500])
