"""A large write's slow steps run in a worker thread (`apicore.OFF_LOOP_BYTES`), but its
version check and its commit stay together on the loop: a write that lands while a large
update records its managedFields makes that update a 409 Conflict, never a lost update. The
in-memory API core and store, with the managedFields step held open on purpose."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from kubesim.apiserver.core import fieldmanagers
from kubesim.apiserver.core.apicore import OFF_LOOP_BYTES, ApiCore
from kubesim.apiserver.core.request import Request
from kubesim.apiserver.core.store import Store
from kubesim.apiserver.registry.catalogue import served_types
from kubesim.apiserver.registry.registry import Registry
from kubesim.machinery.errors import ApiError


async def test_a_write_during_a_large_updates_managed_fields_makes_it_conflict(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    core = ApiCore(Registry(served_types()), Store())
    ns_rt = core.registry.get("", "v1", "namespaces")
    cm_rt = core.registry.get("", "v1", "configmaps")
    assert ns_rt is not None and cm_rt is not None
    await core.create(ns_rt, "", {"metadata": {"name": "ns"}})
    stored = await core.create(cm_rt, "ns", {"metadata": {"name": "cm"}, "data": {"v": "0"}})

    entered, release = threading.Event(), threading.Event()
    managed = fieldmanagers.record_managers

    def held_in_thread(*args: Any, **kwargs: Any) -> dict[str, Any]:
        if threading.current_thread() is not threading.main_thread():
            entered.set()
            assert release.wait(10)
        return managed(*args, **kwargs)

    monkeypatch.setattr(fieldmanagers, "record_managers", held_in_thread)

    def body(value: str) -> dict[str, Any]:
        return {**stored, "data": {"v": value}}

    large = asyncio.ensure_future(
        core.update(cm_rt, "ns", "cm", body("large"), Request(body_bytes=OFF_LOOP_BYTES))
    )
    assert await asyncio.to_thread(entered.wait, 10)  # the large update is in its thread
    # Meanwhile a small update of the same version is committed on the loop.
    await core.update(cm_rt, "ns", "cm", body("small"), Request())
    release.set()
    with pytest.raises(ApiError) as err:
        await large
    assert (err.value.code, err.value.reason) == (409, "Conflict")
    now = core.store.get(cm_rt.key, ("ns", "cm"))
    assert now is not None and now["data"] == {"v": "small"}
