"""Reads with Kubernetes semantics over the store: lists with selectors, limit and continue
tokens, and watches that start from the current state or from a resourceVersion."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import orjson

from kubesim.apiserver.core.store import ObjectKey, Store, Watcher, WatchEvent
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.machinery.errors import ApiError, bad_request
from kubesim.machinery.selectors import FieldSelector, LabelSelector

__all__ = ["ListResult", "decode_continue", "encode_continue", "list_objects", "unwatch", "watch"]


@dataclass
class ListResult:
    items: list[dict[str, Any]]
    resource_version: str
    continue_token: str
    remaining: int | None


def encode_continue(rv: int, key: ObjectKey) -> str:
    raw = orjson.dumps({"rv": rv, "ns": key[0], "name": key[1]})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, ObjectKey]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = orjson.loads(raw)
        return int(data["rv"]), (str(data["ns"]), str(data["name"]))
    except Exception as exc:  # any malformed token is the client's error
        raise bad_request(f"continue key is not valid: {exc}") from None


def list_objects(
    store: Store,
    rt: ResourceType,
    namespace: str | None,
    labels: LabelSelector | None = None,
    fields: FieldSelector | None = None,
    limit: int = 0,
    continue_token: str = "",
) -> ListResult:
    rs = store.resource(rt.key)
    start_after: ObjectKey | None = None
    list_rv = store.rv
    if continue_token:
        list_rv, start_after = decode_continue(continue_token)
    ns = namespace if rt.namespaced else None
    items: list[dict[str, Any]] = []
    last: ObjectKey | None = None
    more = False
    for obj in rs.range(ns, start_after):
        meta = obj["metadata"]
        if labels is not None and not labels.matches(meta.get("labels")):
            continue
        if fields is not None and not fields.matches(obj):
            continue
        if limit and len(items) >= limit:
            more = True
            break
        items.append(obj)
        last = (meta.get("namespace", ""), meta["name"])
    token = encode_continue(list_rv, last) if more and last is not None else ""
    return ListResult(items, str(list_rv), token, None)


def watch(
    store: Store,
    rt: ResourceType,
    namespace: str | None,
    labels: LabelSelector | None,
    fields: FieldSelector | None,
    resource_version: str,
) -> tuple[Watcher, list[WatchEvent]]:
    """Subscribe, and return the events the watcher must see first.

    No resourceVersion (or "0"): synthetic ADDED events for the current state.
    A resourceVersion: the history after it, or ApiError 410 when compacted.
    """
    rs = store.resource(rt.key)
    ns = namespace if rt.namespaced else None
    watcher = Watcher(ns, labels, fields)
    if resource_version in ("", "0"):
        initial = [
            WatchEvent("ADDED", obj, int(obj["metadata"]["resourceVersion"]))
            for obj in rs.range(ns)
            if (labels is None or labels.matches(obj["metadata"].get("labels")))
            and (fields is None or fields.matches(obj))
        ]
    else:
        try:
            rv = int(resource_version)
        except ValueError:
            raise bad_request(f"invalid resource version: {resource_version!r}") from None
        history = rs.events_since(rv)
        if history is None:
            raise ApiError(410, "Expired", f"too old resource version: {rv} ({rs.compacted_rv})")
        initial = []
        for ev in history:
            probe = Watcher(ns, labels, fields)
            probe.offer(ev)
            initial.extend(probe.queue)
    rs.watchers.add(watcher)
    return watcher, initial


def unwatch(store: Store, rt: ResourceType, watcher: Watcher) -> None:
    watcher.close()
    rs = store.resources.get(rt.key)
    if rs is not None:
        rs.watchers.discard(watcher)
