"""The controller runtime: client, informers and cache, workqueue, controllers, manager,
leader election, events. Mirrors client-go / controller-runtime; knows nothing of JobSets.

See docs/runtime.md for the design and its mapping to the Go libraries.
"""

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
