"""Builders produce the documented shapes, and refuse what the webhook would refuse."""

from __future__ import annotations

import pytest

from jobset.api import constants as c
from jobset.api import default_jobset, validate_create
from jobset.api.presets import FRAMEWORK_KEY, NPROC_PER_NODE_KEY, PORT_KEY
from jobset.sdk import (
    JobSet,
    JobSetBuilder,
    ValidationError,
    container,
    jax,
    leader_workers,
    multislice,
    pytorch,
    validate,
)


def _valid(js: JobSet) -> None:
    assert validate_create(default_jobset(js.to_dict())) == []
    assert JobSet.from_dict(js.to_dict()) == js


def test_leader_workers() -> None:
    js = leader_workers("lw", image="img", workers=3, worker_command=["run"], max_restarts=2)
    _valid(js)
    d = js.to_dict()
    leader, workers = d["spec"]["replicatedJobs"]
    assert leader["name"] == "leader" and leader["template"]["spec"]["parallelism"] == 1
    assert workers["template"]["spec"]["parallelism"] == 3
    assert workers["template"]["spec"]["completions"] == 3
    assert workers["dependsOn"] == [{"name": "leader", "status": "Ready"}]
    assert d["spec"]["coordinator"] == {"replicatedJob": "leader", "jobIndex": 0, "podIndex": 0}
    assert d["spec"]["failurePolicy"] == {"maxRestarts": 2}
    pod = workers["template"]["spec"]["template"]["spec"]
    assert pod["containers"] == [{"name": "worker", "image": "img", "command": ["run"]}]
    assert "network" not in d["spec"]  # not defaulted: the server does that


