"""The SDK models give back exactly what they were given, and expose it typed."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from jobset.sdk.models import (
    Container,
    EnvVar,
    JobSet,
    JobSetSpec,
    ObjectMeta,
    ReplicatedJob,
    dump_all,
    load_all,
)

from .manifests import MANIFESTS


def _keys_in_order(value: Any) -> Any:
    """The dict with every mapping turned into a list of items: equal only if keys are in
    the same order at every level."""
    if isinstance(value, dict):
        return [(k, _keys_in_order(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [_keys_in_order(v) for v in value]
    return value


@pytest.mark.parametrize("name", sorted(MANIFESTS))
def test_dict_round_trip_is_exact(name: str) -> None:
    data = yaml.safe_load(MANIFESTS[name])
    before = copy.deepcopy(data)
    out = JobSet.from_dict(data).to_dict()
    assert out == data
    assert _keys_in_order(out) == _keys_in_order(data)
    assert data == before  # the input is not modified


@pytest.mark.parametrize("name", sorted(MANIFESTS))
def test_yaml_round_trip_is_exact(name: str) -> None:
    data = yaml.safe_load(MANIFESTS[name])
    again = yaml.safe_load(JobSet.from_yaml(MANIFESTS[name]).to_yaml())
    assert again == data


def test_typed_access_to_every_feature() -> None:
    js = JobSet.from_yaml(MANIFESTS["everything"])
    assert js.name == "everything" and js.namespace == "ml"
    assert js.metadata is not None and js.metadata.generation == 3
    spec = js.spec
    assert spec is not None
    assert spec.suspend is True and spec.ttl_seconds_after_finished == 600
    assert spec.managed_by == "example.com/my-controller"
    assert spec.coordinator is not None and spec.coordinator.replicated_job == "driver"
    assert spec.network is not None
    assert spec.network.enable_dns_hostnames is True
    assert spec.network.publish_not_ready_addresses is False
    assert spec.network.subdomain == "everything-net"
    assert spec.success_policy is not None and spec.success_policy.operator == "Any"
    assert spec.startup_policy is not None
    assert spec.startup_policy.startup_policy_order == "AnyOrder"
    fp = spec.failure_policy
    assert fp is not None and fp.max_restarts == 5 and fp.restart_strategy == "BlockingRecreate"
    assert fp.rules is not None and [r.action for r in fp.rules] == [
        "FailJobSet",
        "RestartJobSetAndIgnoreMaxRestarts",
    ]
    assert fp.rules[0].on_job_failure_message_patterns == ["exit code 42"]
    vcp = spec.volume_claim_policies
    assert vcp is not None and vcp[0].retention_policy is not None
    assert vcp[0].retention_policy.when_deleted == "Retain"
    driver = js.replicated_job("driver")
    assert driver is not None and driver.group_name == "control"
    assert driver.template is not None and driver.template.spec is not None
    pod = driver.template.spec.template
    assert pod is not None and pod.spec is not None
    assert pod.spec.service_account_name == "trainer"
    assert pod.spec.node_selector == {"cloud.google.com/gke-accelerator": "nvidia-h100-80gb"}
    assert pod.spec.init_containers is not None
    assert pod.spec.init_containers[1].restart_policy == "Always"
    main = (pod.spec.containers or [])[0]
    assert main.working_dir == "/work" and main.args == ["--epochs", "2"]
    assert main.env_value("A") == "1" and main.env_value("POD_IP") is None
    assert main.extra == {"securityContext": {"privileged": True}}
    workers = js.replicated_job("workers")
    assert workers is not None and workers.depends_on is not None
    assert (workers.depends_on[0].name, workers.depends_on[0].status) == ("driver", "Ready")
    assert workers.template is not None and workers.template.spec is not None
    assert workers.template.spec.backoff_limit_per_index == 1
    assert workers.template.spec.pod_failure_policy is not None
    status = js.status
    assert status is not None and status.restarts == 2 and status.restarts_count_towards_max == 1
    assert js.terminal_state == "Completed" and js.is_finished
    assert js.condition_true("Completed") and not js.condition_true("Failed")
    rjs = status.replicated_jobs_status or []
    assert rjs[1].job_restarts == [0, 1, 0, 0]


def test_ill_typed_values_are_kept_verbatim_not_coerced() -> None:
    js = JobSet.from_yaml(MANIFESTS["odd"])
    assert js.spec is not None
    assert js.spec.suspend is None and js.spec.extra["suspend"] == "yes"
    rjob = (js.spec.replicated_jobs or [])[0]
    assert rjob.replicas is None and rjob.extra["replicas"] is True  # a bool is no count
    assert js.metadata is not None and js.metadata.labels is None  # int label value
    assert js.extra == {"futureTopLevel": {"x": 1}}
    assert js.spec.failure_policy is not None and js.spec.failure_policy.max_restarts is None


def test_explicit_null_survives_but_a_cleared_field_disappears() -> None:
    data = yaml.safe_load(MANIFESTS["odd"])
    js = JobSet.from_dict(data)
    assert js.to_dict()["spec"]["ttlSecondsAfterFinished"] is None
    assert js.spec is not None and js.spec.network is not None
    js.spec.network.subdomain = None
    out = js.to_dict()
    assert "subdomain" not in out["spec"]["network"]
    assert out["spec"]["network"]["futureNetworkField"] is True


def test_changes_are_written_in_place_and_new_fields_follow() -> None:
    js = JobSet.from_yaml(MANIFESTS["minimal"])
    assert js.spec is not None and js.spec.replicated_jobs is not None
    rjob = js.spec.replicated_jobs[0]
    rjob.replicas = 3
    js.spec.suspend = True
    out = js.to_dict()
    assert out["spec"]["replicatedJobs"][0]["replicas"] == 3
    assert list(out["spec"]) == ["replicatedJobs", "suspend"]
    # keys read keep their order; a field set afterwards comes after them
    assert list(out["spec"]["replicatedJobs"][0]) == ["name", "template", "replicas"]


def test_extra_is_writable() -> None:
    js = JobSet.new("x")
    js.extra["futureField"] = {"a": 1}
    assert js.to_dict()["futureField"] == {"a": 1}


def test_equality_and_copy_are_deep() -> None:
    a = JobSet.from_yaml(MANIFESTS["everything"])
    b = a.copy()
    assert a == b and a is not b
    assert b.spec is not None and b.spec.replicated_jobs is not None
    b.spec.replicated_jobs[0].replicas = 9
    assert a != b
    assert a.to_dict()["spec"]["replicatedJobs"][0]["replicas"] == 1


def test_construct_from_scratch() -> None:
    js = JobSet(
        api_version="jobset.x-k8s.io/v1alpha2",
        kind="JobSet",
        metadata=ObjectMeta(name="x"),
        spec=JobSetSpec(
            replicated_jobs=[
                ReplicatedJob(name="w", replicas=2),
            ]
        ),
    )
    assert js.to_dict() == {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "x"},
        "spec": {"replicatedJobs": [{"name": "w", "replicas": 2}]},
    }
    c = Container(name="c", env=[EnvVar(name="A", value="1")])
    assert c.to_dict() == {"name": "c", "env": [{"name": "A", "value": "1"}]}
    assert "replicas=2" in repr(js) and "None" not in repr(js)


def test_load_all_and_dump_all() -> None:
    text = MANIFESTS["minimal"] + "\n---\n" + MANIFESTS["in-order-groups"] + "\n---\n"
    docs = load_all(text)
    assert [d.name for d in docs] == ["minimal", ""]
    assert [d.to_dict() for d in load_all(dump_all(docs))] == [d.to_dict() for d in docs]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- a\n- b\n", "document 1: not a YAML mapping"),
        ("apiVersion: v1\nkind: ConfigMap\n", "document 1: expected apiVersion"),
        (MANIFESTS["minimal"] + "---\napiVersion: batch/v1\nkind: Job\n", "document 2"),
    ],
    ids=["a list, not a mapping", "another kind", "a second document of another kind"],
)
def test_load_all_rejects_other_documents(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_all(text)
