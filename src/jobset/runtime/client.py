"""The API client every runtime component talks through: kubernetes_asyncio underneath.

kubernetes_asyncio does the connection work (kubeconfig / in-cluster service account, TLS,
bearer tokens and their refresh, the aiohttp connection pool). On top of it this wrapper adds
what client-go's `rest.Config` + `rest.Request` give a Go controller and the generated Python
client does not:

- objects as plain dicts parsed and encoded with orjson, not generated model classes: the
  informer caches tens of thousands of objects and only dicts can be slimmed by a
  transform; generic for every resource (CRDs included) through a `Resource` descriptor.
  Requests go straight to kubernetes_asyncio's aiohttp session (see `Client._http`), not
  through its `call_api`, whose model-oriented body walk and stdlib JSON encoding cost
  more than the rest of a request;
- client-side rate limiting (`--qps`, `--burst`), a token bucket before every request;
- retries: 429 (any verb: the server did not process it) honouring `Retry-After`, and 5xx /
  connection errors for idempotent verbs only (GET, PUT, DELETE), with capped exponential
  backoff, like client-go's `checkWait` + `WithRetry`;
- client-go's `rest_client_*` metrics, and a user agent naming the project and version;
- no per-request environment lookups: kubernetes_asyncio's aiohttp session has
  `trust_env=True`, which makes aiohttp look up proxy variables and read `~/.netrc` in the
  thread pool on *every* request (two executor round trips, about an eighth of the event
  loop's time when creating thousands of Jobs). `connect` resolves the proxy once, as
  kubectl does at start-up: when HTTP(S)_PROXY applies to the API server (NO_PROXY
  honoured) the session is left as it is; otherwise it is replaced by one on the same
  connector (same TLS settings and pool) with `trust_env=False`. kubectl never reads
  `.netrc`, so dropping that lookup changes nothing a kubeconfig user relies on.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import platform
import random
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlencode, urlsplit

import aiohttp
import orjson
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config

from jobset import __version__
from jobset.runtime.apitypes import (
    CONFIGMAPS,
    EVENTS,
    JOBS,
    LEASES,
    NAMESPACES,
    NODES,
    PODS,
    PVCS,
    SECRETS,
    SERVICES,
    ApiError,
    Object,
    Resource,
)
from jobset.runtime.logging import get_logger
from jobset.runtime.metrics import RuntimeMetrics
from jobset.runtime.ratelimit import FairTokenBucket

__all__ = [
    "CONFIGMAPS",
    "EVENTS",
    "JOBS",
    "LEASES",
    "NAMESPACES",
    "NODES",
    "PODS",
    "PVCS",
    "SECRETS",
    "SERVICES",
    "USER_AGENT",
    "ApiError",
    "Client",
    "Object",
    "Resource",
    "RetryPolicy",
    "client_timeout",
    "env_proxy_for",
]

USER_AGENT: Final = (
    f"jobset-controller/{__version__} ({sys.platform}/{platform.machine()}) "
    f"python/{platform.python_version()} kubernetes_asyncio"
)

DEFAULT_KUBECONFIG: Final = os.path.expanduser("~/.kube/config")
IDEMPOTENT_METHODS: Final = frozenset({"GET", "HEAD", "PUT", "DELETE"})
JSON_ACCEPT: Final = "application/json"
# The object's metadata only (kube-apiserver answers gets, lists, watches and writes so);
# the plain JSON after it is for a server that cannot, which then sends the whole object.
METADATA_ACCEPT: Final = (
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how long to retry throttled / failed requests."""

    max_retries: int = 10
    base_backoff: float = 0.1
    max_backoff: float = 10.0
    max_retry_after: float = 60.0  # never sleep longer than this for one Retry-After

    def backoff(self, attempt: int) -> float:
        """Capped exponential backoff with jitter, for errors without a Retry-After."""
        delay = min(self.base_backoff * 2.0**attempt, self.max_backoff)
        return delay * (0.5 + random.random() / 2)


def _parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP date: rare from kube-apiserver; fall back to our backoff


def _parse_body(raw: bytes) -> Any:
    return orjson.loads(raw) if raw else None


