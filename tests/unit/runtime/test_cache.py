"""The indexed store and transforms."""

from __future__ import annotations

from typing import Any

import pytest

from jobset.runtime.cache import (
    BY_CONTROLLER_UID,
    BY_NAMESPACE,
    Store,
    chain,
    drop_fields,
    index_by_controller_owner,
    index_by_controller_uid,
    index_by_namespace,
    object_key,
    owner_key,
    split_key,
    strip_managed_fields,
)


def obj(name: str, ns: str = "default", owner: str | None = None, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "resourceVersion": "1"}
    if owner:
        meta["ownerReferences"] = [
            {"kind": "X", "name": "o", "uid": "other", "controller": False},
            {"kind": "JobSet", "name": "js", "uid": owner, "controller": True},
        ]
    return {"metadata": meta, **extra}


def test_keys() -> None:
    assert object_key(obj("a", "ns")) == "ns/a"
    assert object_key({"metadata": {"name": "node"}}) == "node"
    assert split_key("ns/a") == ("ns", "a")
    assert split_key("node") == ("", "node")


def test_indexes_follow_updates_and_deletes() -> None:
    s = Store({BY_NAMESPACE: index_by_namespace, BY_CONTROLLER_UID: index_by_controller_uid})
    s.put("a/j1", obj("j1", "a", owner="u1"))
    s.put("a/j2", obj("j2", "a", owner="u1"))
    s.put("b/j3", obj("j3", "b", owner="u2"))
    assert sorted(o["metadata"]["name"] for o in s.by_index(BY_CONTROLLER_UID, "u1")) == [
        "j1",
        "j2",
    ]
    assert [o["metadata"]["name"] for o in s.list("b")] == ["j3"]
    assert s.by_index(BY_CONTROLLER_UID, "other") == []  # only the controller owner counts
    s.put("a/j2", obj("j2", "a", owner="u2"))  # owner changed
    assert [o["metadata"]["name"] for o in s.by_index(BY_CONTROLLER_UID, "u1")] == ["j1"]
    assert sorted(s.index_keys(BY_CONTROLLER_UID, "u2")) == ["a/j2", "b/j3"]
    s.remove("a/j1")
    assert s.by_index(BY_CONTROLLER_UID, "u1") == []
    assert "u1" not in s.index_values(BY_CONTROLLER_UID)  # empty index entries are dropped
    assert len(s) == 2 and "b/j3" in s


def _owned(ns: str, **ref: Any) -> dict[str, Any]:
    owner: dict[str, Any] = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet"}
    owner["name"] = "js"
    owner.update({"uid": "u1", "controller": True, **ref})
    return {"metadata": {"name": "j", "namespace": ns, "ownerReferences": [owner]}}


@pytest.mark.parametrize(
    ("child", "found"),
    [
        pytest.param(_owned("a"), ["a/u1"], id="child"),
        pytest.param(_owned("a", apiVersion="jobset.x-k8s.io/v1"), ["a/u1"], id="other-version"),
        pytest.param(_owned("b"), ["b/u1"], id="other-namespace-own-key"),
        pytest.param(_owned("a", kind="Deployment"), [], id="other-kind"),
        pytest.param(_owned("a", apiVersion="evil.example.com/v1alpha2"), [], id="other-group"),
        pytest.param(_owned("a", apiVersion="v1"), [], id="core-group"),
        pytest.param(_owned("a", controller=False), [], id="not-controller"),
        pytest.param(_owned("a", uid=""), [], id="no-uid"),
    ],
)
def test_controller_owner_index_checks_kind_group_and_namespace(
    child: dict[str, Any], found: list[str]
) -> None:
    index = index_by_controller_owner("jobset.x-k8s.io", "JobSet")
    assert list(index(child)) == found
    # The victim in namespace "a" finds only children of its own namespace.
    assert (owner_key("a", "u1") in found) == (
        found != [] and child["metadata"]["namespace"] == "a"
    )


def test_custom_indexer_added_late_indexes_existing_objects() -> None:
    s = Store()
    s.put("a/x", obj("x", "a"))
    s.put("a/y", obj("y", "a"))
    s.add_indexers({"by-first-letter": lambda o: [o["metadata"]["name"][0]]})
    assert [o["metadata"]["name"] for o in s.by_index("by-first-letter", "y")] == ["y"]


def test_has_indexer_sees_indexers_given_and_added() -> None:
    s = Store({"given": lambda o: []})
    assert s.has_indexer("given")
    assert not s.has_indexer("late")
    s.add_indexers({"late": lambda o: []})
    assert s.has_indexer("late")


def test_drop_fields_and_chain() -> None:
    job = obj(
        "j",
        spec={"template": {"spec": {"containers": [{"name": "c"}]}}, "parallelism": 2},
        status={"active": 1},
    )
    job["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    slim = chain(strip_managed_fields, drop_fields("spec.template", "status.missing.deep"))(job)
    assert "managedFields" not in slim["metadata"]
    assert slim["spec"] == {"parallelism": 2}
    assert slim["status"] == {"active": 1}
    assert drop_fields("a.b")({"a": "not a dict"}) == {"a": "not a dict"}


def test_listeners_see_every_write_after_the_indexes() -> None:
    s = Store({BY_CONTROLLER_UID: index_by_controller_uid})
    seen: list[tuple[str, str | None, str | None, list[str]]] = []

    def listener(key: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        rv = [None if o is None else o["metadata"]["resourceVersion"] for o in (old, new)]
        seen.append((key, rv[0], rv[1], s.index_keys(BY_CONTROLLER_UID, "u1")))

    s.add_listener(listener)
    s.put("a/j1", obj("j1", "a", owner="u1"))
    s.put(
        "a/j1",
        {**obj("j1", "a"), "metadata": {**obj("j1", "a")["metadata"], "resourceVersion": "2"}},
    )
    s.remove("a/j1")
    s.remove("a/j1")  # nothing held: nothing told
    assert seen == [("a/j1", None, "1", ["a/j1"]), ("a/j1", "1", "2", []), ("a/j1", "2", None, [])]
