"""The controller runtime: client, informers and cache, workqueue, controllers, manager,
leader election, events. Mirrors client-go / controller-runtime; knows nothing of JobSets.

See docs/runtime.md for the design and its mapping to the Go libraries.

Names are loaded on first use, so that importing one module of the package (the user
commands' `jobset.runtime.apitypes`) does not load the others (the manager, aiohttp's web
server, kubernetes_asyncio).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubeutil.lazy import lazy_exports

if TYPE_CHECKING:
    from jobset.runtime.cache import (
        BY_CONTROLLER_UID,
        BY_NAMESPACE,
        Store,
        chain,
        controller_of,
        drop_fields,
        index_by_controller_uid,
        index_by_namespace,
        object_key,
        split_key,
        strip_managed_fields,
    )
    from jobset.runtime.client import ApiError, Client, Object, Resource
    from jobset.runtime.controller import (
        Controller,
        Request,
        Result,
        TerminalError,
        enqueue_mapped,
        enqueue_object,
        enqueue_owner,
    )
    from jobset.runtime.events import EventRecorder
    from jobset.runtime.informer import FuncHandler, Informer
    from jobset.runtime.manager import Manager
    from jobset.runtime.options import ManagerOptions, add_runtime_flags
    from jobset.runtime.workqueue import WorkQueue

__all__ = [
    "BY_CONTROLLER_UID",
    "BY_NAMESPACE",
    "ApiError",
    "Client",
    "Controller",
    "EventRecorder",
    "FuncHandler",
    "Informer",
    "Manager",
    "ManagerOptions",
    "Object",
    "Request",
    "Resource",
    "Result",
    "Store",
    "TerminalError",
    "WorkQueue",
    "add_runtime_flags",
    "chain",
    "controller_of",
    "drop_fields",
    "enqueue_mapped",
    "enqueue_object",
    "enqueue_owner",
    "index_by_controller_uid",
    "index_by_namespace",
    "object_key",
    "split_key",
    "strip_managed_fields",
]

# Where each name lives: imported on first use (PEP 562), not with the package.
_HOMES: dict[str, str] = {
    "BY_CONTROLLER_UID": "jobset.runtime.cache",
    "BY_NAMESPACE": "jobset.runtime.cache",
    "Store": "jobset.runtime.cache",
    "chain": "jobset.runtime.cache",
    "controller_of": "jobset.runtime.cache",
    "drop_fields": "jobset.runtime.cache",
    "index_by_controller_uid": "jobset.runtime.cache",
    "index_by_namespace": "jobset.runtime.cache",
    "object_key": "jobset.runtime.cache",
    "split_key": "jobset.runtime.cache",
    "strip_managed_fields": "jobset.runtime.cache",
    "ApiError": "jobset.runtime.client",
    "Client": "jobset.runtime.client",
    "Object": "jobset.runtime.client",
    "Resource": "jobset.runtime.client",
    "Controller": "jobset.runtime.controller",
    "Request": "jobset.runtime.controller",
    "Result": "jobset.runtime.controller",
    "TerminalError": "jobset.runtime.controller",
    "enqueue_mapped": "jobset.runtime.controller",
    "enqueue_object": "jobset.runtime.controller",
    "enqueue_owner": "jobset.runtime.controller",
    "EventRecorder": "jobset.runtime.events",
    "FuncHandler": "jobset.runtime.informer",
    "Informer": "jobset.runtime.informer",
    "Manager": "jobset.runtime.manager",
    "ManagerOptions": "jobset.runtime.options",
    "add_runtime_flags": "jobset.runtime.options",
    "WorkQueue": "jobset.runtime.workqueue",
}


__getattr__, __dir__ = lazy_exports(__name__, _HOMES, globals())