class Client:
    """Dict-in, dict-out Kubernetes client with rate limiting, retries and metrics."""

    def __init__(
        self,
        api: k8s_client.ApiClient,
        *,
        qps: float = 20.0,
        burst: int = 30,
        metrics: RuntimeMetrics | None = None,
        retry: RetryPolicy | None = None,
        user_agent: str = USER_AGENT,
    ) -> None:
        self.api = api
        self.api.user_agent = user_agent
        # Round-robin over reconciles (`api_flow`): one big pass cannot queue ahead of all.
        self.limiter = FairTokenBucket(qps, burst)
        self.metrics = metrics
        self.retry = retry or RetryPolicy()
        self.host = urlsplit(api.configuration.host).netloc
        self.log = get_logger("client", host=self.host)
        # Reachability of the API server, for readiness: when the current run of failed
        # attempts (connection errors, 5xx) began, None after any answer below 500.
        self.failing_since: float | None = None
        self.last_failure = ""
        self._metric_children: dict[tuple[str, ...], Any] = {}
        self._owns_api = True

    # ------------------------------------------------------------------ construction

    @classmethod
    async def connect(
        cls,
        kubeconfig: str | None = None,
        *,
        context: str | None = None,
        pool_size: int = 64,
        **kwargs: Any,
    ) -> Client:
        """From `kubeconfig` (or $KUBECONFIG / ~/.kube/config), else the in-cluster account."""
        cfg = k8s_client.Configuration()
        path = kubeconfig or os.environ.get("KUBECONFIG")
        if path is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
            k8s_config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
        else:
            await k8s_config.load_kube_config(
                config_file=path or DEFAULT_KUBECONFIG, context=context, client_configuration=cfg
            )
        cfg.connection_pool_maxsize = pool_size
        api = k8s_client.ApiClient(cfg)
        if env_proxy_for(str(cfg.host)) is None:
            _untrust_env(api)
        return cls(api, **kwargs)

    def with_budget(self, qps: float, burst: int) -> Client:
        """A client over the same connection pool with its own token bucket.

        Each concern of the process (reconciles and informers, leader election, webhooks,
        events, metrics authentication) gets one, so that no concern can spend another's
        budget: a webhook flooded with lookups must not delay a lease renewal. client-go
        reaches the same by building one client per concern from a rest.Config. Only the
        client it derives from closes the pool.
        """
        derived = Client(
            self.api,
            qps=qps,
            burst=burst,
            metrics=self.metrics,
            retry=self.retry,
            user_agent=str(self.api.user_agent),
        )
        derived._owns_api = False
        return derived

    async def close(self) -> None:
        if self._owns_api:
            await self.api.close()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------------ transport

    async def _send(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        body: Any = None,
        content_type: str = "application/json",
        request_timeout: Any = None,
        verb: str = "",
        accept: str = JSON_ACCEPT,
    ) -> aiohttp.ClientResponse:
        """One logical request: rate limit, send, retry; returns a 2xx response to consume.

        Non-2xx answers that are not retried are raised as `ApiError`.
        """
        idempotent = method in IDEMPOTENT_METHODS
        verb = verb or method
        attempt = 0
        while True:
            waited = await self.limiter.wait()
            if self.metrics is not None:
                self._series("wait", verb).observe(waited)
            t0 = time.perf_counter()
            try:
                resp = await self._http(
                    method, path, query, body, content_type, request_timeout, accept
                )
            except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                self._observe(method, verb, "<error>", t0)
                self._unreachable(repr(exc))
                if not idempotent or attempt >= self.retry.max_retries:
                    raise
                delay = self.retry.backoff(attempt)
                self.log.debug("request failed, retrying", path=path, error=str(exc), delay=delay)
                attempt += 1
                await asyncio.sleep(delay)
                continue
            self._observe(method, verb, str(resp.status), t0)
            if resp.status >= 500:
                self._unreachable(f"{resp.status} {resp.reason or ''}".strip())
            else:
                self.failing_since = None
            if resp.status < 400:
                return resp
            raw = await resp.read()
            resp.release()
            retry_after = _parse_retry_after(resp.headers.get("Retry-After"))
            retryable = resp.status == 429 or (resp.status >= 500 and idempotent)
            if retryable and attempt < self.retry.max_retries:
                delay = (
                    min(retry_after, self.retry.max_retry_after)
                    if retry_after is not None
                    else (1.0 if resp.status == 429 else self.retry.backoff(attempt))
                )
                self.log.info(
                    "throttled or server error, retrying",
                    method=method,
                    path=path,
                    code=resp.status,
                    retry_after=retry_after,
                    delay=round(delay, 3),
                    attempt=attempt + 1,
                )
                attempt += 1
                await asyncio.sleep(delay)
                continue
            raise self._error(resp.status, resp.reason or "", raw, retry_after)

    async def _http(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]],
        body: Any,
        content_type: str,
        request_timeout: Any,
        accept: str = JSON_ACCEPT,
    ) -> aiohttp.ClientResponse:
        """One HTTP exchange on kubernetes_asyncio's session, without its `call_api`.

        `call_api` walks every body with `sanitize_for_serialization` (built for its model
        classes) and encodes it with the standard `json` module - about a third of this
        client's CPU per Job creation. Bodies here are plain JSON values: orjson encodes
        them in one call. What `call_api` does that matters is kept: the configuration's
        host, the bearer token through `update_params_for_auth` (which runs the token
        refresh hook of exec plugins and expiring in-cluster tokens), the user agent, the
        kubeconfig's proxy-url and tls-server-name, and the timeout forms it accepts
        (seconds, a (connect, read) pair, an `aiohttp.ClientTimeout`).
        """
        api = self.api
        headers: dict[str, str] = {
            **api.default_headers,
            "Accept": accept,
            "Content-Type": content_type,
        }
        params = list(query)
        await api.update_params_for_auth(headers, params, ["BearerToken"])
        url = str(api.configuration.host) + path
        if params:
            url += "?" + urlencode(params)
        rest = api.rest_client
        kwargs: dict[str, Any] = {"headers": headers, "timeout": client_timeout(request_timeout)}
        if body is not None:
            kwargs["data"] = body if isinstance(body, bytes) else orjson.dumps(body)
        if rest.proxy:
            kwargs["proxy"] = rest.proxy
        if rest.proxy_headers:
            kwargs["proxy_headers"] = rest.proxy_headers
        if rest.server_hostname:
            kwargs["server_hostname"] = rest.server_hostname
        session: aiohttp.ClientSession = rest.pool_manager
        return await session.request(method, url, **kwargs)

    def _unreachable(self, why: str) -> None:
        if self.failing_since is None:
            self.failing_since = time.monotonic()
        self.last_failure = why

    def _observe(self, method: str, verb: str, code: str, t0: float) -> None:
        if self.metrics is None:
            return
        self._series("count", code, method).inc()
        self._series("duration", verb).observe(time.perf_counter() - t0)

    def _series(self, kind: str, *labels: str) -> Any:
        """A labelled metric child, looked up once: `labels()` takes a lock and builds its
        key on every call, three times per request."""
        key = (kind, *labels)
        child = self._metric_children.get(key)
        if child is None:
            assert self.metrics is not None
            metric = {
                "wait": self.metrics.rest_client_rate_limiter_duration_seconds,
                "count": self.metrics.rest_client_requests_total,
                "duration": self.metrics.rest_client_request_duration_seconds,
            }[kind]
            child = self._metric_children[key] = metric.labels(*labels, self.host)
        return child

    @staticmethod
    def _error(status: int, reason: str, raw: bytes, retry_after: float | None) -> ApiError:
        try:
            parsed = _parse_body(raw)
        except orjson.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict) and parsed.get("kind") == "Status":
            return ApiError.from_status(status, parsed, retry_after)
        text = raw.decode("utf-8", "replace")[:500]
        return ApiError(status, reason, text, None, retry_after)

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        body: Any = None,
        content_type: str = "application/json",
        request_timeout: float | None = 60.0,
        accept: str = JSON_ACCEPT,
    ) -> Any:
        """Send one request and return its parsed JSON body (None when empty)."""
        resp = await self._send(
            method,
            path,
            query=query,
            body=body,
            content_type=content_type,
            request_timeout=request_timeout,
            accept=accept,
        )
        try:
            raw = await resp.read()
        finally:
            resp.release()
        return _parse_body(raw)

    # ------------------------------------------------------------------ verbs

    async def get(self, res: Resource, name: str, namespace: str | None = None) -> Object:
        out: Object = await self.request("GET", res.path(namespace, name))
        return out

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
        """One page of a list (`limit`/`continue_token` for the next ones)."""
        query = _selectors(label_selector, field_selector)
        if limit:
            query.append(("limit", str(limit)))
        if continue_token:
            query.append(("continue", continue_token))
        if resource_version:
            query.append(("resourceVersion", resource_version))
        resp = await self._send(
            "GET", res.path(namespace), query=query, request_timeout=request_timeout, verb="LIST"
        )
        try:
            raw = await resp.read()
        finally:
            resp.release()
        out: Object = orjson.loads(raw)
        return out

    async def create(
        self, res: Resource, obj: Mapping[str, Any], namespace: str | None = None
    ) -> Object:
        out: Object = _parse_body(await self.create_raw(res, obj, namespace))
        return out

    async def create_raw(
        self, res: Resource, obj: Mapping[str, Any] | bytes, namespace: str | None = None
    ) -> bytes:
        """POST `obj` (or its JSON already encoded: then `namespace` says where); the
        server's answer (the object as stored) as its unparsed JSON.

        For a caller that needs little or nothing of the answer: the controller creating
        thousands of Jobs reads one field of one answer in many (`_create_job`), and parsing
        every answer is a visible share of its CPU per created Job.
        """
        body: bytes | dict[str, Any]
        if isinstance(obj, bytes):
            ns, body = namespace, obj
        else:
            ns, body = namespace or obj.get("metadata", {}).get("namespace"), dict(obj)
        resp = await self._send("POST", res.path(ns), body=body, request_timeout=60.0)
        try:
            return await resp.read()
        finally:
            resp.release()

    async def update(
        self,
        res: Resource,
        obj: Mapping[str, Any],
        subresource: str = "",
        *,
        metadata_only: bool = False,
    ) -> Object:
        """PUT; optimistic concurrency through metadata.resourceVersion (409 when stale).

        `metadata_only`: the answer is the stored object's `PartialObjectMetadata` (its new
        resourceVersion, say) instead of the whole object, for a writer that needs no more.
        Parsing a large object's answer is most of a status write's client CPU. A server that
        cannot answer so sends the object.
        """
        meta = obj.get("metadata", {})
        out: Object = await self.request(
            "PUT",
            res.path(meta.get("namespace"), meta["name"], subresource),
            body=dict(obj),
            accept=METADATA_ACCEPT if metadata_only else JSON_ACCEPT,
        )
        return out

    async def update_status(
        self, res: Resource, obj: Mapping[str, Any], *, metadata_only: bool = False
    ) -> Object:
        return await self.update(res, obj, "status", metadata_only=metadata_only)

    async def patch(
        self,
        res: Resource,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: str = "merge",
        subresource: str = "",
        field_manager: str = "",
        force: bool = False,
    ) -> Object:
        """merge | json | strategic | apply (server-side apply; needs field_manager)."""
        types = {
            "merge": "application/merge-patch+json",
            "json": "application/json-patch+json",
            "strategic": "application/strategic-merge-patch+json",
            "apply": "application/apply-patch+yaml",
        }
        query: list[tuple[str, str]] = []
        if field_manager:
            query.append(("fieldManager", field_manager))
        if force:
            query.append(("force", "true"))
        out: Object = await self.request(
            "PATCH",
            res.path(namespace, name, subresource),
            query=query,
            body=patch,
            content_type=types[patch_type],
        )
        return out

    async def delete(
        self,
        res: Resource,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: str | None = None,
        uid: str | None = None,
        resource_version: str | None = None,
    ) -> Object | None:
        """DELETE with optional preconditions (uid / resourceVersion) and propagation."""
        options: Object = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation_policy:
            options["propagationPolicy"] = propagation_policy
        pre = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v}
        if pre:
            options["preconditions"] = pre
        out: Object | None = await self.request("DELETE", res.path(namespace, name), body=options)
        return out

    @asynccontextmanager
    async def watch(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        resource_version: str = "",
        timeout_seconds: int = 300,
        allow_bookmarks: bool = True,
        label_selector: str = "",
        field_selector: str = "",
        decode: WatchDecoder | None = None,
    ) -> AsyncIterator[AsyncIterator[Object]]:
        """A watch stream: yields an async iterator of raw events {"type", "object"}.

        The HTTP request is retried like a GET (429 / 5xx); a 410 at start is raised as
        `ApiError` (status 410). ERROR events inside the stream are yielded as they are.
        `decode` parses one event line instead of `orjson.loads` (`WatchDecoder`).
        """
        loads = decode or orjson.loads
        query = _selectors(label_selector, field_selector)
        query.append(("watch", "true"))
        if resource_version:
            query.append(("resourceVersion", resource_version))
        if allow_bookmarks:
            query.append(("allowWatchBookmarks", "true"))
        query.append(("timeoutSeconds", str(timeout_seconds)))
        # connect timeout 30 s; read timeout a margin past the server-side timeout, so a
        # silently dead connection (no bookmark, no event) is noticed.
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=timeout_seconds + 30)
        resp = await self._send(
            "GET", res.path(namespace), query=query, request_timeout=timeout, verb="WATCH"
        )

        async def events() -> AsyncIterator[Object]:
            # orjson skips the line's surrounding whitespace itself: no stripped copy of
            # every event; a line of whitespace alone (refused as empty) is skipped.
            while True:
                line = await resp.content.readline()
                if not line:
                    return
                try:
                    event = loads(line)
                except orjson.JSONDecodeError:
                    if line.strip():
                        raise
                    continue
                yield event

        try:
            yield events()
        finally:
            resp.close()

    @asynccontextmanager
    async def stream(
        self, path: str, *, query: Sequence[tuple[str, str]] = ()
    ) -> AsyncIterator[AsyncIterator[bytes]]:
        """A GET read as it arrives (a pod's log with `follow=true`): yields an async
        iterator of the body's chunks, ending with the answer. The request is retried like
        a GET until an answer starts; no read timeout, as a quiet log is no dead server."""
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=None)
        resp = await self._send(
            "GET", path, query=query, request_timeout=timeout, accept="*/*", verb="GET"
        )
        try:
            yield resp.content.iter_any()
        finally:
            resp.close()


