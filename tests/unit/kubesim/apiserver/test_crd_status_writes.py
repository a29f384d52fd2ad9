"""A custom object's status write prunes and defaults its status, not the spec it carries
over (`crds._carried`): the stored spec was pruned and defaulted under the same schema, and
both steps are idempotent. Held here: the result equals the whole-object walk, fields and
their order included; the spec is not walked; an object stored before its CRD changed is
walked whole, so a new default still reaches it. The in-memory API core and store."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesim.apiserver.core.apicore import ApiCore
from kubesim.apiserver.core.request import Request
from kubesim.apiserver.core.store import Store
from kubesim.apiserver.registry.apiextensions.customresourcedefinition import CrdHooks
from kubesim.apiserver.registry.catalogue import served_types
from kubesim.apiserver.registry.registry import Registry
from kubesim.apiserver.registry.resourcetype import ResourceType
from kubesim.machinery import schema as structural

NS = "ns"


def _crd(spec_default: dict[str, Any] | None = None) -> dict[str, Any]:
    size: dict[str, Any] = {"type": "integer"}
    if spec_default is not None:
        size["default"] = spec_default["size"]
    item = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "weight": {"type": "integer", "default": 1}},
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {
                                        "size": size,
                                        "items": {"type": "array", "items": item},
                                    },
                                },
                                "status": {
                                    "type": "object",
                                    "properties": {
                                        "phase": {"type": "string", "default": "Pending"},
                                        "count": {"type": "integer", "nullable": True},
                                        "parts": {"type": "array", "items": item},
                                    },
                                },
                                "extra": {
                                    "type": "object",
                                    "default": {"on": True},
                                    "properties": {"on": {"type": "boolean"}},
                                },
                            },
                        }
                    },
                }
            ],
        },
    }


async def _core() -> tuple[ApiCore, ResourceType]:
    registry, store = Registry(served_types()), Store()
    core = ApiCore(registry, store, hooks=[CrdHooks(registry, store)])
    crds = core.registry.get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    namespaces = core.registry.get("", "v1", "namespaces")
    assert crds is not None and namespaces is not None
    await core.create(crds, "", _crd())
    await core.create(namespaces, "", {"metadata": {"name": NS}})
    rt = core.registry.get("example.com", "v1", "widgets")
    assert rt is not None
    return core, rt


def _widget() -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": NS},
        "spec": {"size": 3, "items": [{"name": f"i{i}", "unknown": i} for i in range(20)]},
    }


def _full_walk(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    assert rt.crd is not None
    compiled = rt.crd["compiled"]
    out = structural.apply_defaults(structural.prune(obj, compiled), compiled)
    out["metadata"] = obj["metadata"]
    return out


scalars = st.one_of(st.none(), st.integers(-5, 5), st.text(max_size=3), st.booleans())
part = st.dictionaries(st.sampled_from(["name", "weight", "junk"]), scalars, max_size=3)
statuses = st.dictionaries(
    st.sampled_from(["phase", "count", "parts", "unknown"]),
    st.one_of(scalars, st.lists(part, max_size=3)),
    max_size=4,
)


@settings(max_examples=200, deadline=None)
@given(status=statuses, extra=st.sampled_from([None, {"on": False}, {"on": True, "x": 1}]))
def test_a_status_write_equals_the_whole_object_walk(
    status: dict[str, Any], extra: dict[str, Any] | None
) -> None:
    async def run() -> None:
        core, rt = await _core()
        body = _widget()
        if extra is not None:
            body["extra"] = extra
        old = await core.create(rt, NS, body)
        new = dict(old)  # what the status subresource writes: the stored fields, a new status
        new["status"] = copy.deepcopy(status)
        hook = core.hooks[0]
        fast = hook.before_write(rt, new, old, Request())
        assert fast["spec"] is old["spec"], "the spec is carried over, not walked"
        whole = _full_walk(rt, {**new, "status": copy.deepcopy(status)})
        # Equal, key order included (orjson keeps insertion order).
        assert orjson.dumps(fast) == orjson.dumps(whole)

    asyncio.run(run())


async def test_a_status_write_does_not_walk_the_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    core, rt = await _core()
    await core.create(rt, NS, _widget())
    walked: list[set[str]] = []
    prune = structural.prune

    def spy(obj: dict[str, Any], schema: structural.CompiledSchema) -> dict[str, Any]:
        walked.append(set(obj))
        return prune(obj, schema)

    monkeypatch.setattr(structural, "prune", spy)
    stored = core.get(rt, NS, "w")
    written = await core.update(
        rt, NS, "w", {**stored, "status": {"count": 2, "junk": 1}}, Request(), subresource="status"
    )
    assert written["status"] == {"count": 2, "phase": "Pending"}  # pruned and defaulted
    assert written["spec"] == stored["spec"]
    assert walked and all("spec" not in keys for keys in walked)

    # A write of the object itself walks the spec it sends.
    walked.clear()
    await core.update(rt, NS, "w", {**written, "spec": {"size": 4}}, Request())
    assert any("spec" in keys for keys in walked)


async def test_an_object_stored_before_its_crd_changed_is_walked_whole() -> None:
    core, rt = await _core()
    body = _widget()
    del body["spec"]["size"]
    await core.create(rt, NS, body)
    crds = core.registry.get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    assert crds is not None
    crd = core.get(crds, "", "widgets.example.com")
    changed = _crd(spec_default={"size": 7})
    changed["metadata"] = crd["metadata"]
    await core.update(crds, "", "widgets.example.com", changed, Request())
    rt = core.registry.get("example.com", "v1", "widgets")
    assert rt is not None

    stored = core.get(rt, NS, "w")
    assert "size" not in stored["spec"]  # stored before the default existed
    # The next status write walks the object under the new schema: the default reaches it.
    written = await core.update(
        rt, NS, "w", {**stored, "status": {"count": 1}}, Request(), subresource="status"
    )
    assert written["spec"]["size"] == 7
    # Once written under the new schema, the next status write carries the spec over.
    again = await core.update(
        rt, NS, "w", {**written, "status": {"count": 2}}, Request(), subresource="status"
    )
    assert again["spec"] is written["spec"]
