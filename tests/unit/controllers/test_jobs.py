"""Child objects: Job construction (labels, annotations, owner, placement, volumes),
resume merge, headless Service, PVCs.

Tests name the cases of upstream's pkg/controllers/jobset_controller_test.go they cover
(`# upstream TestConstructJobsFromTemplate: "<name>"`, or the case's id).
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from jobset.controllers.classify import Children
from jobset.controllers.jobs import (
    PendingJobs,
    construct_job,
    merge_lists,
    missing_indices,
    resume_patch,
)
from jobset.controllers.network import headless_service
from jobset.controllers.volumes import persistent_volume_claims

from .helpers import NS, UID, child, jobset, rjob


def _two_groups() -> dict[str, Any]:
    return jobset(
        rjob("leader", 1, groupName="g1"),
        rjob("workers", 3, groupName="g2"),
        rjob("ps", 2, groupName="g1"),
        name="train",
        status={"restarts": 2},
        coordinator={"replicatedJob": "leader", "jobIndex": 0, "podIndex": 0},
    )


def test_every_jobset_key_on_job_and_pod_template() -> None:
    # upstream TestConstructJobsFromTemplate: "all jobs/pods created with labels and annotations"
    # upstream TestConstructJobsFromTemplate: "coordinator"
    # upstream TestConstructJobsFromTemplate: "JobRestartAttempt not added when RestartJob feature is disabled"
    js = _two_groups()
    ps = js["spec"]["replicatedJobs"][2]
    job = construct_job(js, ps, 1)
    expected = {
        "jobset.sigs.k8s.io/jobset-name": "train",
        "jobset.sigs.k8s.io/jobset-uid": UID,
        "jobset.sigs.k8s.io/replicatedjob-name": "ps",
        "jobset.sigs.k8s.io/replicatedjob-replicas": "2",
        "jobset.sigs.k8s.io/global-replicas": "6",
        "jobset.sigs.k8s.io/job-index": "1",
        "jobset.sigs.k8s.io/job-global-index": "5",
        "jobset.sigs.k8s.io/job-key": hashlib.sha1(b"default/train-ps-1").hexdigest(),
        "jobset.sigs.k8s.io/restart-attempt": "2",
        "jobset.sigs.k8s.io/group-name": "g1",
        "jobset.sigs.k8s.io/group-replicas": "3",
        "jobset.sigs.k8s.io/job-group-index": "2",
        "jobset.sigs.k8s.io/coordinator": "train-leader-0-0.train",
    }
    assert job["metadata"]["name"] == "train-ps-1"
    assert job["metadata"]["namespace"] == NS
    for meta in (job["metadata"], job["spec"]["template"]["metadata"]):
        assert meta["labels"] == expected
        assert meta["annotations"] == expected
    assert "jobset.sigs.k8s.io/job-restart-attempt" not in job["metadata"]["labels"]


def test_owner_reference_suspend_and_subdomain() -> None:
    # upstream TestConstructJobsFromTemplate: "suspend job set"
    # upstream TestConstructJobsFromTemplate: "pod dns hostnames enabled"
    js = jobset(rjob("a"), suspend=True, network={"subdomain": "net"})
    job = construct_job(js, js["spec"]["replicatedJobs"][0], 0)
    assert job["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "name": "js",
            "uid": UID,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert job["spec"]["suspend"] is True
    assert job["spec"]["template"]["spec"]["subdomain"] == "net"
    assert job["spec"]["completionMode"] == "Indexed"


def test_no_subdomain_when_dns_hostnames_disabled() -> None:
    # upstream TestConstructJobsFromTemplate: "resume job set"
    js = jobset(rjob("a"), network={"enableDNSHostnames": False})
    job = construct_job(js, js["spec"]["replicatedJobs"][0], 0)
    assert "subdomain" not in job["spec"]["template"]["spec"]
    assert job["spec"]["suspend"] is False


def test_template_labels_and_annotations_kept_and_template_untouched() -> None:
    r = rjob("a")
    r["template"]["metadata"] = {"labels": {"team": "ml"}, "annotations": {"note": "x"}}
    r["template"]["spec"]["template"]["metadata"] = {"labels": {"pod": "yes"}}
    js = jobset(r)
    template = js["spec"]["replicatedJobs"][0]
    job = construct_job(js, template, 0)
    assert job["metadata"]["labels"]["team"] == "ml"
    assert job["metadata"]["annotations"]["note"] == "x"
    assert job["spec"]["template"]["metadata"]["labels"]["pod"] == "yes"
    assert template["template"]["spec"]["template"]["metadata"] == {"labels": {"pod": "yes"}}


def test_per_job_restart_attempt_label_with_gate() -> None:
    # upstream TestConstructJobsFromTemplate: "JobRestartAttempt based on ReplicatedJobsStatus"
    status = {"replicatedJobsStatus": [{"name": "a", "jobRestarts": [0, 4]}]}
    js = jobset(rjob("a", 2), status=status)
    job = construct_job(js, js["spec"]["replicatedJobs"][0], 1, restart_job=True)
    assert job["metadata"]["labels"]["jobset.sigs.k8s.io/job-restart-attempt"] == "4"
    assert job["metadata"]["annotations"]["jobset.sigs.k8s.io/job-restart-attempt"] == "4"


@pytest.mark.parametrize(
    ("js_ann", "rjob_ann", "expected"),
    [
        (
            {"alpha.jobset.sigs.k8s.io/exclusive-topology": "pool"},
            {},
            {"alpha.jobset.sigs.k8s.io/exclusive-topology": "pool"},
        ),
        (
            {},
            {"alpha.jobset.sigs.k8s.io/exclusive-topology": "rack"},
            {"alpha.jobset.sigs.k8s.io/exclusive-topology": "rack"},
        ),
        (
            {"alpha.jobset.sigs.k8s.io/exclusive-topology": "pool"},
            {"alpha.jobset.sigs.k8s.io/exclusive-topology": "rack"},
            {"alpha.jobset.sigs.k8s.io/exclusive-topology": "rack"},
        ),
        # node-selector without exclusive-topology at the same level is not copied
        ({"alpha.jobset.sigs.k8s.io/node-selector": "true"}, {}, {}),
    ],
    ids=[
        "exclusive placement for entire JobSet",
        "exclusive placement for a ReplicatedJob",
        "not upstream: the ReplicatedJob's annotation wins",
        "not upstream: node-selector alone is not copied",
    ],
)
def test_exclusive_placement_annotations(
    js_ann: dict[str, str], rjob_ann: dict[str, str], expected: dict[str, str]
) -> None:
    r = rjob("a")
    if rjob_ann:
        r["template"]["metadata"] = {"annotations": dict(rjob_ann)}
    js = jobset(r, annotations=js_ann)
    job = construct_job(js, js["spec"]["replicatedJobs"][0], 0)
    for meta in (job["metadata"], job["spec"]["template"]["metadata"]):
        placement = {k: v for k, v in meta["annotations"].items() if k.startswith("alpha.")}
        assert placement == expected
        assert not any(k.startswith("alpha.") for k in meta["labels"])
    assert "nodeSelector" not in job["spec"]["template"]["spec"]


def test_node_selector_strategy() -> None:
    # upstream TestConstructJobsFromTemplate: "node selector exclusive placement strategy enabled"
    js = jobset(
        rjob("a", 2),
        annotations={
            "alpha.jobset.sigs.k8s.io/exclusive-topology": "cloud.google.com/gke-nodepool",
            "alpha.jobset.sigs.k8s.io/node-selector": "true",
        },
    )
    job = construct_job(js, js["spec"]["replicatedJobs"][0], 1)
    pod = job["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"alpha.jobset.sigs.k8s.io/namespaced-job": "default_js-a-1"}
    assert pod["tolerations"] == [
        {
            "key": "alpha.jobset.sigs.k8s.io/no-schedule",
            "operator": "Exists",
            "effect": "NoSchedule",
        }
    ]


def _to_create(js: dict[str, Any], children: Children) -> list[str]:
    """The names of the Jobs a pass would create for the JobSet's first ReplicatedJob."""
    rjob = js["spec"]["replicatedJobs"][0]
    pending = PendingJobs(js)
    pending.add(rjob, missing_indices(js, rjob, children))
    built = [j["metadata"]["name"] for j in pending]
    assert built == pending.names()  # building and naming agree
    return built