# Parses one watch event line (bytes, maybe with surrounding whitespace) into the event,
# raising `orjson.JSONDecodeError` for a line that is not JSON, as `orjson.loads` does: a
# decoder that keeps only what a cache reads of each object (`Client.watch`'s `decode`,
# `Informer`'s `watch_decode`).
WatchDecoder = Callable[[bytes], Object]

_TIMEOUTS: dict[Any, aiohttp.ClientTimeout] = {}


def client_timeout(value: Any) -> aiohttp.ClientTimeout:
    """kubernetes_asyncio's request timeout forms: seconds (total), a (connect, read)
    pair, an `aiohttp.ClientTimeout`, or None (no timeout).

    `ClientTimeout` is immutable, so one per distinct value is built and shared (a few
    values are ever used: every Job creation asked for a new one of the same 60 s)."""
    if isinstance(value, aiohttp.ClientTimeout):
        return value
    try:
        return _TIMEOUTS[value]
    except (KeyError, TypeError):  # TypeError: an unhashable form, never cached
        pass
    out = _new_timeout(value)
    if len(_TIMEOUTS) < 64:
        with contextlib.suppress(TypeError):
            _TIMEOUTS[value] = out
    return out


def _new_timeout(value: Any) -> aiohttp.ClientTimeout:
    if isinstance(value, int | float) and value:
        return aiohttp.ClientTimeout(total=value)
    if isinstance(value, tuple) and len(value) == 2:
        return aiohttp.ClientTimeout(connect=value[0], sock_connect=value[0], sock_read=value[1])
    return aiohttp.ClientTimeout()


