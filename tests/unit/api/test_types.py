"""Names, indexes and hashes derived from a JobSet: formats other tools rely on."""

from __future__ import annotations

from typing import Any

import pytest

from jobset.api import constants as c
from jobset.api import types as t


def js(**spec: Any) -> dict[str, Any]:
    spec.setdefault(
        "replicatedJobs",
        [
            {"name": "driver", "replicas": 1, "groupName": "g1"},
            {"name": "workers", "replicas": 3, "groupName": "g2"},
            {"name": "ps", "replicas": 2, "groupName": "g1"},
        ],
    )
    return {"metadata": {"name": "myjobset", "namespace": "default"}, "spec": spec}


def test_names() -> None:
    obj = js()
    assert t.job_name(obj, obj["spec"]["replicatedJobs"][1], 2) == "myjobset-workers-2"
    assert t.job_name("a", "b", 0) == "a-b-0"
    assert t.pod_hostname("a", "b", 1, 7) == "a-b-1-7"
    assert t.pvc_name("myjobset", "cache") == "cache-myjobset"
    assert t.namespaced_job_name("ns", "myjobset-workers-0") == "ns_myjobset-workers-0"
    assert [n for _, _, n in t.iter_job_names(obj)] == [
        "myjobset-driver-0",
        "myjobset-workers-0",
        "myjobset-workers-1",
        "myjobset-workers-2",
        "myjobset-ps-0",
        "myjobset-ps-1",
    ]


def test_job_key_is_hex_sha1_of_namespaced_name() -> None:
    key = t.job_key("default", "myjobset-workers-0")
    assert key == "780a8922d62f608fefa71f8b68358cc61a5713b6"
    assert len(key) == 40


def test_subdomain_and_coordinator_endpoint() -> None:
    obj = js(coordinator={"replicatedJob": "driver", "jobIndex": 0, "podIndex": 0})
    assert t.subdomain(obj) == t.headless_service_name(obj) == "myjobset"
    assert t.coordinator_endpoint(obj) == "myjobset-driver-0-0.myjobset"
    obj["spec"]["network"] = {"subdomain": "net"}
    obj["spec"]["coordinator"] = {"replicatedJob": "workers", "jobIndex": 2, "podIndex": 3}
    assert t.coordinator_endpoint(obj) == "myjobset-workers-2-3.net"
    with pytest.raises(KeyError):
        t.coordinator_endpoint(js())


def test_replica_counts_and_indexes() -> None:
    obj = js()
    assert t.global_replicas(obj) == 6
    assert t.group_replicas(obj, "g1") == 3
    assert t.group_replicas(obj, "g2") == 3
    assert t.group_replicas(obj, "none") == 0
    assert t.global_job_index(obj, "driver", 0) == 0
    assert t.global_job_index(obj, "workers", 2) == 3
    assert t.global_job_index(obj, "ps", 1) == 5
    assert t.global_job_index(obj, "missing", 0) is None
    assert t.group_job_index(obj, "g1", "ps", 1) == 2  # after driver's single Job
    assert t.group_job_index(obj, "g2", "workers", 1) == 1
    assert t.group_job_index(obj, "g2", "ps", 0) is None


def test_schema_defaults_assumed_when_absent() -> None:
    bare: dict[str, Any] = {
        "metadata": {"name": "x"},
        "spec": {"replicatedJobs": [{"name": "a"}, {"name": "b"}]},
    }
    assert t.replicas(bare["spec"]["replicatedJobs"][0]) == 1
    assert t.group_name(bare["spec"]["replicatedJobs"][0]) == "default"
    assert t.global_replicas(bare) == 2
    assert t.group_replicas(bare, "default") == 2
    assert t.replicas({"replicas": 0}) == 0


def test_state_helpers() -> None:
    obj = js()
    assert not t.is_suspended(obj)
    assert t.is_managed_by_this_controller(obj)
    obj["spec"]["managedBy"] = c.JOBSET_CONTROLLER_NAME
    assert t.is_managed_by_this_controller(obj)
    obj["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    assert not t.is_managed_by_this_controller(obj)
    obj["spec"]["suspend"] = True
    assert t.is_suspended(obj)
    assert not t.dns_hostnames_enabled(obj)
    assert t.replicated_job_by_name(obj, "ps") is obj["spec"]["replicatedJobs"][2]
    assert t.replicated_job_by_name(obj, "nope") is None


def test_conditions() -> None:
    obj = js()
    assert not t.is_finished(obj)
    obj["status"] = {
        "conditions": [
            {"type": c.CONDITION_SUSPENDED, "status": "True"},
            {"type": c.CONDITION_COMPLETED, "status": "False"},
        ]
    }
    assert t.condition_true(obj, "Suspended")
    assert not t.is_finished(obj)
    assert t.find_condition(obj, "Failed") is None
    obj["status"]["conditions"].append({"type": c.CONDITION_FAILED, "status": "True"})
    assert t.is_finished(obj)


def test_wire_constants_spelling() -> None:
    # A sample of the contract, spelled out so a typo in constants.py cannot go unnoticed.
    assert c.API_VERSION == "jobset.x-k8s.io/v1alpha2"
    assert c.JOB_KEY == "jobset.sigs.k8s.io/job-key"
    assert c.RESTART_ATTEMPT_KEY == "jobset.sigs.k8s.io/restart-attempt"
    assert c.EXECUTION_ATTEMPT_KEY == "jobset.sigs.k8s.io/execution-attempt"
    assert c.EXCLUSIVE_KEY == "alpha.jobset.sigs.k8s.io/exclusive-topology"
    assert c.CONDITION_RESTARTING == "RestartingJobSet"
    assert c.restarting_reason_for_rule("rule1") == "FailurePolicy_rule1"
    assert c.JOBSET_SUSPENDED_REASON == "SuspendedJobs"
    assert c.FAIL_JOBSET_ACTION_REASON == "FailJobSetFailurePolicyAction"
    assert c.DEFAULT_FEATURE_GATES == {
        "InPlaceRestart": False,
        "TLSOptions": True,
        "RestartJob": False,
        "ElasticJobSet": False,
        "ElasticReplicas": False,
        "MutablePodResourcesForSuspendedJobSets": False,
        "ExecutionAttemptsTracking": False,
    }
