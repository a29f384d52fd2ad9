"""The pod cache's records: a watch line decoded by `decode_pod_event` is the event
`orjson.loads` gives with its object cut by `pod_record`, whatever the line holds (hostile
input: any JSON, shapes a pod never has, no JSON at all); and every reader of the cache
reads the same of a record as of the whole pod."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobset.api import constants as c
from jobset.controllers.in_place_restart import max_container_restarts, pod_attempts
from jobset.placement.affinity import (
    follower_topology,
    is_leader_pod,
    is_scheduled,
    leader_pod_name,
)
from jobset.placement.caches import decode_pod_event, index_pod_job_key, index_pod_name, pod_record
from jobset.placement.pod_controller import leader_pod_filter

_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=12,
)
_keys = st.sampled_from(
    (
        "metadata",
        "spec",
        "status",
        "kind",
        "name",
        "labels",
        "annotations",
        "nodeName",
        "nodeSelector",
        "containers",
        "phase",
        "conditions",
        "containerStatuses",
        "initContainerStatuses",
        "restartCount",
        "state",
        "managedFields",
        "code",
        "x",
    )
)
# JSON shaped like a pod more often than not: the record's keys at any depth.
_podlike = st.recursive(
    _json,
    lambda inner: st.dictionaries(_keys, inner, max_size=5) | st.lists(inner, max_size=3),
    max_leaves=25,
)


def _pod(index: int = 0, **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"js-w-0-{index}-abcde",
            "generateName": f"js-w-0-{index}-",
            "namespace": "default",
            "uid": f"uid-{index}",
            "resourceVersion": "42",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {
                c.JOBSET_NAME_KEY: "js",
                c.REPLICATED_JOB_NAME_KEY: "w",
                c.JOB_INDEX_KEY: "0",
                c.JOB_KEY: "key",
            },
            "annotations": {
                c.EXCLUSIVE_KEY: "topology.kubernetes.io/zone",
                c.JOB_COMPLETION_INDEX_ANNOTATION: str(index),
                c.IN_PLACE_RESTART_ATTEMPT_KEY: "2",
            },
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": "js-w-0",
                    "uid": "j",
                    "controller": True,
                }
            ],
            "managedFields": [{"manager": "kubelet", "fieldsV1": {"f:status": {}}}],
        },
        "spec": {
            "nodeName": "node-1",
            "nodeSelector": {"topology.kubernetes.io/zone": "z1"},
            "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "inf"]}],
            "volumes": [{"name": "v", "emptyDir": {}}],
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "c", "restartCount": 3, "state": {"running": {}}}],
            "initContainerStatuses": [{"name": "i", "restartCount": 1, "ready": True}],
            **status,
        },
    }


def _same_event(got: Any, want: Any) -> None:
    """`got` is `want` with its object maybe cut to a record: the type and the object are
    what the reflector reads of an event."""
    if not isinstance(want, dict) or want.get("type") == "ERROR":
        assert got == want  # an ERROR event's Status is read whole
        return
    assert got.get("type") == want.get("type")
    obj = want.get("object")
    if isinstance(obj, dict):
        assert got.get("object") in (obj, pod_record(copy.deepcopy(obj)))
    else:
        assert got.get("object") == obj


@settings(max_examples=300, deadline=None)
@given(_podlike, st.sampled_from(("ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR", 7)))
def test_a_decoded_line_is_the_parsed_event_with_its_object_cut(obj: Any, etype: Any) -> None:
    line = orjson.dumps({"type": etype, "object": obj}) + b"\n"
    _same_event(decode_pod_event(line), orjson.loads(line))


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=40) | _json.map(orjson.dumps))
def test_any_line_decodes_as_orjson_or_fails_as_orjson(line: bytes) -> None:
    try:
        want = orjson.loads(line)
    except orjson.JSONDecodeError:
        with pytest.raises(orjson.JSONDecodeError):
            decode_pod_event(line)
        return
    _same_event(decode_pod_event(line), want)


def test_whitespace_and_broken_lines_fail_as_orjson_does() -> None:
    for line in (b"", b"  \n", b'{"type": "ADDED", "object": {', b"\xff\xfe", b"[1, 2"):
        with pytest.raises(orjson.JSONDecodeError):
            decode_pod_event(line)


def test_an_error_event_keeps_its_status_whole() -> None:
    status = {"kind": "Status", "status": "Failure", "code": 410, "message": "too old"}
    for obj in (status, {k: v for k, v in status.items() if k != "status"}):
        event = decode_pod_event(orjson.dumps({"type": "ERROR", "object": obj}))
        assert event == {"type": "ERROR", "object": obj}


def test_a_record_keeps_what_the_readers_read_and_drops_the_rest() -> None:
    pod = _pod(0)
    event = decode_pod_event(orjson.dumps({"type": "MODIFIED", "object": pod}))
    record = event["object"]
    assert record == pod_record(copy.deepcopy(pod))
    assert "managedFields" not in record["metadata"]
    assert "containers" not in record["spec"] and "volumes" not in record["spec"]
    assert record["status"]["containerStatuses"] == [{"name": "c", "restartCount": 3}]
    meta = {k: v for k, v in pod["metadata"].items() if k != "managedFields"}
    assert record["metadata"] == meta
    follower = _pod(1)
    for full, cut in ((pod, record), (follower, pod_record(copy.deepcopy(follower)))):
        assert index_pod_name(cut) == index_pod_name(full)
        assert index_pod_job_key(cut) == index_pod_job_key(full)
        assert is_leader_pod(cut) == is_leader_pod(full)
        assert is_scheduled(cut) == is_scheduled(full)
        assert leader_pod_name(cut) == leader_pod_name(full)
        assert follower_topology(cut, "topology.kubernetes.io/zone") == "z1"
        assert leader_pod_filter(cut) == leader_pod_filter(full)
        assert cut["status"]["conditions"] == full["status"]["conditions"]
    assert max_container_restarts([record]) == max_container_restarts([pod]) == 3
    assert pod_attempts([record]) == pod_attempts([pod]) == ([2], [])
