"""What an informer delivers: watch events as they come, and on relist only the difference."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from jobset.runtime.cache import BY_CONTROLLER_UID, index_by_controller_uid
from jobset.runtime.client import CONFIGMAPS, Client
from jobset.runtime.informer import FuncHandler, Informer


def cm(name: str, rv: str, v: str = "") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "n", "resourceVersion": rv}, "data": {"v": v}}


def make() -> tuple[Informer, list[tuple[str, str, str]]]:
    # The reflector is never started here: the client is not used.
    inf = Informer(cast(Client, None), CONFIGMAPS)
    seen: list[tuple[str, str, str]] = []
    inf.add_event_handler(
        FuncHandler(
            add=lambda o: seen.append(("add", o["metadata"]["name"], o["data"]["v"])),
            update=lambda old, new: seen.append(
                ("update", new["metadata"]["name"], f"{old['data']['v']}->{new['data']['v']}")
            ),
            delete=lambda o: seen.append(("delete", o["metadata"]["name"], o["data"]["v"])),
        )
    )
    return inf, seen


def test_relist_delivers_only_the_difference() -> None:
    inf, seen = make()
    assert not inf.has_synced()
    inf.replace([cm("a", "1", "a1"), cm("b", "2", "b1"), cm("c", "3", "c1")], "3")
    assert inf.has_synced()
    seen.clear()
    # b unchanged, a changed, c deleted while we were not watching, d new.
    inf.replace([cm("a", "7", "a2"), cm("b", "2", "b1"), cm("d", "8", "d1")], "9")
    assert sorted(seen) == [
        ("add", "d", "d1"),
        ("delete", "c", "c1"),  # reported with the last state we knew
        ("update", "a", "a1->a2"),
    ]
    assert inf.last_delete_was_tombstone
    assert sorted(inf.store.keys()) == ["n/a", "n/b", "n/d"]


def test_watch_events() -> None:
    inf, seen = make()
    inf.replace([], "1")
    inf.apply("ADDED", cm("a", "2", "1"))
    inf.apply("MODIFIED", cm("a", "3", "2"))
    inf.apply("DELETED", cm("a", "4", "3"))
    assert seen == [("add", "a", "1"), ("update", "a", "1->2"), ("delete", "a", "3")]
    assert not inf.last_delete_was_tombstone
    assert len(inf.store) == 0


def test_late_handler_gets_the_cache_as_adds_and_failing_handler_is_isolated() -> None:
    inf, seen = make()
    inf.replace([cm("a", "1"), cm("b", "2")], "2")
    late: list[str] = []

    def boom(_: dict[str, Any]) -> None:
        raise RuntimeError("handler bug")

    inf.add_event_handler(FuncHandler(add=boom))
    inf.add_event_handler(FuncHandler(add=lambda o: late.append(o["metadata"]["name"])))
    assert sorted(late) == ["a", "b"]
    inf.apply("ADDED", cm("c", "3"))
    assert late[-1] == "c" and seen[-1] == ("add", "c", "")


def test_owner_index_is_kept_through_events() -> None:
    inf = Informer(
        cast(Client, None), CONFIGMAPS, indexers={BY_CONTROLLER_UID: index_by_controller_uid}
    )
    owned = cm("x", "1")
    owned["metadata"]["ownerReferences"] = [{"uid": "u", "name": "o", "controller": True}]
    inf.replace([owned], "1")
    assert inf.store.by_index(BY_CONTROLLER_UID, "u") == [owned]
    inf.apply("DELETED", owned)
    assert inf.store.by_index(BY_CONTROLLER_UID, "u") == []


async def test_periodic_resync_redelivers_cached_objects_as_updates() -> None:
    inf = Informer(cast(Client, None), CONFIGMAPS, resync_period=0.02)
    updates: list[str] = []
    inf.add_event_handler(
        FuncHandler(update=lambda old, new: updates.append(new["metadata"]["name"]))
    )
    inf.replace([cm("a", "1"), cm("b", "2")], "2")
    task = asyncio.create_task(inf._resync_loop())
    try:
        await asyncio.sleep(0.1)
    finally:
        task.cancel()
    assert updates.count("a") >= 2 and updates.count("b") >= 2
