"""The agent's two conversations with the API server: its JobSet's changes, and one patch
of its own pod.

In a pod (the normal case) this is `InClusterApi`, a small aiohttp client over the
in-cluster configuration (KUBERNETES_SERVICE_HOST/PORT, the ServiceAccount token and CA at
their standard path, the token re-read on every request, as it rotates). It is written by
hand instead of using the runtime's `Client` and `Informer` (kubernetes_asyncio) because
the agent's start-up is on the critical path of every in-place restart - each group
restart starts every agent of the JobSet again, the one of the failed pod first and all
the others after it - and importing kubernetes_asyncio's generated client (and with it the
runtime package) more than doubles that start-up: 0.9 s of CPU with it, 0.4 s without, for
`jobset in-place-restart-agent` up to its first request (measured with `time`). It does
what an informer of one object does: list with a field selector, watch from the list's
resourceVersion (bookmarks on), renew a watch that ends cleanly, and list again after any
failure with client-go's reflector backoff (`backoff.py`).

Outside a cluster (`--kubeconfig`, `$KUBECONFIG`) start-up time does not matter, and
`KubeconfigApi` uses the runtime's client and informer.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import ssl
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, Final, Protocol
from urllib.parse import quote

import aiohttp

from jobset.agent.backoff import Backoff
from jobset.agent.logs import logger
from jobset.api import constants as c

__all__ = [
    "FIELD_MANAGER",
    "SA_DIR",
    "AgentApi",
    "AgentApiError",
    "InClusterApi",
    "KubeconfigApi",
    "attempt_patch",
]

FIELD_MANAGER: Final = "in-place-restart-agent"
SA_DIR: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount")
WATCH_TIMEOUT: Final = 300  # seconds a watch request lasts before it is renewed
# client-go's reflector treats a watch that ends this soon without an event as an error.
SHORT_WATCH: Final = 1.0


class AgentApiError(Exception):
    """A request failed: the HTTP status (0 when there was no response) and why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}" if status else message)
        self.status = status


class AgentApi(Protocol):
    def jobset_views(self) -> AsyncIterator[Mapping[str, Any]]:
        """Every state of the JobSet, first the current one, for as long as it runs."""
        ...

    async def patch_attempt(self, attempt: int) -> None: ...

    async def close(self) -> None: ...


