"""A webhook's JSONPatch applied without copying what it does not touch: the same result
and the same errors as `jsonpatch.apply_patch`, the object passed in left as it was."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import pytest

from kubesim.apiserver.core.webhookpatch import apply_patch


def _pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "labels": {"a": "1", "x/y": "2"},
            "annotations": {"k~n": "v"},
            "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {}}}],
        },
        "spec": {
            "containers": [
                {"name": "c", "image": "i", "env": [{"name": "E", "value": "1"}]},
                {"name": "d", "image": "j"},
            ],
            "nodeSelector": {"pool": "a"},
        },
    }


PATCHES: list[list[dict[str, Any]]] = [
    [{"op": "add", "path": "/metadata/labels/b", "value": "3"}],
    [{"op": "add", "path": "/metadata/labels/x~1z", "value": "4"}],
    [{"op": "replace", "path": "/metadata/annotations/k~0n", "value": "w"}],
    [{"op": "remove", "path": "/spec/containers/0/env/0"}],
    [{"op": "add", "path": "/spec/containers/-", "value": {"name": "e", "image": "k"}}],
    [{"op": "add", "path": "/spec/affinity", "value": {"nodeAffinity": {}}}],
    [
        {"op": "add", "path": "/spec/affinity", "value": {"a": {}}},
        {"op": "add", "path": "/spec/affinity/a/b", "value": 1},
    ],
    [
        {"op": "move", "from": "/spec/nodeSelector", "path": "/metadata/moved"},
        {"op": "add", "path": "/metadata/moved/pool", "value": "b"},
    ],
    [
        {"op": "copy", "from": "/spec/containers/1", "path": "/spec/containers/0"},
        {"op": "replace", "path": "/spec/containers/0/name", "value": "copy"},
    ],
    [
        {"op": "test", "path": "/metadata/name", "value": "p"},
        {"op": "replace", "path": "/spec/containers/1/image", "value": "z"},
    ],
    [{"op": "replace", "path": "", "value": {"metadata": {"name": "whole"}}}],
    [
        {"op": "move", "from": "/spec", "path": ""},
        {"op": "add", "path": "/nodeSelector/b", "value": "c"},
    ],
    [],
]


@pytest.mark.parametrize("operations", PATCHES)
def test_same_result_as_jsonpatch_and_the_object_unchanged(
    operations: list[dict[str, Any]],
) -> None:
    pod = _pod()
    before = copy.deepcopy(pod)
    expected = jsonpatch.apply_patch(copy.deepcopy(pod), copy.deepcopy(operations))
    assert apply_patch(pod, copy.deepcopy(operations)) == expected
    assert pod == before


def test_untouched_parts_are_shared_not_copied() -> None:
    pod = _pod()
    patched = apply_patch(pod, [{"op": "add", "path": "/metadata/labels/b", "value": "3"}])
    assert patched["metadata"]["labels"] == {"a": "1", "x/y": "2", "b": "3"}
    assert pod["metadata"]["labels"] == {"a": "1", "x/y": "2"}
    assert patched is not pod and patched["metadata"] is not pod["metadata"]
    assert patched["spec"] is pod["spec"]  # nothing under /spec was written
    assert patched["metadata"]["managedFields"] is pod["metadata"]["managedFields"]


BAD: list[Any] = [
    [{"op": "add", "path": "/metadata/nope/x", "value": 1}],  # parent missing
    [{"op": "remove", "path": "/spec/containers/7"}],
    [{"op": "replace", "path": "/metadata/labels/zz", "value": 1}],
    [{"op": "test", "path": "/metadata/name", "value": "q"}],
    [{"op": "bogus", "path": "/a"}],
    [{"path": "/a"}],
    ["add"],
    [{"op": "add", "path": "metadata", "value": 1}],  # not a pointer
    [{"op": "add", "path": "/spec/containers/x/name", "value": 1}],
    [{"op": "add", "path": "/spec/containers/²/name", "value": 1}],
    [{"op": "move", "from": "/spec", "path": "/spec/inner"}],
    # A valid first operation, then a failing one: the object passed in is still untouched.
    [
        {"op": "add", "path": "/metadata/labels/b", "value": "3"},
        {"op": "remove", "path": "/metadata/none"},
    ],
]


@pytest.mark.parametrize("operations", BAD)
def test_the_same_errors_as_jsonpatch(operations: list[Any]) -> None:
    pod = _pod()
    before = copy.deepcopy(pod)
    with pytest.raises(Exception) as theirs:
        jsonpatch.apply_patch(copy.deepcopy(pod), copy.deepcopy(operations))
    with pytest.raises(Exception) as ours:
        apply_patch(pod, copy.deepcopy(operations))
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == str(theirs.value)
    assert pod == before


EDGES: list[Any] = [
    [{"op": "add", "path": "/spec/containers/2", "value": {"name": "end"}}],
    [{"op": "add", "path": "/spec/containers/0", "value": {"name": "first"}}],
    [{"op": "add", "path": "/spec/containers/3", "value": {}}],
    [{"op": "add", "path": "/spec/containers/01/name", "value": "x"}],
    [{"op": "replace", "path": "/spec/containers/-", "value": {}}],
    [{"op": "remove", "path": "/spec/containers/-"}],
    [{"op": "replace", "path": "/spec/containers/1", "value": {"name": "r"}}],
    [{"op": "remove", "path": "/spec/containers/1"}],
    [{"op": "remove", "path": "/metadata/labels/a"}],
    [{"op": "add", "path": "/metadata/name/x", "value": 1}],
    [{"op": "add", "path": "/metadata/labels/~2", "value": "1"}],
    [{"op": "add", "path": "/metadata/labels/b"}],
    [{"op": "replace", "path": "/metadata/labels/a"}],
    [{"op": "add", "path": "/metadata/labels/b", "value": "1"}, {"op": "nope", "path": "/a"}],
    [{"op": "add", "path": "/metadata/-", "value": "1"}],
    [{"op": "add", "path": "/spec/containers/-/name", "value": "1"}],
    [
        {"op": "add", "path": "/metadata/labels/b", "value": "1"},
        {"op": "remove", "path": "/metadata/labels/b"},
        {"op": "replace", "path": "/metadata/labels/a", "value": "2"},
    ],
]


@pytest.mark.parametrize("operations", EDGES)
def test_edges_behave_as_jsonpatch(operations: list[Any]) -> None:
    """Indexes at and past the end, `-`, bad escapes, missing members: the same result or
    the same error, and the object passed in untouched either way."""
    pod = _pod()
    before = copy.deepcopy(pod)
    try:
        expected: Any = jsonpatch.apply_patch(copy.deepcopy(pod), copy.deepcopy(operations))
    except Exception as exc:
        expected = (type(exc), str(exc))
    try:
        got: Any = apply_patch(pod, copy.deepcopy(operations))
    except Exception as exc:
        got = (type(exc), str(exc))
    assert got == expected
    assert pod == before
