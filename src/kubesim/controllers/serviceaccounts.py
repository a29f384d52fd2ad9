"""kube-controller-manager's serviceaccounts controller: every active namespace has a
`default` ServiceAccount, made when the namespace appears and again if it is deleted.

Pods name `default` when they name no account, and the ServiceAccount admission and the
kubelet's token volume need it to exist; without this a pod in a namespace made with
`kubectl create namespace` could never start."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Final

from kubesim.apiserver.core.store import DELETED, ResourceKey, WatchEvent
from kubesim.base.controller import Controller
from kubesim.machinery.errors import ApiError

NAMESPACES: Final[ResourceKey] = ("", "namespaces")
SERVICE_ACCOUNTS: Final[ResourceKey] = ("", "serviceaccounts")
DEFAULT: Final = "default"


class ServiceAccountsController(Controller[str]):
    """Keys are namespace names."""

    name = "serviceaccount-controller"
    workers = 1

    def watched(self) -> Collection[ResourceKey]:
        return (NAMESPACES, SERVICE_ACCOUNTS)

    def keys_for(self, rkey: ResourceKey, ev: WatchEvent) -> Iterable[str]:
        meta = ev.obj["metadata"]
        if rkey == NAMESPACES and ev.type != DELETED and not meta.get("deletionTimestamp"):
            return (str(meta["name"]),)
        if rkey == SERVICE_ACCOUNTS and ev.type == DELETED and meta.get("name") == DEFAULT:
            return (str(meta.get("namespace") or ""),)
        return ()

    def initial_keys(self) -> Iterable[str]:
        return [
            str(ns["metadata"]["name"])
            for ns in self.core.store.resource(NAMESPACES).objects.values()
        ]

    async def sync(self, key: str) -> float | None:
        ns = self.core.store.get(NAMESPACES, ("", key))
        if ns is None or ns["metadata"].get("deletionTimestamp"):
            return None
        if self.core.store.get(SERVICE_ACCOUNTS, (key, DEFAULT)) is not None:
            return None
        try:
            await self.core.create(
                self.rt("", "serviceaccounts"), key, {"metadata": {"name": DEFAULT}}, self.req()
            )
        except ApiError as err:
            if err.code not in (403, 409):  # the namespace began terminating; made meanwhile
                raise
        return None