def env_proxy_for(url: str) -> str | None:
    """The proxy the environment names for `url` (HTTPS_PROXY for an https URL, ...), or
    None when there is none or NO_PROXY exempts the host - what client-go's
    `http.ProxyFromEnvironment` and aiohttp's `trust_env` decide, resolved once."""
    parts = urlsplit(url)
    proxy = urllib.request.getproxies().get(parts.scheme)
    if not proxy or (parts.hostname and urllib.request.proxy_bypass(parts.hostname)):
        return None
    return str(proxy)


def _untrust_env(api: k8s_client.ApiClient) -> None:
    """Give `api`'s REST client a session with `trust_env=False` on the same connector.

    The old session is detached (not closed), so the connector, its TLS context and its
    pool size carry over; `api.close()` closes the new session and with it the connector.
    """
    rest = api.rest_client
    old: aiohttp.ClientSession = rest.pool_manager
    connector = old.connector
    if connector is None or not old.trust_env:
        return
    rest.pool_manager = aiohttp.ClientSession(
        connector=connector,
        trust_env=False,
        read_bufsize=2**21,  # as kubernetes_asyncio: large objects in one watch event
    )
    old.detach()


def _selectors(label_selector: str, field_selector: str) -> list[tuple[str, str]]:
    query: list[tuple[str, str]] = []
    if label_selector:
        query.append(("labelSelector", label_selector))
    if field_selector:
        query.append(("fieldSelector", field_selector))
    return query
