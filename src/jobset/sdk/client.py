"""Async client for JobSets: create, get, list, watch, wait, delete, and a JobSet's children.

Built on `jobset.runtime.client.Client` (kubernetes_asyncio underneath: kubeconfig, TLS,
tokens; plus rate limiting and retries), so the CLI, the tests and user programs talk to the
cluster exactly as the controller does. Objects come back as `JobSet` models; children
(Jobs, Pods, Events, Nodes) as plain dicts, since nothing here interprets most of them.

`watch` survives what long watches meet in practice: the server closing the stream
(re-watch from the last resourceVersion) and 410 Gone (relist, then report only what
changed meanwhile), so `wait_for` can wait for hours.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from jobset.api import constants as c
from jobset.resources import JOBSETS
from jobset.runtime.apitypes import EVENTS, JOBS, NODES, PODS, ApiError, Object, Resource
from jobset.sdk.kubeconfig import kubeconfig_namespace, load_merged
from jobset.sdk.models import JobSet

if TYPE_CHECKING:
    from jobset.runtime.client import Client
    from jobset.sdk.quickclient import QuickClient

__all__ = [
    "FINISHED",
    "JOBSETS",
    "NODES",
    "JobSetClient",
    "JobSetDeleted",
    "JobSetFailed",
    "WaitTimeout",
    "WatchEvent",
    "kubeconfig_namespace",
]


# wait_for condition meaning "Completed or Failed".
FINISHED: Final = "Finished"


@dataclass(frozen=True)
class WatchEvent:
    """One change of a JobSet: type ADDED, MODIFIED or DELETED, and the object after it."""

    type: str
    jobset: JobSet


class JobSetDeleted(Exception):
    """The JobSet disappeared while being waited for."""


class JobSetFailed(Exception):
    """`wait_until_finished` saw the JobSet fail; `.jobset` holds it."""

    def __init__(self, jobset: JobSet) -> None:
        cond = jobset.condition(c.CONDITION_FAILED)
        why = f": {cond.reason}: {cond.message}" if cond is not None else ""
        super().__init__(f'JobSet "{jobset.name}" failed{why}')
        self.jobset = jobset


class WaitTimeout(TimeoutError):
    """`wait_for` ran out of time; `.last` is the last state seen."""

    def __init__(self, name: str, condition: str, timeout: float, last: JobSet | None) -> None:
        super().__init__(f'timed out after {timeout:g}s waiting for JobSet "{name}": {condition}')
        self.last = last


def _predicate(condition: str | Callable[[JobSet], bool]) -> tuple[str, Callable[[JobSet], bool]]:
    if callable(condition):
        return getattr(condition, "__name__", "condition"), condition
    if condition == FINISHED:
        return condition, lambda js: js.is_finished
    if condition in (c.TERMINAL_STATE_COMPLETED, c.TERMINAL_STATE_FAILED):
        return condition, lambda js: js.terminal_state == condition
    return condition, lambda js: js.condition_true(condition)


class JobSetClient:
    """JobSets in one cluster. `async with await JobSetClient.connect(...) as jobsets:`."""

    def __init__(
        self,
        client: Client | QuickClient,
        namespace: str = "default",
        *,
        request_timeout: float | None = None,
    ) -> None:
        self.client = client
        self.namespace = namespace
        # kubectl's --request-timeout: seconds per request (0: none); None keeps the
        # runtime client's defaults.
        self.request_timeout = request_timeout

    def _timeout(self) -> dict[str, Any]:
        if self.request_timeout is None:
            return {}
        return {"request_timeout": self.request_timeout or None}

    @classmethod
    async def connect(
        cls,
        kubeconfig: str | None = None,
        *,
        context: str | None = None,
        namespace: str | None = None,
        qps: float = 50.0,
        burst: int = 100,
        max_retries: int = 3,
        request_timeout: float | None = None,
        read_only: bool = False,
    ) -> JobSetClient:
        """From a kubeconfig (else $KUBECONFIG, ~/.kube/config, in-cluster).

        The context and the default namespace are kubectl's (`jobset.sdk.kubeconfig`: the
        files of $KUBECONFIG merged first-wins): `context`, else the merged current-context;
        `namespace`, else the context's, else `default`. Few retries by default: an
        interactive user prefers an error to a minute of backoff. `request_timeout`:
        seconds for each request (0: no limit), as kubectl's --request-timeout.

        `read_only`: the caller only gets and lists (no watch), over the quick connection of
        `jobset.sdk.quickclient` when the kubeconfig allows it: no rate limit and no retries,
        and none of the full client's start-up cost.
        """
        namespace = namespace or kubeconfig_namespace(kubeconfig, context)
        if read_only:
            from jobset.sdk.quickclient import QuickClient, quick_config

            quick = quick_config(kubeconfig, context)
            if quick is not None:
                return cls(
                    QuickClient(quick, _user_agent()), namespace, request_timeout=request_timeout
                )
        from jobset.runtime.client import Client, RetryPolicy

        merged = load_merged(kubeconfig)
        client = await Client.connect(
            kubeconfig,
            context=context or merged.current_context or None,
            qps=qps,
            burst=burst,
            retry=RetryPolicy(max_retries=max_retries, max_backoff=2.0),
        )
        return cls(client, namespace, request_timeout=request_timeout)

    def _streaming(self) -> Client:
        """The full client, for watches and writes (a `read_only` connection has none)."""
        from jobset.sdk.quickclient import QuickClient

        if isinstance(self.client, QuickClient):
            raise TypeError("this JobSetClient was connected read_only: it only gets and lists")
        return self.client

    async def close(self) -> None:
        await self.client.close()

    async def __aenter__(self) -> JobSetClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _ns(self, namespace: str | None) -> str:
        return namespace or self.namespace

    # ------------------------------------------------------------------ CRUD

    async def create(
        self,
        jobset: JobSet | Mapping[str, Any],
        *,
        namespace: str | None = None,
        validate: bool = True,
        features: Mapping[str, bool] | None = None,
        dry_run: bool = False,
        field_validation: str | None = None,
    ) -> JobSet:
        """Create `jobset` (validated client-side first unless `validate=False`).

        The namespace is the object's, else `namespace`, else the client's; an object whose
        namespace differs from an explicit `namespace` is refused, as kubectl does.
        `dry_run`: the server admits it (defaulting, webhooks, validation) but stores
        nothing (`dryRun=All`, kubectl's `--dry-run=server`). `field_validation`: the API
        server's `fieldValidation` (`Strict`: an unknown field is an error, as kubectl asks).
        """
        model = jobset if isinstance(jobset, JobSet) else JobSet.from_dict(jobset)
        own = model.namespace
        if own and namespace and own != namespace:
            raise ValueError(
                f'the namespace from the provided object "{own}" does not match the '
                f'namespace "{namespace}"'
            )
        if validate:
            from jobset.sdk.validation import check

            check(model, features=features)
        query = [("dryRun", "All")] if dry_run else []
        if field_validation:
            query.append(("fieldValidation", field_validation))
        created = await self.client.request(
            "POST",
            JOBSETS.path(own or self._ns(namespace)),
            query=query,
            body=model.to_dict(),
            **self._timeout(),
        )
        return JobSet.from_dict(created)

    async def get(self, name: str, namespace: str | None = None) -> JobSet:
        path = JOBSETS.path(self._ns(namespace), name)
        return JobSet.from_dict(await self.client.request("GET", path, **self._timeout()))

    async def list(
        self,
        namespace: str | None = None,
        *,
        all_namespaces: bool = False,
        label_selector: str = "",
    ) -> builtins.list[JobSet]:
        """Every JobSet of a namespace (or all), following list pages."""
        ns = None if all_namespaces else self._ns(namespace)
        items = await self._list_all(JOBSETS, ns, label_selector=label_selector)
        return [JobSet.from_dict(o) for o in items]

    async def delete(
        self,
        name: str,
        namespace: str | None = None,
        *,
        propagation: str = "Background",
        dry_run: bool = False,
    ) -> None:
        """Delete; child Jobs and pods go with it (garbage collection, `propagation`).
        `dry_run`: the server checks the deletion but keeps the object (`dryRun=All`)."""
        options: dict[str, Any] = {
            "kind": "DeleteOptions",
            "apiVersion": "v1",
            "propagationPolicy": propagation,
        }
        if dry_run:
            options["dryRun"] = ["All"]
        await self.client.request(
            "DELETE",
            JOBSETS.path(self._ns(namespace), name),
            query=[("dryRun", "All")] if dry_run else [],
            body=options,
            **self._timeout(),
        )

    async def _list_all(
        self,
        res: Resource,
        namespace: str | None,
        *,
        label_selector: str = "",
        field_selector: str = "",
    ) -> builtins.list[Object]:
        items: builtins.list[Object] = []
        token = ""
        while True:
            page = await self.client.list(
                res,
                namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                limit=500,
                continue_token=token,
                **self._timeout(),
            )
            items.extend(page.get("items") or [])
            token = (page.get("metadata") or {}).get("continue") or ""
            if not token:
                return items

    # ------------------------------------------------------------------ watch / wait

    async def watch(
        self,
        name: str | None = None,
        namespace: str | None = None,
        *,
        all_namespaces: bool = False,
        label_selector: str = "",
        timeout_seconds: int = 300,
    ) -> AsyncGenerator[WatchEvent, None]:
        """Changes of one JobSet (`name`) or of all in a namespace, forever.

        Starts with an ADDED event per existing JobSet (the current state), then every
        change. Close it with `contextlib.aclosing` or by leaving an `async for`.
        """
        ns = None if all_namespaces else self._ns(namespace)
        fields = f"metadata.name={name}" if name else ""
        known: dict[str, JobSet] = {}
        rv = ""
        first = True
        while True:
            if not rv:
                page = await self.client.list(
                    JOBSETS, ns, label_selector=label_selector, field_selector=fields
                )
                rv = str((page.get("metadata") or {}).get("resourceVersion") or "")
                current = {_key(o): JobSet.from_dict(o) for o in page.get("items") or []}
                for key, gone in known.items():
                    if key not in current:
                        yield WatchEvent("DELETED", gone)
                for key, js in current.items():
                    old = known.get(key)
                    if first or old is None:
                        yield WatchEvent("ADDED", js)
                    elif _rv(old) != _rv(js):
                        yield WatchEvent("MODIFIED", js)
                known, first = current, False
            try:
                async with self._streaming().watch(
                    JOBSETS,
                    ns,
                    resource_version=rv,
                    timeout_seconds=timeout_seconds,
                    label_selector=label_selector,
                    field_selector=fields,
                ) as events:
                    async for event in events:
                        etype = event.get("type")
                        obj = event.get("object") or {}
                        if etype == "ERROR":
                            if obj.get("code") == 410:
                                rv = ""
                                break
                            raise ApiError.from_status(500, obj)
                        rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                        if etype == "BOOKMARK":
                            continue
                        js = JobSet.from_dict(obj)
                        if etype == "DELETED":
                            known.pop(_key(obj), None)
                        else:
                            known[_key(obj)] = js
                        yield WatchEvent(str(etype), js)
            except ApiError as err:
                if not err.gone:
                    raise
                rv = ""

    async def wait_for(
        self,
        name: str,
        condition: str | Callable[[JobSet], bool] = FINISHED,
        *,
        namespace: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109,
    ) -> JobSet:
        """Wait until `condition` holds and return the JobSet.

        `condition`: `"Finished"` (Completed or Failed), `"Completed"` / `"Failed"` (the
        terminal state), any other condition type (`"Suspended"`...: that condition is
        True), or a predicate on the JobSet. Raises the API's NotFound when the JobSet does
        not exist, `JobSetDeleted` when it disappears, `WaitTimeout` after `timeout` seconds.
        """
        label, pred = _predicate(condition)
        await self.get(name, namespace)  # NotFound now rather than waiting for ever
        last: JobSet | None = None

        async def run() -> JobSet:
            nonlocal last
            async with contextlib.aclosing(self.watch(name, namespace)) as events:
                async for event in events:
                    if event.type == "DELETED":
                        raise JobSetDeleted(f'JobSet "{name}" was deleted')
                    last = event.jobset
                    if pred(event.jobset):
                        return event.jobset
            raise JobSetDeleted(f'JobSet "{name}": watch ended')  # pragma: no cover

        try:
            return await asyncio.wait_for(run(), timeout)
        except TimeoutError:
            raise WaitTimeout(name, label, timeout or 0.0, last) from None

    async def wait_until_finished(
        self,
        name: str,
        *,
        namespace: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> JobSet:
        """Wait for a terminal state; return the JobSet if Completed, raise JobSetFailed."""
        js = await self.wait_for(name, FINISHED, namespace=namespace, timeout=timeout)
        if js.terminal_state == c.TERMINAL_STATE_FAILED:
            raise JobSetFailed(js)
        return js

    # ------------------------------------------------------------------ children

    async def jobs(self, jobset: JobSet) -> builtins.list[Object]:
        """Child Jobs: labelled with the JobSet's name and owned by its UID, by name."""
        uid = (jobset.metadata.uid if jobset.metadata else None) or ""
        items = await self._list_all(
            JOBS, jobset.namespace, label_selector=f"{c.JOBSET_NAME_KEY}={jobset.name}"
        )
        owned = [j for j in items if not uid or _controller_uid(j) == uid]
        return sorted(owned, key=_child_order)

    async def pods(self, jobset: JobSet) -> builtins.list[Object]:
        """Pods of the child Jobs (by the jobset-name label and, when stamped, the UID)."""
        uid = (jobset.metadata.uid if jobset.metadata else None) or ""
        items = await self._list_all(
            PODS, jobset.namespace, label_selector=f"{c.JOBSET_NAME_KEY}={jobset.name}"
        )
        labels = [((p.get("metadata") or {}).get("labels") or {}) for p in items]
        owned = [
            p
            for p, lab in zip(items, labels, strict=True)
            if not uid or lab.get(c.JOBSET_UID_KEY, uid) == uid
        ]
        return sorted(owned, key=_child_order)

    @contextlib.asynccontextmanager
    async def pod_log(
        self,
        pod: Mapping[str, Any],
        container: str,
        *,
        follow: bool = False,
        since_seconds: int | None = None,
        tail_lines: int | None = None,
    ) -> AsyncGenerator[AsyncIterator[bytes], None]:
        """A container's log as it arrives (`kubectl logs`): yields an async iterator of
        chunks of bytes; with `follow`, until the container ends."""
        meta = pod.get("metadata") or {}
        query = [("container", container)]
        if follow:
            query.append(("follow", "true"))
        if since_seconds is not None:
            query.append(("sinceSeconds", str(since_seconds)))
        if tail_lines is not None:
            query.append(("tailLines", str(tail_lines)))
        path = PODS.path(str(meta.get("namespace") or self.namespace), str(meta.get("name")), "log")
        async with self._streaming().stream(path, query=query) as chunks:
            yield chunks

    async def events(self, jobset: JobSet, *, children: bool = True) -> builtins.list[Object]:
        """Events about the JobSet (and, with `children`, its Jobs and pods), oldest first."""
        ns = jobset.namespace
        if not children:
            items = await self._list_all(
                EVENTS, ns, field_selector=f"involvedObject.name={jobset.name}"
            )
        else:
            names = {jobset.name}
            names |= {str((j.get("metadata") or {}).get("name")) for j in await self.jobs(jobset)}
            names |= {str((p.get("metadata") or {}).get("name")) for p in await self.pods(jobset)}
            items = [
                e
                for e in await self._list_all(EVENTS, ns)
                if (e.get("involvedObject") or {}).get("name") in names
            ]
        return sorted(items, key=_event_time)

    async def nodes(self) -> dict[str, Object]:
        """Every Node by name (for the topology domain of pods)."""
        return {
            str((n.get("metadata") or {}).get("name")): n for n in await self._list_all(NODES, None)
        }


def _user_agent() -> str:
    """`jobset/VERSION (os/arch) python/X.Y.Z`, as kubectl names itself (`os.uname`, not
    `platform`, which a quick command would load for this alone)."""
    import os
    import sys

    from jobset import __version__

    python = ".".join(map(str, sys.version_info[:3]))
    return f"jobset/{__version__} ({sys.platform}/{os.uname().machine}) python/{python}"


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"


def _rv(js: JobSet) -> str | None:
    return js.metadata.resource_version if js.metadata else None


def _controller_uid(obj: Mapping[str, Any]) -> str:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return str(ref.get("uid") or "")
    return ""


def _child_order(obj: Mapping[str, Any]) -> tuple[int, int, str]:
    """Spec order: global job index, then completion index, then name."""
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}

    def num(value: Any) -> int:
        try:
            return int(value)
        except (TypeError, ValueError):
            return 1 << 30

    return (
        num(labels.get(c.JOB_GLOBAL_INDEX_KEY)),
        num(annotations.get(c.JOB_COMPLETION_INDEX_ANNOTATION)),
        str(meta.get("name") or ""),
    )


def _event_time(event: Mapping[str, Any]) -> str:
    return str(
        event.get("lastTimestamp")
        or event.get("eventTime")
        or event.get("firstTimestamp")
        or (event.get("metadata") or {}).get("creationTimestamp")
        or ""
    )