def test_multislice_is_exclusive_per_domain() -> None:
    js = multislice("ms", image="img", slices=4, pods_per_slice=2, limits={"google.com/tpu": 4})
    _valid(js)
    d = js.to_dict()
    assert d["metadata"]["annotations"] == {c.EXCLUSIVE_KEY: "cloud.google.com/gke-nodepool"}
    (rj,) = d["spec"]["replicatedJobs"]
    assert rj["replicas"] == 4 and rj["template"]["spec"]["parallelism"] == 2
    limits = rj["template"]["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits == {"google.com/tpu": "4"}
    assert d["spec"]["failurePolicy"] == {"maxRestarts": 3}


def test_pytorch_and_jax_presets() -> None:
    pt = pytorch("pt", image="img", nodes=4, nproc_per_node=8, gpus_per_node=8, port=3389)
    _valid(pt)
    ann = pt.to_dict()["metadata"]["annotations"]
    assert ann == {FRAMEWORK_KEY: "pytorch", PORT_KEY: "3389", NPROC_PER_NODE_KEY: "8"}
    assert "failurePolicy" not in pt.to_dict()["spec"]
    jx = jax("jx", image="img", slices=2, hosts_per_slice=4, tpus_per_host=4)
    _valid(jx)
    d = jx.to_dict()
    assert d["metadata"]["annotations"][FRAMEWORK_KEY] == "jax"
    assert d["metadata"]["annotations"][c.EXCLUSIVE_KEY] == "cloud.google.com/gke-nodepool"
    single = jax("one", image="img", hosts_per_slice=2).to_dict()
    assert c.EXCLUSIVE_KEY not in single["metadata"]["annotations"]


def test_builder_covers_every_knob() -> None:
    js = (
        JobSetBuilder("full", "ml")
        .labels(team="a")
        .replicated_job("driver", [container("d", "img", env={"A": "1"}, ports=[29500])])
        .replicated_job(
            "workers",
            [container("w", "img", requests={"cpu": 2})],
            replicas=2,
            parallelism=2,
            group_name="compute",
            node_selector={"pool": "gpu"},
            tolerations=[{"key": "gpu", "operator": "Exists"}],
            annotations={"note": "x"},
            pod_labels={"app": "w"},
        )
        .success_policy("Any", ["driver"])
        .failure_policy(3, c.RESTART_STRATEGY_BLOCKING_RECREATE)
        .failure_rule(
            c.FAIL_JOBSET, name="fatal", reasons=["PodFailurePolicy"], targets=["workers"]
        )
        .coordinator("driver")
        .startup_in_order()
        .network(subdomain="net", enable_dns_hostnames=True)
        .ttl_after_finished(60)
        .suspend()
        .managed_by("example.com/ctl")
        .exclusive_placement("rack", node_selector=True)
        .build()
    )
    _valid(js)
    spec = js.to_dict()["spec"]
    assert spec["successPolicy"] == {"operator": "Any", "targetReplicatedJobs": ["driver"]}
    assert spec["failurePolicy"]["rules"] == [
        {
            "name": "fatal",
            "action": "FailJobSet",
            "onJobFailureReasons": ["PodFailurePolicy"],
            "targetReplicatedJobs": ["workers"],
        }
    ]
    assert spec["network"] == {"enableDNSHostnames": True, "subdomain": "net"}
    assert spec["startupPolicy"] == {"startupPolicyOrder": "InOrder"}
    assert spec["suspend"] is True and spec["ttlSecondsAfterFinished"] == 60
    workers = spec["replicatedJobs"][1]
    assert workers["template"]["metadata"] == {"annotations": {"note": "x"}}
    assert workers["template"]["spec"]["template"]["metadata"] == {"labels": {"app": "w"}}


def test_build_returns_an_independent_copy() -> None:
    b = JobSetBuilder("a").replicated_job("w", [container("c", "i")])
    first = b.build()
    b.suspend()
    assert first.spec is not None and first.spec.suspend is None


@pytest.mark.parametrize(
    ("builder", "fragment"),
    [
        (
            JobSetBuilder("x" * 60).replicated_job("workers", [container("c", "i")]),
            "spec.replicatedJobs[0].name: Invalid value",
        ),
        (
            JobSetBuilder("a")
            .replicated_job("w", [container("c", "i")])
            .success_policy("All", ["nope"]),
            "invalid replicatedJob name 'nope' does not appear in .spec.ReplicatedJobs",
        ),
        (
            JobSetBuilder("a")
            .replicated_job("w", [container("c", "i")])
            .failure_rule(c.FAIL_JOBSET, reasons=["OOMKilled"]),
            "OOMKilled",
        ),
        (
            JobSetBuilder("a")
            .replicated_job("w", [container("c", "i")])
            .network(subdomain="Bad_Sub"),
            "spec.network.subdomain: Invalid value",
        ),
        (JobSetBuilder("a"), "spec.replicatedJobs: Required value"),
    ],
    ids=[
        "name too long for its Jobs",
        "success policy names an unknown replicated job",
        "unknown failure reason",
        "subdomain not DNS",
        "no replicated jobs",
    ],
)
def test_build_validates_like_the_webhook(builder: JobSetBuilder, fragment: str) -> None:
    with pytest.raises(ValidationError) as info:
        builder.build()
    assert fragment in str(info.value)
    assert str(info.value).startswith('JobSet.jobset.x-k8s.io "')
    assert info.value.errors
    assert builder.build(validate=False).name  # opt-out still builds


def test_preset_rejects_unknown_framework_and_validate_reports_presets() -> None:
    with pytest.raises(ValueError, match="framework must be one of"):
        JobSetBuilder("a").preset("tensorflow")
    js = JobSetBuilder("a").replicated_job("w", [container("c", "i")]).build()
    assert js.metadata is not None
    js.metadata.annotations = {PORT_KEY: "http"}
    assert [e.field for e in validate(js)] == [f"metadata.annotations[{PORT_KEY}]"]


def test_build_applies_the_crd_schema_and_lists_every_field_error() -> None:
    """What the API server refuses before any webhook (its CRD schema) fails `build()` too,
    every error at once, in the server's words."""
    builder = (
        JobSetBuilder("neg")
        .replicated_job("w", [container("main", "busybox")], replicas=-1)
        .failure_rule("Nope")
    )
    with pytest.raises(ValidationError) as info:
        builder.build()
    assert [(e.path, e.type.label) for e in info.value.errors] == [
        ("spec.replicatedJobs[0].replicas", "Invalid value"),
        ("spec.failurePolicy.rules[0].action", "Unsupported value"),
    ]
    assert str(info.value) == (
        'JobSet.jobset.x-k8s.io "neg" is invalid: [spec.replicatedJobs[0].replicas: Invalid '
        "value: -1: spec.replicatedJobs[0].replicas in body should be greater than or equal "
        'to 0, spec.failurePolicy.rules[0].action: Unsupported value: "Nope": supported '
        'values: "FailJobSet", "RestartJobSet", "RestartJobSetAndIgnoreMaxRestarts", '
        '"RestartJob", "RestartJobAndIgnoreMaxRestarts"]'
    )
    # A rule name left out is no schema error: the webhook's defaulting names the rule.
    named = JobSetBuilder("ok").replicated_job("w", [container("main", "busybox")])
    assert named.failure_rule("FailJobSet").build().name == "ok"