def test_missing_jobs_skip_existing_names_and_block_on_previous() -> None:
    # upstream TestConstructJobsFromTemplate: "one job created, one job not created (already active)"
    # upstream TestConstructJobsFromTemplate: "job creation blocked until all previous jobs no longer exist"
    js = jobset(rjob("a", 3), status={"restarts": 1})
    old = child(js, "a", 0, labels={"jobset.sigs.k8s.io/restart-attempt": "0"})
    current = child(js, "a", 1)
    children = Children(active=[current], previous=[old])
    assert _to_create(js, children) == ["js-a-2"]  # js-a-0 waits until the previous one is gone
    blocking = jobset(
        rjob("a", 3), status={"restarts": 1}, failurePolicy={"restartStrategy": "BlockingRecreate"}
    )
    assert _to_create(blocking, children) == []


def test_resume_patch_merges_template_fields() -> None:
    r = rjob("a")
    pod_template = r["template"]["spec"]["template"]
    pod_template["metadata"] = {"labels": {"kueue": "new", "shared": "template"}}
    pod_template["spec"]["nodeSelector"] = {"pool": "a"}
    pod_template["spec"]["tolerations"] = [{"key": "t2", "operator": "Exists"}]
    pod_template["spec"]["schedulingGates"] = [{"name": "gate"}]
    js = jobset(r)
    job = child(js, "a", 0, suspend=True)
    job["spec"]["template"]["metadata"]["labels"]["shared"] = "job"
    job["spec"]["template"]["spec"]["tolerations"] = [{"key": "t1", "operator": "Exists"}]
    patch = resume_patch(job, js["spec"]["replicatedJobs"][0])
    assert patch["metadata"] == {"resourceVersion": "3"}
    assert patch["spec"]["suspend"] is False
    tmpl = patch["spec"]["template"]
    assert tmpl["metadata"]["labels"]["kueue"] == "new"
    assert tmpl["metadata"]["labels"]["shared"] == "template"
    assert tmpl["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-name"] == "js"
    assert tmpl["spec"]["nodeSelector"] == {"pool": "a"}
    assert tmpl["spec"]["tolerations"] == [
        {"key": "t1", "operator": "Exists"},
        {"key": "t2", "operator": "Exists"},
    ]
    assert tmpl["spec"]["schedulingGates"] == [{"name": "gate"}]