def attempt_patch(namespace: str, pod: str, attempt: int) -> dict[str, Any]:
    """The server-side apply body of the agent's one write."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod,
            "namespace": namespace,
            "annotations": {c.IN_PLACE_RESTART_ATTEMPT_KEY: str(attempt)},
        },
    }


class InClusterApi:
    """See the module docstring."""

    def __init__(
        self,
        namespace: str,
        jobset: str,
        pod: str,
        environ: Mapping[str, str] = os.environ,
        sa_dir: Path = SA_DIR,
    ) -> None:
        host = environ.get("KUBERNETES_SERVICE_HOST", "")
        port = environ.get("KUBERNETES_SERVICE_PORT", "443")
        if not host:
            raise AgentApiError(0, "not in a cluster: KUBERNETES_SERVICE_HOST is not set")
        if ":" in host:  # an IPv6 address
            host = f"[{host}]"
        self.base = f"https://{host}:{port}"
        self.namespace, self.jobset, self.pod = namespace, jobset, pod
        self.sa_dir = sa_dir
        self._ssl = ssl.create_default_context(cafile=str(sa_dir / "ca.crt"))
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=self._ssl), trust_env=False
        )

    def _headers(self, content_type: str = "") -> dict[str, str]:
        token = (self.sa_dir / "token").read_text().strip()
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        return headers

    @property
    def _jobsets(self) -> str:
        return f"{self.base}/apis/{c.GROUP}/{c.VERSION}/namespaces/{self.namespace}/{c.PLURAL}"

    def _selector(self) -> str:
        return quote(f"metadata.name={self.jobset}", safe="=")

    async def patch_attempt(self, attempt: int) -> None:
        url = (
            f"{self.base}/api/v1/namespaces/{self.namespace}/pods/{self.pod}"
            f"?fieldManager={FIELD_MANAGER}&force=true"
        )
        body = json.dumps(attempt_patch(self.namespace, self.pod, attempt))
        try:
            async with self._session.patch(
                url, data=body, headers=self._headers("application/apply-patch+yaml")
            ) as resp:
                if resp.status >= 300:
                    raise AgentApiError(resp.status, await _reason(resp))
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise AgentApiError(0, str(exc) or type(exc).__name__) from exc

    async def jobset_views(self) -> AsyncIterator[Mapping[str, Any]]:
        """List, then watch from the list's resourceVersion, renewing a watch that ended
        cleanly. Any failure - an error answer, an ERROR event (410 Gone included), a broken
        stream, a watch that ended within a second without an event - is followed by a
        backoff (`backoff.py`) and a fresh list, as client-go's reflector does."""
        backoff = Backoff()
        while True:
            why = ""
            try:
                rv, items = await self._list()
                for item in items:
                    yield item
                while rv and not why:
                    started, events = time.monotonic(), 0
                    async for kind, obj in self._watch(rv):
                        if kind == "ERROR":
                            why = f"watch ended with an error: {_status_text(obj)}"
                            break
                        events += 1
                        rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                        if kind in ("ADDED", "MODIFIED"):
                            yield obj
                    if not why and not events and time.monotonic() - started < SHORT_WATCH:
                        why = "very short watch: it ended within a second without an event"
            except (AgentApiError, aiohttp.ClientError, TimeoutError, OSError, ValueError) as exc:
                # e.g. 403: the ServiceAccount may not list/watch jobsets
                why = str(exc) or type(exc).__name__
            delay = backoff.next()
            logger().warning("cannot follow the JobSet, retrying", error=why, retry_in=delay)
            await asyncio.sleep(delay)

    async def _list(self) -> tuple[str, list[Mapping[str, Any]]]:
        url = f"{self._jobsets}?fieldSelector={self._selector()}"
        async with self._session.get(url, headers=self._headers()) as resp:
            if resp.status >= 300:
                raise AgentApiError(resp.status, await _reason(resp))
            body = await resp.json()
        return str(body["metadata"].get("resourceVersion") or ""), list(body.get("items") or [])

    async def _watch(self, rv: str) -> AsyncIterator[tuple[str, Mapping[str, Any]]]:
        """The events of one watch request from `rv` (410 at the start: an ERROR event)."""
        url = (
            f"{self._jobsets}?watch=true&fieldSelector={self._selector()}"
            f"&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds={WATCH_TIMEOUT}"
        )
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=WATCH_TIMEOUT + 30)
        async with self._session.get(url, headers=self._headers(), timeout=timeout) as resp:
            if resp.status == 410:
                yield "ERROR", {"code": 410}
                return
            if resp.status >= 300:
                raise AgentApiError(resp.status, await _reason(resp))
            buffer = b""
            # chunks, not readline: aiohttp caps a line at 128 KiB, a JobSet can be larger
            async for chunk in resp.content.iter_any():
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        event = json.loads(line)
                        yield str(event.get("type")), event.get("object") or {}

    async def close(self) -> None:
        await self._session.close()


def _status_text(obj: Mapping[str, Any]) -> str:
    """An ERROR event's Status, as `code reason: message`."""
    parts = [str(obj.get(k)) for k in ("code", "reason") if obj.get(k)]
    message = obj.get("message")
    return " ".join(parts) + (f": {message}" if message else "") or "no status"


async def _reason(resp: aiohttp.ClientResponse) -> str:
    with contextlib.suppress(Exception):
        body = await resp.json()
        return str(body.get("message") or body.get("reason") or resp.reason)
    return str(resp.reason)


class KubeconfigApi:
    """Outside a cluster: the runtime's client and an informer of the one JobSet."""

    def __init__(self, client: Any, namespace: str, jobset: str, pod: str) -> None:
        self.client = client
        self.namespace, self.jobset, self.pod = namespace, jobset, pod

    @classmethod
    async def connect(
        cls, kubeconfig: str | None, namespace: str, jobset: str, pod: str
    ) -> KubeconfigApi:
        from jobset.runtime.client import Client

        return cls(await Client.connect(kubeconfig), namespace, jobset, pod)

    async def patch_attempt(self, attempt: int) -> None:
        from jobset.runtime.client import PODS, ApiError

        try:
            await self.client.patch(
                PODS,
                self.pod,
                attempt_patch(self.namespace, self.pod, attempt),
                self.namespace,
                patch_type="apply",
                field_manager=FIELD_MANAGER,
                force=True,
            )
        except ApiError as err:
            raise AgentApiError(err.status, err.message) from err

    async def jobset_views(self) -> AsyncIterator[Mapping[str, Any]]:
        from jobset.resources import JOBSETS
        from jobset.runtime.informer import FuncHandler, Informer

        queue: asyncio.Queue[Mapping[str, Any]] = asyncio.Queue()
        informer = Informer(
            self.client,
            JOBSETS,
            namespace=self.namespace,
            field_selector=f"metadata.name={self.jobset}",
        )
        informer.add_event_handler(
            FuncHandler(add=queue.put_nowait, update=lambda _, js: queue.put_nowait(js))
        )
        informer.start()
        try:
            while True:
                yield await queue.get()
        finally:
            await informer.stop()

    async def close(self) -> None:
        await self.client.close()
