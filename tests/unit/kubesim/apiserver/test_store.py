"""kubesim.apiserver.core.store: keys in order whatever order they are written in, and
listeners scoped to the resources they name."""

from __future__ import annotations

import random
from typing import Any

from kubesim.apiserver.core.store import ResourceKey, Store, WatchEvent

PODS: ResourceKey = ("", "pods")
EVENTS: ResourceKey = ("", "events")


def _obj(ns: str, name: str) -> dict[str, Any]:
    return {"metadata": {"namespace": ns, "name": name, "uid": f"{ns}/{name}"}}


def _put(store: Store, rkey: ResourceKey, ns: str, name: str) -> None:
    store.put(rkey, _obj(ns, name), store.next_rv())


def _names(objs: Any) -> list[tuple[str, str]]:
    return [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in objs]


def test_range_is_in_key_order_per_namespace_and_after_a_continue_key() -> None:
    store = Store()
    keys = [(f"ns-{i % 3}", f"p-{i:04d}") for i in range(600)]
    random.Random(4).shuffle(keys)
    for ns, name in keys:
        _put(store, PODS, ns, name)
    removed = sorted(keys)[::7]
    for ns, name in removed:
        store.remove(PODS, _obj(ns, name), store.next_rv())
    want = sorted(set(keys) - set(removed))
    rs = store.resource(PODS)
    assert _names(rs.range(None)) == want
    assert _names(rs.range("ns-1")) == [k for k in want if k[0] == "ns-1"]
    assert _names(rs.range("ns-1", ("ns-1", "p-0300"))) == [
        k for k in want if k[0] == "ns-1" and k[1] > "p-0300"
    ]
    assert _names(rs.range("ns")) == []


def test_range_survives_writes_while_it_is_read() -> None:
    store = Store()
    for i in range(1000):
        _put(store, PODS, "ns", f"p-{i:04d}")
    seen = []
    for obj in store.resource(PODS).range("ns"):
        name = obj["metadata"]["name"]
        seen.append(name)
        if name == "p-0100":  # delete ahead of the reader, across slices
            for j in range(500, 1000):
                store.remove(PODS, _obj("ns", f"p-{j:04d}"), store.next_rv())
    assert seen[:101] == [f"p-{i:04d}" for i in range(101)]
    assert not any(name >= "p-0500" for name in seen)


def test_a_subscribed_listener_hears_its_resources_only_until_unsubscribed() -> None:
    store = Store()
    heard: list[tuple[ResourceKey, str]] = []
    everything: list[ResourceKey] = []

    def listener(rkey: ResourceKey, ev: WatchEvent) -> None:
        heard.append((rkey, ev.type))

    store.listeners.append(lambda rkey, ev: everything.append(rkey))
    store.subscribe(listener, [PODS])
    _put(store, PODS, "ns", "a")
    _put(store, EVENTS, "ns", "a.1")
    _put(store, PODS, "ns", "a")
    assert heard == [(PODS, "ADDED"), (PODS, "MODIFIED")]
    assert everything == [PODS, EVENTS, PODS]
    store.unsubscribe(listener)
    _put(store, PODS, "ns", "b")
    assert len(heard) == 2 and len(everything) == 4
