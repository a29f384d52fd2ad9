"""The JobSet resource as the runtime client addresses it, defined once for the controller,
the webhooks, the placement code and the SDK. The core kinds (Jobs, Pods, Services, PVCs,
Nodes, ...) are the constant block of `jobset.runtime.client`.

Also the one rule for "this Job is a child of that JobSet", shared by the reconciler and
planned placement: the Job's controller owner reference is of kind JobSet in the
`jobset.x-k8s.io` group, and the Job is in the JobSet's namespace (upstream's
`SetupJobSetIndexes` plus its `InNamespace` list). An owner UID alone is not enough: anyone
who may write Jobs in some namespace may copy any JobSet's UID into one.
"""

from __future__ import annotations

from typing import Final

from jobset.api import constants as c
from jobset.runtime.apitypes import Resource
from jobset.runtime.cache import index_by_controller_owner, owner_key

__all__ = ["JOBSETS", "JOBSET_OWNER_INDEX", "index_jobset_owner", "jobset_owner_key"]

JOBSETS: Final = Resource(c.GROUP, c.VERSION, c.PLURAL, c.KIND)

# The Job cache's index of Jobs by the JobSet that controls them (`namespace/uid`).
JOBSET_OWNER_INDEX: Final = "jobset-owner"
index_jobset_owner: Final = index_by_controller_owner(c.GROUP, c.KIND)


def jobset_owner_key(namespace: str, uid: str) -> str:
    """The `JOBSET_OWNER_INDEX` value of the children of the JobSet `namespace`/(uid)."""
    return owner_key(namespace, uid)
