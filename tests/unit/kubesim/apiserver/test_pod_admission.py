"""The ServiceAccount and Priority admission plugins on a pod's create (pure; the
integration tests send pods through kubectl)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.apiserver.registry.core.podadmission import (
    SA_MOUNT_PATH,
    PriorityRefused,
    admit_priority,
    admit_service_account,
)


def _spec(**extra: Any) -> dict[str, Any]:
    return {
        "initContainers": [{"name": "init", "image": "busybox"}],
        "containers": [
            {"name": "a", "image": "busybox"},
            {"name": "b", "image": "busybox", "volumeMounts": [
                {"name": "own", "mountPath": SA_MOUNT_PATH}]},
        ],
        "volumes": [{"name": "own", "emptyDir": {}}],
        **extra,
    }  # fmt: skip


def test_the_token_volume_is_added_and_mounted_where_nothing_is() -> None:
    spec = _spec()
    admit_service_account(spec, None, lambda: "x2b4z")
    assert spec["serviceAccountName"] == "default"
    volume = spec["volumes"][-1]
    assert volume["name"] == "kube-api-access-x2b4z"
    sources = volume["projected"]["sources"]
    assert [next(iter(s)) for s in sources] == ["serviceAccountToken", "configMap", "downwardAPI"]
    mount = {"name": "kube-api-access-x2b4z", "readOnly": True, "mountPath": SA_MOUNT_PATH}
    assert spec["initContainers"][0]["volumeMounts"] == [mount]
    assert spec["containers"][0]["volumeMounts"] == [mount]
    assert spec["containers"][1]["volumeMounts"] == [{"name": "own", "mountPath": SA_MOUNT_PATH}]


@pytest.mark.parametrize(
    ("pod_says", "account_says", "mounted"),
    [
        pytest.param(None, None, True, id="default"),
        pytest.param(False, None, False, id="pod-off"),
        pytest.param(None, False, False, id="account-off"),
        pytest.param(True, False, True, id="pod-overrides-account"),
    ],
)
def test_automount(pod_says: bool | None, account_says: bool | None, mounted: bool) -> None:
    spec = _spec(serviceAccountName="worker")
    if pod_says is not None:
        spec["automountServiceAccountToken"] = pod_says
    account = {} if account_says is None else {"automountServiceAccountToken": account_says}
    admit_service_account(spec, account, lambda: "abcde")
    names = [v["name"] for v in spec["volumes"]]
    assert ("kube-api-access-abcde" in names) is mounted


CLASSES = {
    "low": {"metadata": {"name": "low"}, "value": 10},
    "never": {"metadata": {"name": "never"}, "value": 50, "preemptionPolicy": "Never"},
}


def test_priority_comes_from_the_class_or_zero() -> None:
    spec: dict[str, Any] = {"priorityClassName": "never"}
    admit_priority(spec, CLASSES)
    assert (spec["priority"], spec["preemptionPolicy"]) == (50, "Never")
    bare: dict[str, Any] = {}
    admit_priority(bare, CLASSES)
    assert (bare["priority"], bare["preemptionPolicy"]) == (0, "PreemptLowerPriority")
    assert "priorityClassName" not in bare


def test_the_global_default_class_applies() -> None:
    classes = {**CLASSES, "dflt": {"metadata": {"name": "dflt"}, "value": 7, "globalDefault": True}}
    spec: dict[str, Any] = {}
    admit_priority(spec, classes)
    assert (spec["priorityClassName"], spec["priority"]) == ("dflt", 7)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param(
            {"priority": 1000000000},
            "the integer value of priority (1000000000) must not be provided in pod spec; "
            "priority admission controller computed 0 from the given PriorityClass name",
            id="own-priority",
        ),
        pytest.param(
            {"priorityClassName": "low", "priority": 99},
            "the integer value of priority (99) must not be provided in pod spec; "
            "priority admission controller computed 10 from the given PriorityClass name",
            id="mismatch",
        ),
        pytest.param(
            {"priorityClassName": "nope"}, "no PriorityClass with name nope was found", id="missing"
        ),
        pytest.param(
            {"priorityClassName": "never", "preemptionPolicy": "PreemptLowerPriority"},
            "the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided "
            "in pod spec; priority admission controller computed Never from the given "
            "PriorityClass name",
            id="policy-mismatch",
        ),
    ],
)
def test_refusals(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(PriorityRefused) as err:
        admit_priority(spec, CLASSES)
    assert str(err.value) == message
