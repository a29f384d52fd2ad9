"""A toy controller built only from `jobset.runtime`: the runtime's end-to-end fixture.

Parents are ConfigMaps labelled `toy.example.com/parent=true` with `data.replicas` and
`data.value`. For each parent the controller keeps exactly `replicas` child Secrets named
`<parent>-<i>`, owned by the parent (controller ownerReference), annotated with the value
and with the identity of the replica that wrote them; it records the number of children on
the parent (annotation) and emits an Event for every child it creates. Children are watched
and mapped to their owner, so deleting or changing a child is repaired.

Run it as a process (the leader-election test runs two):

    python -m tests.integration.runtime.toy_controller --kubeconfig K --leader-elect ...
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import Counter
from typing import Any

from jobset.runtime import (
    BY_CONTROLLER_UID,
    ApiError,
    Manager,
    ManagerOptions,
    Request,
    Result,
    add_runtime_flags,
    enqueue_object,
    enqueue_owner,
    index_by_controller_uid,
    strip_managed_fields,
)
from jobset.runtime.client import CONFIGMAPS, SECRETS
from jobset.runtime.events import NORMAL
from jobset.runtime.logging import configure_logging, get_logger

PARENT_LABEL = "toy.example.com/parent"
VALUE = "toy.example.com/value"
WRITER = "toy.example.com/writer"
CHILDREN = "toy.example.com/children"


class ToyController:
    def __init__(self, manager: Manager) -> None:
        self.manager = manager
        self.client = manager.client
        self.identity = manager.options.identity
        self.parents = manager.informer(
            CONFIGMAPS, label_selector=f"{PARENT_LABEL}=true", transform=strip_managed_fields
        )
        self.children = manager.informer(
            SECRETS,
            transform=strip_managed_fields,
            indexers={BY_CONTROLLER_UID: index_by_controller_uid},
        )
        self.recorder = manager.recorder("toy-controller")
        self.controller = manager.controller("toy", self.reconcile)
        self.controller.watch(self.parents, enqueue_object())
        self.controller.watch(self.children, enqueue_owner("ConfigMap", ""))
        self.reconciled: Counter[str] = Counter()
        self.hanging = 0

    async def reconcile(self, req: Request) -> Result:
        self.reconciled[str(req)] += 1
        parent = self.parents.store.get_by_name(req.namespace, req.name)
        if parent is None or parent["metadata"].get("deletionTimestamp"):
            return Result()  # children go with their owner (garbage collection)
        meta = parent["metadata"]
        data = parent.get("data") or {}
        if data.get("hang") == "true":
            # A reconcile that never finishes (a request stuck behind a partition): what
            # losing the lease must cancel rather than wait for.
            self.hanging += 1
            get_logger("toy").warning("reconcile hangs", key=str(req))
            await asyncio.Event().wait()
        replicas = int(data.get("replicas", "0"))
        value = data.get("value", "")
        want = {f"{req.name}-{i}" for i in range(replicas)}
        have = {
            c["metadata"]["name"]: c
            for c in self.children.store.by_index(BY_CONTROLLER_UID, meta["uid"])
        }
        for name in sorted(want - have.keys()):
            await self._create_child(parent, name, value)
        for name in sorted(want & have.keys()):
            annotations = have[name]["metadata"].get("annotations") or {}
            if annotations.get(VALUE) != value:
                patch = {"metadata": {"annotations": {VALUE: value, WRITER: self.identity}}}
                await self.client.patch(SECRETS, name, patch, req.namespace)
        for name in sorted(have.keys() - want):
            try:
                await self.client.delete(SECRETS, name, req.namespace)
            except ApiError as err:
                if not err.not_found:
                    raise
        if (meta.get("annotations") or {}).get(CHILDREN) != str(replicas):
            patch = {"metadata": {"annotations": {CHILDREN: str(replicas)}}}
            await self.client.patch(CONFIGMAPS, req.name, patch, req.namespace)
        return Result()

    async def _create_child(self, parent: dict[str, Any], name: str, value: str) -> None:
        meta = parent["metadata"]
        child = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {
                "name": name,
                "namespace": meta["namespace"],
                "annotations": {VALUE: value, WRITER: self.identity},
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "name": meta["name"],
                        "uid": meta["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
        }
        try:
            await self.client.create(SECRETS, child)
        except ApiError as err:
            if not err.already_exists:
                raise
            return
        self.recorder.event(parent, NORMAL, "Created", f"created secret {name}")


async def amain(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    add_runtime_flags(parser)
    args = parser.parse_args(argv)
    configure_logging(args.log_format, args.log_level, stream=sys.stdout)
    manager = await Manager.create(ManagerOptions.from_args(args))
    ToyController(manager)
    return await manager.run_until_signal()


def main() -> int:
    return asyncio.run(amain())


if __name__ == "__main__":
    sys.exit(main())
