"""Environment presets: the values, where they come from, and what is never touched."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from jobset.api import constants as c
from jobset.api.presets import (
    FRAMEWORK_KEY,
    NPROC_PER_NODE_KEY,
    PORT_KEY,
    RANK_LABEL,
    RANK_OFFSET_KEY,
    apply_presets,
    pod_rank_labels,
    validate_presets,
)
from tests import builders

INDEX_REF = {
    "fieldRef": {"fieldPath": f"metadata.annotations['{c.JOB_COMPLETION_INDEX_ANNOTATION}']"}
}
LABEL_REF = {"fieldRef": {"fieldPath": f"metadata.labels['{RANK_LABEL}']"}}


def rjob(
    name: str, replicas: int = 1, pods: int = 1, annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    tmpl: dict[str, Any] = {
        "spec": {
            "parallelism": pods,
            "completions": pods,
            "template": {
                "spec": {
                    "initContainers": [{"name": "init", "image": "x"}],
                    "containers": [
                        {"name": "a", "image": "x", "env": [{"name": "MASTER_PORT", "value": "1"}]},
                        {"name": "b", "image": "x"},
                    ],
                }
            },
        }
    }
    if annotations:
        tmpl["metadata"] = {"annotations": dict(annotations)}
    return {"name": name, "replicas": replicas, "template": tmpl}


def jobset(
    *rjobs: dict[str, Any], annotations: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    return builders.jobset("train", *rjobs, namespace="ml", annotations=annotations or {}, **spec)


def env_of(template: dict[str, Any], container: int = 1, key: str = "containers") -> dict[str, Any]:
    """name -> value (str) or valueFrom (dict)."""
    env = template["spec"]["template"]["spec"][key][container].get("env") or []
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in env}


def applied(js: dict[str, Any], name: str, job_index: int = 0) -> dict[str, Any]:
    rj = next(r for r in js["spec"]["replicatedJobs"] if r["name"] == name)
    return apply_presets(js, rj, job_index, rj["template"])


def test_pytorch_single_job_world() -> None:
    js = jobset(rjob("workers", pods=4), annotations={FRAMEWORK_KEY: "pytorch"})
    env = env_of(applied(js, "workers"))
    assert env["MASTER_ADDR"] == "train-workers-0-0.train"
    assert env["MASTER_PORT"] == "29500"
    assert env["WORLD_SIZE"] == "4" and env["NNODES"] == "4"
    # first Job of the world: the rank is the completion index itself
    assert env["NODE_RANK"] == INDEX_REF and env["RANK"] == INDEX_REF
    assert env["PET_NODE_RANK"] == INDEX_REF and env["PET_NNODES"] == "4"
    assert env["JOB_COMPLETION_INDEX"] == INDEX_REF and env["JOBSET_RANK_OFFSET"] == "0"
    assert "NPROC_PER_NODE" not in env


def test_later_jobs_rank_from_the_webhook_label_and_offsets_add_up() -> None:
    js = jobset(rjob("slice", replicas=3, pods=2), annotations={FRAMEWORK_KEY: "pytorch"})
    t2 = applied(js, "slice", 2)
    env = env_of(t2)
    assert env["JOBSET_RANK_OFFSET"] == "4" and env["WORLD_SIZE"] == "6"
    assert env["NODE_RANK"] == LABEL_REF
    assert t2["spec"]["template"]["metadata"]["annotations"][RANK_OFFSET_KEY] == "4"
    pod = {
        "metadata": {"annotations": {RANK_OFFSET_KEY: "4", c.JOB_COMPLETION_INDEX_ANNOTATION: "1"}}
    }
    assert pod_rank_labels(pod) == {RANK_LABEL: "5"}


def test_single_pod_jobs_get_a_literal_rank() -> None:
    js = jobset(rjob("w", replicas=8, pods=1), annotations={FRAMEWORK_KEY: "pytorch"})
    assert env_of(applied(js, "w", 5))["RANK"] == "5"


def test_participants_are_only_opted_in_replicated_jobs_and_template_wins() -> None:
    js = jobset(
        rjob("loader", replicas=2, pods=3),
        rjob(
            "trainer", replicas=2, pods=2, annotations={FRAMEWORK_KEY: "pytorch", PORT_KEY: "1234"}
        ),
    )
    assert applied(js, "loader") == js["spec"]["replicatedJobs"][0]["template"]
    env = env_of(applied(js, "trainer", 1))
    assert env["MASTER_ADDR"] == "train-trainer-0-0.train"  # first participating rjob
    assert env["MASTER_PORT"] == "1234" and env["WORLD_SIZE"] == "4"
    assert env["JOBSET_RANK_OFFSET"] == "2"


def test_rank_offset_spans_replicated_jobs_in_spec_order() -> None:
    js = jobset(
        rjob("a", replicas=2, pods=3), rjob("b", pods=4), annotations={FRAMEWORK_KEY: "jax"}
    )
    env = env_of(applied(js, "b"))
    assert env["JOBSET_RANK_OFFSET"] == "6"
    assert env["JAX_NUM_PROCESSES"] == "10"
    assert env["JAX_PROCESS_ID"] == LABEL_REF


def test_coordinator_subdomain_nproc_and_port() -> None:
    js = jobset(
        rjob("workers", pods=2),
        rjob("driver"),
        annotations={FRAMEWORK_KEY: "pytorch", NPROC_PER_NODE_KEY: "8", PORT_KEY: "3389"},
        coordinator={"replicatedJob": "driver", "jobIndex": 0, "podIndex": 0},
        network={"subdomain": "net"},
    )
    env = env_of(applied(js, "workers"))
    assert (
        env["MASTER_ADDR"] == "train-driver-0-0.net"
        and env["PET_MASTER_ADDR"] == env["MASTER_ADDR"]
    )
    assert env["MASTER_PORT"] == "3389"
    assert env["NPROC_PER_NODE"] == "8" and env["PET_NPROC_PER_NODE"] == "8"
    assert env["WORLD_SIZE"] == str(3 * 8)
    assert "RANK" not in env  # several processes per pod: torchrun assigns ranks


def test_jax_coordinator_address_default_port() -> None:
    js = jobset(rjob("slice", replicas=2, pods=4), annotations={FRAMEWORK_KEY: "JAX"})
    env = env_of(applied(js, "slice"))
    assert env["JAX_COORDINATOR_ADDRESS"] == "train-slice-0-0.train:8476"
    assert env["JAX_PROCESS_ID"] == INDEX_REF
    assert "MASTER_ADDR" not in env


def test_user_env_is_never_overridden_and_presets_come_first() -> None:
    js = jobset(rjob("w", pods=2), annotations={FRAMEWORK_KEY: "pytorch"})
    out = applied(js, "w")
    env_a = out["spec"]["template"]["spec"]["containers"][0]["env"]
    assert [e for e in env_a if e["name"] == "MASTER_PORT"] == [
        {"name": "MASTER_PORT", "value": "1"}
    ]
    assert env_a[-1] == {"name": "MASTER_PORT", "value": "1"}
    assert env_a[0]["name"] == "JOBSET_RANK_OFFSET"
    assert "MASTER_ADDR" in env_of(out, 0, "initContainers")


def test_apply_is_pure_and_idempotent() -> None:
    js = jobset(rjob("w", pods=2), annotations={FRAMEWORK_KEY: "pytorch"})
    before = copy.deepcopy(js)
    rj = js["spec"]["replicatedJobs"][0]
    once = apply_presets(js, rj, 0, rj["template"])
    assert js == before
    assert apply_presets(js, rj, 0, once) == once


def test_no_or_unknown_preset_changes_nothing() -> None:
    for given in ({}, {FRAMEWORK_KEY: "tensorflow"}):
        js = jobset(rjob("w", pods=2), annotations=given)
        rj = js["spec"]["replicatedJobs"][0]
        out = apply_presets(js, rj, 0, rj["template"])
        assert out == rj["template"] and out is not rj["template"]


@pytest.mark.parametrize(
    "pod",
    [
        {},
        {"metadata": {"annotations": {RANK_OFFSET_KEY: "2"}}},
        {
            "metadata": {
                "annotations": {RANK_OFFSET_KEY: "x", c.JOB_COMPLETION_INDEX_ANNOTATION: "1"}
            }
        },
    ],
)
def test_pod_rank_labels_is_safe_on_any_pod(pod: dict[str, Any]) -> None:
    assert pod_rank_labels(pod) == {}


def test_validate_presets_names_fields() -> None:
    js = jobset(
        rjob("w", annotations={PORT_KEY: "70000"}),
        annotations={FRAMEWORK_KEY: "tf", NPROC_PER_NODE_KEY: "-1"},
    )
    errs = [str(e) for e in validate_presets(js)]
    assert errs == [
        f'metadata.annotations[{FRAMEWORK_KEY}]: Unsupported value: "tf": supported values: "pytorch", "jax"',
        f'metadata.annotations[{NPROC_PER_NODE_KEY}]: Invalid value: "-1": must be a positive integer',
        f'spec.replicatedJobs[0].template.metadata.annotations[{PORT_KEY}]: Invalid value: "70000": must be between 1 and 65535',
    ]
    assert validate_presets(jobset(rjob("w"), annotations={FRAMEWORK_KEY: "jax"})) == []