def test_merge_lists_is_an_ordered_union() -> None:
    assert merge_lists([1, 2], [2, 3, 1, 4]) == [1, 2, 3, 4]
    assert merge_lists(None, None) == []


def test_headless_service() -> None:
    # upstream TestCreateHeadlessSvcIfNecessary: "service does not exist and should be created, subdomain set"
    # upstream TestCreateHeadlessSvcIfNecessary: "service does not exist and should be created, subdomain not set"
    # upstream TestCreateHeadlessSvcIfNecessary: "service does not exist and should be created, publishNotReadyAddresses is false"
    # upstream TestCreateHeadlessSvcIfNecessary: "service does not exist and should be created, publishNotReadyAddresses is true"
    js = jobset(rjob("a"), network={"subdomain": "net", "publishNotReadyAddresses": False})
    svc = headless_service(js)
    assert svc["metadata"]["name"] == "net"
    assert svc["metadata"]["ownerReferences"][0]["uid"] == UID
    assert svc["spec"] == {
        "clusterIP": "None",
        "selector": {"jobset.sigs.k8s.io/jobset-name": "js"},
        "publishNotReadyAddresses": False,
    }
    assert headless_service(jobset(rjob("a")))["metadata"]["name"] == "js"
    assert headless_service(jobset(rjob("a")))["spec"]["publishNotReadyAddresses"] is True


def _claim(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"x": "y"}},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }


def test_volume_claim_policies() -> None:
    # upstream TestConstructJobsFromTemplate: "volume-claim-policies"
    r = rjob("a")
    r["template"]["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = [
        {"name": "ckpt", "mountPath": "/ckpt"}
    ]
    js = jobset(
        r,
        volumeClaimPolicies=[
            {"templates": [_claim("ckpt")], "retentionPolicy": {"whenDeleted": "Delete"}},
            {"templates": [_claim("data")], "retentionPolicy": {"whenDeleted": "Retain"}},
        ],
    )
    pvcs = {p["metadata"]["name"]: p for p in persistent_volume_claims(js)}
    assert set(pvcs) == {"ckpt-js", "data-js"}
    assert pvcs["ckpt-js"]["metadata"]["ownerReferences"][0]["kind"] == "JobSet"
    assert "ownerReferences" not in pvcs["data-js"]["metadata"]
    assert pvcs["data-js"]["metadata"]["labels"] == {
        "x": "y",
        "jobset.sigs.k8s.io/jobset-name": "js",
    }
    job = construct_job(js, js["spec"]["replicatedJobs"][0], 0)
    # only the mounted claim becomes a volume
    assert job["spec"]["template"]["spec"]["volumes"] == [
        {"name": "ckpt", "persistentVolumeClaim": {"claimName": "ckpt-js"}}
    ]


