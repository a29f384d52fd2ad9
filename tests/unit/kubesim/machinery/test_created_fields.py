"""The create fast path of managedFields (`created_fields`, one walk) against the general path
(field paths, a diff against the create's baseline, a trie): equal FieldsV1 for generated
objects of typed and untyped kinds, with keyed lists, sets, duplicate keys, items without
identity, empty and atomic values."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubesim.machinery.patch import update_managed_fields
from kubesim.machinery.patch.builtin import builtin_patch_schema
from kubesim.machinery.patch.common import MISSING
from kubesim.machinery.patch.fieldpaths import diff_fields, paths_to_fields
from kubesim.machinery.patch.managed_fields import without_ignored
from kubesim.machinery.patch.schema import PatchSchema

NOW = "2026-01-01T00:00:00Z"

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["a", "b", "<&>", "é"])
)
names = st.sampled_from(["main", "side", "init", "x"])


def _env() -> st.SearchStrategy[list[dict[str, Any]]]:
    item: st.SearchStrategy[dict[str, Any]] = st.fixed_dictionaries(
        {"name": names}, optional={"value": scalars, "valueFrom": st.just({})}
    )
    no_name = st.fixed_dictionaries({"value": scalars})  # no key: the list is one value
    return st.lists(st.one_of(item, item, no_name), max_size=4)


def _container() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"name": names},
        optional={
            "image": scalars,
            "env": _env(),
            "args": st.lists(scalars, max_size=3),
            "ports": st.lists(
                st.fixed_dictionaries(
                    {"containerPort": st.integers(80, 82)},
                    optional={"protocol": st.sampled_from(["TCP", "UDP"])},
                ),
                max_size=3,
            ),
            "resources": st.fixed_dictionaries(
                {}, optional={"limits": st.dictionaries(names, scalars, max_size=2)}
            ),
        },
    )


def _pod_spec() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {},
        optional={
            "containers": st.lists(_container(), max_size=3),  # duplicates possible
            "nodeSelector": st.dictionaries(names, scalars, max_size=2),
            "tolerations": st.lists(st.dictionaries(names, scalars, max_size=2), max_size=2),
            "affinity": st.just({}),
            "restartPolicy": scalars,
        },
    )


def _metadata() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"name": st.just("j"), "namespace": st.just("ns")},
        optional={
            "labels": st.dictionaries(names, scalars, max_size=3),
            "annotations": st.dictionaries(names, scalars, max_size=2),
            "uid": st.just("u"),
            "creationTimestamp": st.just(NOW),
            "finalizers": st.lists(st.sampled_from(["a", "b"]), max_size=3),
            "ownerReferences": st.lists(
                st.fixed_dictionaries({"uid": st.sampled_from(["1", "2"])}), max_size=2
            ),
        },
    )


def _job() -> st.SearchStrategy[dict[str, Any]]:
    template = st.fixed_dictionaries(
        {}, optional={"metadata": st.fixed_dictionaries({}, optional={}), "spec": _pod_spec()}
    )
    return st.fixed_dictionaries(
        {
            "apiVersion": st.just("batch/v1"),
            "kind": st.just("Job"),
            "metadata": _metadata(),
        },
        optional={
            "spec": st.fixed_dictionaries(
                {},
                optional={
                    "parallelism": scalars,
                    "template": template,
                    "selector": st.just({}),
                },
            ),
            "status": st.one_of(st.just({}), st.fixed_dictionaries({"active": scalars})),
            "extra": st.one_of(scalars, st.lists(scalars, max_size=2), st.just({})),
        },
    )


def _untyped() -> st.SearchStrategy[dict[str, Any]]:
    values = st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3), st.dictionaries(names, inner, max_size=3)
        ),
        max_leaves=8,
    )
    return st.fixed_dictionaries(
        {
            "apiVersion": st.just("example.com/v1"),
            "kind": st.just("Thing"),
            "metadata": _metadata(),
        },
        optional={"spec": values, "data": values},
    )


def _general(body: dict[str, Any], schema: PatchSchema) -> dict[str, Any]:
    """What the general path makes of a create: the fields `diff_fields` adds, stripped, encoded."""
    if schema.typed:
        baseline: Any = {k: {} for k in ("spec", "status") if isinstance(body.get(k), dict)}
    else:
        baseline = MISSING
    return paths_to_fields(without_ignored(diff_fields(baseline, body, schema.root).changed(), ()))


def _fast(body: dict[str, Any], schema: PatchSchema) -> dict[str, Any]:
    out = update_managed_fields(None, body, "m", "Update", NOW, schema=schema)
    entries = out["metadata"].get("managedFields") or []
    assert len(entries) <= 1
    return entries[0]["fieldsV1"] if entries else {}


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Equal, key order included: the stored JSON is compared byte for byte by clients."""
    return json.dumps(a) == json.dumps(b)


@settings(max_examples=400, deadline=None)
@given(_job())
def test_create_fast_path_equals_the_general_path_for_a_typed_kind(body: dict[str, Any]) -> None:
    schema = builtin_patch_schema("batch", "Job")
    assert schema.typed
    assert _same(_fast(body, schema), _general(body, schema))


@settings(max_examples=300, deadline=None)
@given(_untyped())
def test_create_fast_path_equals_the_general_path_for_an_untyped_kind(
    body: dict[str, Any],
) -> None:
    schema = builtin_patch_schema("example.com", "Thing")
    assert not schema.typed
    assert _same(_fast(body, schema), _general(body, schema))


def test_a_stripped_field_that_is_not_a_plain_value_takes_the_general_path() -> None:
    """`metadata.uid` as an object (invalid, but storable without validation): its
    sub-fields stay owned, as the general path records them."""
    schema = builtin_patch_schema("batch", "Job")
    body = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "uid": {"a": 1}}}
    assert _fast(body, schema) == _general(body, schema) == {"f:metadata": {"f:uid": {"f:a": {}}}}


def test_an_entry_order_and_layout_as_kube_apiserver_writes_it() -> None:
    schema = builtin_patch_schema("batch", "Job")
    body = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ns", "labels": {"b": "1", "a": "2"}},
        "spec": {"template": {"spec": {"containers": [{"name": "main", "image": "x"}]}}},
    }
    out = update_managed_fields(None, body, "m", "Update", NOW, schema=schema)
    assert out["metadata"]["managedFields"] == [
        {
            "manager": "m",
            "operation": "Update",
            "apiVersion": "batch/v1",
            "time": NOW,
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:labels": {".": {}, "f:a": {}, "f:b": {}}},
                "f:spec": {
                    "f:template": {
                        ".": {},
                        "f:spec": {
                            ".": {},
                            "f:containers": {
                                ".": {},
                                'k:{"name":"main"}': {".": {}, "f:image": {}, "f:name": {}},
                            },
                        },
                    }
                },
            },
        }
    ]
    assert list(out["metadata"]["managedFields"][0]["fieldsV1"]["f:metadata"]["f:labels"]) == [
        ".",
        "f:a",
        "f:b",
    ]
