"""The kubelet's decision on a container exit (`restartrules.py`) and the simulated emptyDir
volumes (`simfiles.py`)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.kubelet import simfiles
from kubesim.kubelet.restartrules import (
    RESTART,
    RESTART_ALL,
    STAY,
    exit_action,
    has_restart_all_rule,
)


def rule(action: str, operator: str, values: list[int]) -> dict[str, Any]:
    return {"action": action, "exitCodes": {"operator": operator, "values": values}}


@pytest.mark.parametrize(
    ("container", "pod_policy", "code", "init", "expected"),
    [
        # pod policy alone
        ({}, "Never", 1, False, STAY),
        ({}, "OnFailure", 1, False, RESTART),
        ({}, "OnFailure", 0, False, STAY),
        ({}, "Always", 0, False, RESTART),
        # regular init containers: Always acts as OnFailure
        ({}, "Always", 0, True, STAY),
        ({}, "Always", 2, True, RESTART),
        ({}, "Never", 2, True, STAY),
        # sidecars always restart, unless a rule says more
        ({"restartPolicy": "Always"}, "Never", 0, True, RESTART),
        (
            {"restartPolicy": "Always", "restartPolicyRules": [rule(RESTART_ALL, "NotIn", [0])]},
            "Never",
            1,
            True,
            RESTART_ALL,
        ),
        # the container's own policy wins over the pod's
        ({"restartPolicy": "OnFailure"}, "Never", 1, False, RESTART),
        ({"restartPolicy": "Never"}, "Always", 1, False, STAY),
        # rules first, in order; no match falls back to the container policy
        (
            {"restartPolicy": "Never", "restartPolicyRules": [rule(RESTART, "In", [42])]},
            "Never",
            42,
            False,
            RESTART,
        ),
        (
            {"restartPolicy": "Never", "restartPolicyRules": [rule(RESTART, "In", [42])]},
            "Never",
            1,
            False,
            STAY,
        ),
        (
            {
                "restartPolicy": "Never",
                "restartPolicyRules": [rule(RESTART, "In", [3]), rule(RESTART_ALL, "NotIn", [0])],
            },
            "Never",
            3,
            False,
            RESTART,
        ),
        (
            {
                "restartPolicy": "Never",
                "restartPolicyRules": [rule(RESTART, "In", [3]), rule(RESTART_ALL, "NotIn", [0])],
            },
            "Never",
            7,
            False,
            RESTART_ALL,
        ),
        (
            {"restartPolicy": "Never", "restartPolicyRules": [rule(RESTART_ALL, "NotIn", [0])]},
            "Never",
            0,
            False,
            STAY,
        ),
    ],
    ids=[
        "pod Never",
        "pod OnFailure on failure",
        "pod OnFailure on success",
        "pod Always",
        "init container Always on success",
        "init container Always on failure",
        "init container Never",
        "sidecar restarts",
        "sidecar rule restarts all",
        "container OnFailure over pod Never",
        "container Never over pod Always",
        "matching rule",
        "no rule matches",
        "first matching rule wins",
        "later rule matches",
        "NotIn rule on success",
    ],
)
def test_exit_action(
    container: dict[str, Any], pod_policy: str, code: int, init: bool, expected: str
) -> None:
    assert exit_action(container, pod_policy, code, init=init) == expected


def test_has_restart_all_rule() -> None:
    assert not has_restart_all_rule({"containers": [{"name": "a"}]})
    assert not has_restart_all_rule(
        {"containers": [{"name": "a", "restartPolicyRules": [rule(RESTART, "In", [1])]}]}
    )
    assert has_restart_all_rule(
        {"initContainers": [{"name": "s", "restartPolicyRules": [rule(RESTART_ALL, "In", [1])]}]}
    )


POD: dict[str, Any] = {
    "spec": {
        "volumes": [{"name": "scratch", "emptyDir": {}}, {"name": "cfg", "configMap": {}}],
    }
}


def test_simfiles_view_and_apply_through_mounts() -> None:
    writer = {
        "volumeMounts": [
            {"name": "scratch", "mountPath": "/data"},
            {"name": "cfg", "mountPath": "/etc/cfg"},
        ]
    }
    reader = {"volumeMounts": [{"name": "scratch", "mountPath": "/in", "subPath": "sub"}]}
    w, r = simfiles.emptydir_mounts(POD, writer), simfiles.emptydir_mounts(POD, reader)
    assert [m.path for m in w] == ["/data"]  # only emptyDir volumes are simulated files
    files: simfiles.PodFiles = {}
    simfiles.apply(files, w, "/data/sub/a", "A")
    simfiles.apply(files, w, "/data/top", "T")
    simfiles.apply(files, w, "/elsewhere/x", "lost")
    assert files == {("scratch", "sub/a"): "A", ("scratch", "top"): "T"}
    assert simfiles.view(files, w) == {"/data/sub/a": "A", "/data/top": "T"}
    assert simfiles.view(files, r) == {"/in/a": "A"}
    simfiles.apply(files, r, "/in/b", "B")
    assert files[("scratch", "sub/b")] == "B"
    simfiles.apply(files, w, "/data/top", None)
    assert ("scratch", "top") not in files


def test_simfiles_read_only_mount_is_not_written() -> None:
    ro = simfiles.emptydir_mounts(
        POD, {"volumeMounts": [{"name": "scratch", "mountPath": "/ro", "readOnly": True}]}
    )
    files: simfiles.PodFiles = {}
    simfiles.apply(files, ro, "/ro/x", "no")
    assert files == {}
    assert simfiles.writable_paths(ro) == []