def _keys_one_job_at_a_time(
    js: dict[str, Any], rj: dict[str, Any], index: int, restart_job: bool
) -> dict[str, str]:
    """The keys as `jobset_keys` built them per Job before `JobKeys`: every count and
    offset looked up for this one Job (the reference the shared computation must equal)."""
    from jobset.api import constants as c
    from jobset.api import types as t
    from jobset.controllers.classify import job_restarts

    status = js.get("status") or {}
    name = t.job_name(js, rj, index)
    keys = {
        c.JOBSET_NAME_KEY: t.name_of(js),
        c.JOBSET_UID_KEY: str(js["metadata"].get("uid") or ""),
        c.REPLICATED_JOB_NAME_KEY: rj["name"],
        c.RESTART_ATTEMPT_KEY: str(int(status.get("restarts") or 0)),
    }
    if restart_job:
        targets = job_restarts(js, status, rj["name"])
        keys[c.JOB_RESTART_ATTEMPT_KEY] = str(targets[index] if index < len(targets) else 0)
    group_index = t.group_job_index(js, t.group_name(rj), rj["name"], index)
    global_index = t.global_job_index(js, rj["name"], index)
    keys |= {
        c.REPLICATED_JOB_REPLICAS_KEY: str(t.replicas(rj)),
        c.GLOBAL_REPLICAS_KEY: str(t.global_replicas(js)),
        c.JOB_INDEX_KEY: str(index),
        c.JOB_KEY: t.job_key(NS, name),
        c.JOB_GLOBAL_INDEX_KEY: "" if global_index is None else str(global_index),
        c.GROUP_NAME_KEY: t.group_name(rj),
        c.GROUP_REPLICAS_KEY: str(t.group_replicas(js, t.group_name(rj))),
        c.JOB_GROUP_INDEX_KEY: "" if group_index is None else str(group_index),
    }
    if js["spec"].get("coordinator") is not None:
        keys[c.COORDINATOR_KEY] = t.coordinator_endpoint(js)
    return keys


@pytest.mark.parametrize("restart_job", [False, True])
def test_keys_shared_per_replicated_job_equal_the_per_job_ones(restart_job: bool) -> None:
    """`JobKeys` works out a ReplicatedJob's counts and offsets once: the same keys, in the
    same order (the JSON body's bytes depend on it), as computed for each Job alone."""
    from jobset.controllers.jobs import JobKeys, jobset_keys

    js = _two_groups()
    js["status"]["replicatedJobsStatus"] = [
        {"name": "workers", "jobRestarts": [3, 0, 1]},
        {"name": "ps", "jobRestarts": [2]},
    ]
    for rj in js["spec"]["replicatedJobs"]:
        shared = JobKeys(js, rj, restart_job=restart_job)
        for index in range(rj["replicas"] + 1):  # one past the end: targets run out
            expected = _keys_one_job_at_a_time(js, rj, index, restart_job)
            assert list(shared.keys(index).items()) == list(expected.items())
            assert jobset_keys(js, rj, index, restart_job=restart_job) == expected
    stranger = rjob("not-in-jobset", 1)  # absent from the JobSet: empty index keys
    assert JobKeys(js, stranger).keys(0) == _keys_one_job_at_a_time(js, stranger, 0, False)


@pytest.mark.parametrize("restart_job", [False, True])
def test_pending_bodies_encode_as_jobs_built_alone(restart_job: bool) -> None:
    """What `PendingJobs` builds with its per-ReplicatedJob caches encodes to the same bytes
    as each Job built on its own (placement annotations and a coordinator included)."""
    import orjson

    js = _two_groups()
    js["metadata"]["annotations"] = {"alpha.jobset.sigs.k8s.io/exclusive-topology": "rack"}
    pending = PendingJobs(js, restart_job=restart_job)
    for rj in js["spec"]["replicatedJobs"]:
        pending.add(rj, list(range(rj["replicas"])))
    alone = [
        construct_job(js, rj, i, restart_job=restart_job)
        for rj in js["spec"]["replicatedJobs"]
        for i in range(rj["replicas"])
    ]
    assert [orjson.dumps(j) for j in pending] == [orjson.dumps(j) for j in alone]
    assert len(alone) == 6


