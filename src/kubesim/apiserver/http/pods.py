"""What the API server asks of the nodes: a container's log, exec, attach and port-forward
(`podstreams.py`, `spdystreams.py`), and evicting a pod under its disruption budgets.

The simulated kubelet and the runtime of real containers provide them; the cluster assembly
hands them to the server as one `NodeServices` when it builds it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from aiohttp import web

from kubesim.apiserver.core.apicore import ApiCore
from kubesim.apiserver.core.request import Request
from kubesim.apiserver.http import podstreams
from kubesim.apiserver.http.target import Target
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.machinery.errors import bad_request

__all__ = ["Evictor", "LogSource", "LogStream", "NodeServices", "serve_log"]

# (pod, container, previous) -> the log text; None when there is no previous run
LogSource = Callable[[dict[str, Any], str, bool], "str | None"]
LogStream = Callable[[web.Request, dict[str, Any], str], Awaitable[web.StreamResponse | None]]


class Evictor(Protocol):
    """`POST pods/<name>/eviction`: delete the pod if its budgets allow, else raise the
    ApiError kube-apiserver answers with."""

    async def __call__(
        self,
        core: ApiCore,
        pods_rt: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        req: Request,
    ) -> None: ...


@dataclass(frozen=True)
class NodeServices:
    """The node-side answers of pod subresources; a field left None is not provided."""

    # The simulated kubelet's record of what containers wrote.
    log_source: LogSource | None = None
    # Real containers (`--run-image`) answer pods/log themselves (previous, follow).
    log_stream: LogStream | None = None
    # Real containers (`--run-image`) answer exec, attach and port-forward; without them
    # every pod answers as one whose container the runtime does not know.
    pod_streams: podstreams.PodStreams | None = None
    # `pods/<name>/eviction` under the disruption budgets (their logic lives with their
    # controller); None: no such subresource.
    evict: Evictor | None = None


async def serve_log(
    core: ApiCore, nodes: NodeServices, request: web.Request, t: Target
) -> web.StreamResponse:
    """`pods/<name>/log`, from the container runtime or the simulated kubelet's record."""
    pod = core.get(t.rt, t.namespace or "", t.name)
    container = request.query.get("container") or ""
    spec = pod.get("spec") or {}
    names = [c["name"] for c in spec.get("containers") or []]
    inits = [c["name"] for c in spec.get("initContainers") or []]
    if not container:
        if len(names) > 1:
            raise bad_request(
                f"a container name must be specified for pod {t.name}, choose one of: {names}"
            )
        container = names[0] if names else ""
    elif container not in names and container not in inits:
        raise bad_request(f"container {container} is not valid for pod {t.name}")
    status = pod.get("status") or {}
    if status.get("phase") == "Pending":
        # a container that has run (a sidecar, an init container, one restarting in
        # place) has logs; one that never started has none yet
        known = {
            cs.get("name"): cs
            for cs in [
                *(status.get("initContainerStatuses") or ()),
                *(status.get("containerStatuses") or ()),
            ]
        }
        cs = known.get(container) or {}
        waiting = (cs.get("state") or {}).get("waiting")
        if not cs or (waiting is not None and not cs.get("lastState")):
            reason = (waiting or {}).get("reason") or "ContainerCreating"
            raise bad_request(
                f'container "{container}" in pod "{t.name}" is waiting to start: {reason}'
            )
    if nodes.log_stream is not None:
        streamed = await nodes.log_stream(request, pod, container)
        if streamed is not None:
            return streamed
    # strconv.ParseBool, as the API server parses it (clients send "true" or "True")
    previous = request.query.get("previous", "").lower() in ("1", "t", "true")
    text = nodes.log_source(pod, container, previous) if nodes.log_source else ""
    if text is None:
        raise bad_request(
            f'previous terminated container "{container}" in pod "{t.name}" not found'
        )
    tail = request.query.get("tailLines")
    if tail is not None:
        lines = text.splitlines(keepends=True)
        text = "".join(lines[-int(tail) :]) if int(tail) > 0 else ""
    return web.Response(text=text, content_type="text/plain")