def _shapes() -> dict[str, tuple[dict[str, Any], bool, bool]]:
    """JobSets to encode: (JobSet, restart_job, whether its Jobs can share a template)."""
    from jobset.api import constants as c
    from jobset.api.presets import FRAMEWORK_KEY

    exclusive = {c.EXCLUSIVE_KEY: "rack"}
    node_selector = {c.EXCLUSIVE_KEY: "rack", c.NODE_SELECTOR_STRATEGY_KEY: "true"}
    escaped = rjob("odd", 3)
    escaped["template"]["metadata"] = {
        "labels": {"team": "ml"},
        "annotations": {"note": 'quote " backslash \\ unicode é \u2028 \x02'},
    }
    holed = rjob("odd", 3)
    holed["template"]["metadata"] = {"annotations": {"note": "a hole: \x01N\x01"}}
    mounted = rjob("a", 2)
    mounted["template"]["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = [
        {"name": "ckpt", "mountPath": "/ckpt"}
    ]
    return {
        "groups and coordinator": (_two_groups(), False, True),
        "suspended, exclusive placement, no DNS": (
            jobset(
                rjob("a", 12),
                annotations=exclusive,
                suspend=True,
                network={"enableDNSHostnames": False},
            ),
            False,
            True,
        ),
        "escapes": (jobset(escaped), False, True),
        "a hole's text in an annotation": (jobset(holed), False, False),
        "restart per Job": (_two_groups(), True, False),
        "presets": (jobset(rjob("w", 3), annotations={FRAMEWORK_KEY: "pytorch"}), False, False),
        "node-selector strategy": (jobset(rjob("w", 3), annotations=node_selector), False, False),
        "volume claims": (
            jobset(
                mounted,
                volumeClaimPolicies=[
                    {"templates": [_claim("ckpt")], "retentionPolicy": {"whenDeleted": "Delete"}}
                ],
            ),
            False,
            False,
        ),
    }


@pytest.mark.parametrize("shape", list(_shapes()))
def test_encoded_bodies_equal_the_encoded_jobs(shape: str) -> None:
    """`PendingJobs.encoded` sends byte for byte `orjson.dumps` of each Job it builds (what
    the controller sent before), from a template where the Jobs differ only in their
    name and index keys, built in full otherwise."""
    import orjson

    from jobset.api import constants as c
    from jobset.controllers.jobs import BodyTemplate, JobKeys, template_json

    js, restart_job, shares = _shapes()[shape]
    pending = PendingJobs(js, restart_job=restart_job)
    for rj in js["spec"]["replicatedJobs"]:
        pending.add(rj, list(range(rj["replicas"] + 2))[1:])  # not from 0; past replicas
    sent = list(pending.encoded())
    built = list(pending)
    assert [n.body for n in sent] == [orjson.dumps(j) for j in built]
    assert [n.name for n in sent] == [j["metadata"]["name"] for j in built]
    assert {n.namespace for n in sent} == {NS}
    assert [n.owner for n in sent] == [j["metadata"]["labels"][c.JOBSET_NAME_KEY] for j in built]
    for rj in js["spec"]["replicatedJobs"]:
        found = BodyTemplate.of(
            js,
            rj,
            template=template_json(rj),
            keys=JobKeys(js, rj, restart_job=restart_job),
            restart_job=restart_job,
        )
        assert (found is not None) == shares


def test_exclusive_jobs_come_as_jobs_for_a_placement_planner() -> None:
    """With `exclusive_as_jobs`, the Jobs of a ReplicatedJob with exclusive placement come
    built (for placement to write their domain into), the others as encoded bodies."""
    import orjson

    from jobset.api import constants as c

    placed = rjob("placed", 2)
    placed["template"]["metadata"] = {"annotations": {c.EXCLUSIVE_KEY: "rack"}}
    js = jobset(placed, rjob("free", 2))
    pending = PendingJobs(js)
    for rj in js["spec"]["replicatedJobs"]:
        pending.add(rj, [0, 1])
    sent = list(pending.encoded(exclusive_as_jobs=True))
    built = list(pending)
    assert [n.body is None for n in sent] == [True, True, False, False]
    assert [n.job for n in sent[:2]] == built[:2]
    assert [n.body for n in sent[2:]] == [orjson.dumps(j) for j in built[2:]]
    assert [n.name for n in sent] == [j["metadata"]["name"] for j in built]
    assert all(n.job is None and n.body is not None for n in pending.encoded())
