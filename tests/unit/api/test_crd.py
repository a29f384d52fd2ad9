"""The generated JobSet CRD: in sync with its generator, structurally valid, and behaving as
upstream's (defaults, enums, list maps, CEL rules) under the project's schema engine.

Objects go through what kube-apiserver does on a create: prune and schema defaults, the
mutating webhook (`default_jobset`), prune and defaults again, schema + CEL validation, then
the validating webhook (`validate_create`).
"""

from __future__ import annotations

import copy
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from jobset.api import constants as c
from jobset.api import default_jobset, validate_create
from kubesim.machinery import schema as structural
from kubesim.machinery.errors import Cause
from tests import builders

REPO = Path(__file__).resolve().parents[3]
CRD_FILE = REPO / "config" / "crd" / "bases" / "jobset.x-k8s.io_jobsets.yaml"


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_crd", REPO / "tools" / "gen_crd.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_crd"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def crd() -> dict[str, Any]:
    loaded = yaml.safe_load(CRD_FILE.read_text())
    assert isinstance(loaded, dict)
    return loaded


@pytest.fixture(scope="module")
def compiled(crd: dict[str, Any]) -> structural.CompiledSchema:
    return structural.compile_schema(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])


def admit(obj: dict[str, Any], schema: structural.CompiledSchema) -> dict[str, Any]:
    """Prune, default, run the mutating webhook, and prune/default again."""
    out = structural.apply_defaults(structural.prune(obj, schema), schema)
    out = dict(default_jobset(out))
    return structural.apply_defaults(structural.prune(out, schema), schema)


def causes(
    obj: dict[str, Any], schema: structural.CompiledSchema, old: dict[str, Any] | None = None
) -> list[Cause]:
    return structural.validate(admit(obj, schema), schema, admit(old, schema) if old else None)


def fields(found: list[Cause]) -> list[str]:
    return [cause.field for cause in found]


# ------------------------------------------------------------------------------------------------
# The file itself


def test_committed_crd_matches_generator() -> None:
    generator = _load_generator()
    assert CRD_FILE.read_text() == generator.render(), (
        "config/crd/bases is stale: run .venv/bin/python tools/gen_crd.py"
    )


def test_generator_check_mode(tmp_path: Path) -> None:
    generator = _load_generator()
    target = tmp_path / "crd.yaml"
    messages: list[str] = []
    assert generator.main(["--output", str(target)], out=messages.append) == 0
    assert generator.main(["--check", "--output", str(target)], out=messages.append) == 0
    target.write_text(target.read_text() + "# edited\n")
    assert generator.main(["--check", "--output", str(target)], out=messages.append) == 1
    assert "stale" in messages[-1]


def test_kustomization_lists_the_crd() -> None:
    kustomization = yaml.safe_load((REPO / "config" / "crd" / "kustomization.yaml").read_text())
    assert kustomization["resources"] == ["bases/jobset.x-k8s.io_jobsets.yaml"]


def test_crd_identity(crd: dict[str, Any]) -> None:
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["kind"] == "CustomResourceDefinition"
    assert crd["metadata"]["name"] == c.CRD_NAME == "jobsets.jobset.x-k8s.io"
    spec = crd["spec"]
    assert spec["group"] == c.GROUP
    assert spec["scope"] == "Namespaced"
    assert spec["names"] == {
        "kind": "JobSet",
        "listKind": "JobSetList",
        "plural": "jobsets",
        "singular": "jobset",
    }  # upstream registers no shortNames
    (version,) = spec["versions"]
    assert version["name"] == "v1alpha2"
    assert version["served"] is True and version["storage"] is True
    assert version["subresources"] == {"status": {}}


def test_printer_columns(crd: dict[str, Any]) -> None:
    columns = crd["spec"]["versions"][0]["additionalPrinterColumns"]
    assert [(col["name"], col["type"], col["jsonPath"]) for col in columns] == [
        ("TerminalState", "string", ".status.terminalState"),
        ("Restarts", "string", ".status.restarts"),
        ("Completed", "string", '.status.conditions[?(@.type=="Completed")].status'),
        ("Suspended", "string", ".spec.suspend"),
        ("Age", "date", ".metadata.creationTimestamp"),
    ]


def test_schema_includes_the_full_pod_template(crd: dict[str, Any]) -> None:
    root = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    rjob = root["properties"]["spec"]["properties"]["replicatedJobs"]["items"]
    job_spec = rjob["properties"]["template"]["properties"]["spec"]
    pod_spec = job_spec["properties"]["template"]["properties"]["spec"]
    for name in ("containers", "initContainers", "volumes", "affinity", "tolerations"):
        assert name in pod_spec["properties"]
    containers = pod_spec["properties"]["containers"]
    assert containers["x-kubernetes-list-type"] == "map"
    assert containers["x-kubernetes-list-map-keys"] == ["name"]
    assert containers["items"]["required"] == ["name"]
    ports = containers["items"]["properties"]["ports"]
    assert ports["x-kubernetes-list-map-keys"] == ["containerPort", "protocol"]
    assert ports["items"]["properties"]["protocol"]["default"] == "TCP"
    limits = containers["items"]["properties"]["resources"]["properties"]["limits"]
    assert limits["additionalProperties"]["x-kubernetes-int-or-string"] is True
    probe_port = containers["items"]["properties"]["livenessProbe"]["properties"]["httpGet"][
        "properties"
    ]["port"]
    assert probe_port["x-kubernetes-int-or-string"] is True
    assert "description" in pod_spec["properties"]["nodeSelector"]


# ------------------------------------------------------------------------------------------------
# Schema behaviour


def container(**extra: Any) -> dict[str, Any]:
    return builders.container(image="busybox:1.36", command=["sleep", "1"], **extra)


def rjob(name: str = "workers", **extra: Any) -> dict[str, Any]:
    """A ReplicatedJob with only the fields the schema requires (no replicas, no Job fields)."""
    return builders.rjob(
        name,
        extra.pop("replicas", None),
        parallelism=None,
        indexed=None,
        backoff_limit=None,
        pod_template={"spec": {"containers": [container()]}},
        **extra,
    )


def jobset(*rjobs: dict[str, Any], name: str = "js", **spec: Any) -> dict[str, Any]:
    return builders.jobset(name, *(rjobs or (rjob(),)), namespace="default", **spec)


def test_crd_compiles(compiled: structural.CompiledSchema) -> None:
    assert compiled.root is not None


def test_schema_defaults(compiled: structural.CompiledSchema) -> None:
    js = jobset(
        failurePolicy={"maxRestarts": 2},
        volumeClaimPolicies=[{"templates": [{"metadata": {"name": "d"}}], "retentionPolicy": {}}],
    )
    js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0][
        "ports"
    ] = [{"containerPort": 8080}]
    out = structural.apply_defaults(structural.prune(js, compiled), compiled)
    rj = out["spec"]["replicatedJobs"][0]
    assert rj["replicas"] == 1
    assert rj["groupName"] == "default"
    assert out["spec"]["failurePolicy"]["restartStrategy"] == "Recreate"
    assert out["spec"]["volumeClaimPolicies"][0]["retentionPolicy"] == {"whenDeleted": "Delete"}
    port = rj["template"]["spec"]["template"]["spec"]["containers"][0]["ports"][0]
    assert port == {"containerPort": 8080, "protocol": "TCP"}


def test_pruning_keeps_template_metadata_and_drops_unknown(
    compiled: structural.CompiledSchema,
) -> None:
    js = jobset()
    template = js["spec"]["replicatedJobs"][0]["template"]
    template["metadata"] = {"labels": {"a": "b"}, "annotations": {c.EXCLUSIVE_KEY: "rack"}}
    template["spec"]["template"]["metadata"] = {"labels": {"app": "x"}}
    js["spec"]["bogus"] = True
    js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["bogus"] = 1
    out = structural.prune(js, compiled)
    assert "bogus" not in out["spec"]
    kept = out["spec"]["replicatedJobs"][0]["template"]
    assert kept["metadata"] == template["metadata"]
    assert kept["spec"]["template"]["metadata"] == {"labels": {"app": "x"}}
    assert "bogus" not in kept["spec"]["template"]["spec"]


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"successPolicy": {"operator": "Some"}}, "spec.successPolicy.operator"),
        (
            {"startupPolicy": {"startupPolicyOrder": "Random"}},
            "spec.startupPolicy.startupPolicyOrder",
        ),
        (
            {"failurePolicy": {"restartStrategy": "Reboot"}},
            "spec.failurePolicy.restartStrategy",
        ),
        (
            {"failurePolicy": {"rules": [{"name": "r", "action": "Retry"}]}},
            "spec.failurePolicy.rules[0].action",
        ),
        (
            {
                "volumeClaimPolicies": [
                    {"templates": [], "retentionPolicy": {"whenDeleted": "Keep"}}
                ]
            },
            "spec.volumeClaimPolicies[0].retentionPolicy.whenDeleted",
        ),
    ],
    ids=[
        "success policy operator",
        "startup policy order",
        "restart strategy",
        "failure policy rule action",
        "volume claim retention",
    ],
)
def test_enums(compiled: structural.CompiledSchema, spec: dict[str, Any], field: str) -> None:
    found = causes(jobset(**spec), compiled)
    assert found[0].field == field
    assert found[0].reason == "FieldValueNotSupported"


def test_depends_on_status_enum_and_limits(compiled: structural.CompiledSchema) -> None:
    bad = jobset(rjob("a"), rjob("b", dependsOn=[{"name": "a", "status": "Running"}]))
    assert fields(causes(bad, compiled))[0] == "spec.replicatedJobs[1].dependsOn[0].status"
    many = [{"name": f"x{i}", "status": "Ready"} for i in range(6)]
    assert "spec.replicatedJobs[1].dependsOn" in fields(
        causes(jobset(rjob("a"), rjob("b", dependsOn=many)), compiled)
    )


def test_minimums(compiled: structural.CompiledSchema) -> None:
    assert fields(causes(jobset(rjob(replicas=-1)), compiled))[0] == (
        "spec.replicatedJobs[0].replicas"
    )
    assert fields(causes(jobset(ttlSecondsAfterFinished=-1), compiled))[0] == (
        "spec.ttlSecondsAfterFinished"
    )
    assert causes(jobset(rjob(replicas=0), ttlSecondsAfterFinished=0), compiled) == []


def test_required_fields(compiled: structural.CompiledSchema) -> None:
    no_template = jobset({"name": "a"})
    raw = structural.apply_defaults(structural.prune(no_template, compiled), compiled)
    assert "spec.replicatedJobs[0].template" in fields(structural.validate(raw, compiled))
    # The webhook's defaults create a template, which then lacks its containers.
    assert "spec.replicatedJobs[0].template.spec.template.spec.containers" in fields(
        causes(no_template, compiled)
    )
    coordinator = jobset(coordinator={"jobIndex": 0})
    assert "spec.coordinator.replicatedJob" in fields(causes(coordinator, compiled))
    # Without the mutating webhook a rule without a name is rejected, as upstream.
    unnamed = jobset(failurePolicy={"rules": [{"action": "FailJobSet"}]})
    raw = structural.apply_defaults(structural.prune(unnamed, compiled), compiled)
    assert "spec.failurePolicy.rules[0].name" in fields(structural.validate(raw, compiled))
    assert causes(unnamed, compiled) == []


def test_list_maps_reject_duplicate_keys(compiled: structural.CompiledSchema) -> None:
    found = causes(jobset(rjob("a"), rjob("a")), compiled)
    assert found[0].field == "spec.replicatedJobs[1]"
    assert found[0].reason == "FieldValueDuplicate"
    dup = jobset()
    pod = dup["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["containers"].append(container())
    found = causes(dup, compiled)
    assert found[0].field.endswith("spec.template.spec.containers[1]")
    assert found[0].reason == "FieldValueDuplicate"


def test_quantities(compiled: structural.CompiledSchema) -> None:
    js = jobset()
    main = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]
    main["resources"] = {"limits": {"cpu": "500m", "memory": "2Gi", "google.com/tpu": 4}}
    assert causes(js, compiled) == []
    main["resources"] = {"limits": {"cpu": "lots"}}
    found = causes(js, compiled)
    assert found and found[0].field.endswith("resources.limits.cpu")


def test_cel_startup_policy_excludes_depends_on(compiled: structural.CompiledSchema) -> None:
    js = jobset(
        rjob("a"),
        rjob("b", dependsOn=[{"name": "a", "status": "Ready"}]),
        startupPolicy={"startupPolicyOrder": "InOrder"},
    )
    found = causes(js, compiled)
    assert [(x.field, x.message) for x in found] == [
        ("spec", 'Invalid value: "object": StartupPolicy and DependsOn APIs are mutually exclusive')
    ]
    js["spec"]["startupPolicy"] = {"startupPolicyOrder": "AnyOrder"}
    assert causes(js, compiled) == []


def test_cel_volume_claim_templates_without_namespace(compiled: structural.CompiledSchema) -> None:
    policy = {"templates": [{"metadata": {"name": "d", "namespace": "other"}}]}
    found = causes(jobset(volumeClaimPolicies=[policy]), compiled)
    assert found[0].field == "spec.volumeClaimPolicies[0]"
    assert "namespace cannot be set for VolumeClaimPolicies templates" in found[0].message
    policy = {"templates": [{"metadata": {"name": "d"}}]}
    assert causes(jobset(volumeClaimPolicies=[policy]), compiled) == []


@pytest.mark.parametrize(
    ("field", "before", "after"),
    [
        ("network", {"subdomain": "a"}, {"subdomain": "b"}),
        ("successPolicy", {"operator": "All"}, {"operator": "Any"}),
        ("failurePolicy", {"maxRestarts": 1}, {"maxRestarts": 2}),
        ("startupPolicy", {"startupPolicyOrder": "AnyOrder"}, {"startupPolicyOrder": "InOrder"}),
        (
            "volumeClaimPolicies",
            [{"templates": [{"metadata": {"name": "a"}}]}],
            [{"templates": [{"metadata": {"name": "b"}}]}],
        ),
    ],
    ids=["network", "successPolicy", "failurePolicy", "startupPolicy", "volumeClaimPolicies"],
)
def test_cel_immutable_fields(
    compiled: structural.CompiledSchema, field: str, before: Any, after: Any
) -> None:
    old = jobset(**{field: before})
    new = jobset(**{field: after})
    found = causes(new, compiled, old)
    assert [x.field for x in found] == [f"spec.{field}"]
    assert found[0].message.endswith("Value is immutable")
    assert causes(copy.deepcopy(old), compiled, old) == []


def test_cel_depends_on_immutable(compiled: structural.CompiledSchema) -> None:
    old = jobset(rjob("a"), rjob("b"), rjob("c", dependsOn=[{"name": "a", "status": "Ready"}]))
    new = copy.deepcopy(old)
    new["spec"]["replicatedJobs"][2]["dependsOn"] = [{"name": "b", "status": "Ready"}]
    found = causes(new, compiled, old)
    assert fields(found) == ["spec.replicatedJobs[2].dependsOn"]
    # Other parts of the object may change.
    relabeled = copy.deepcopy(old)
    relabeled["metadata"]["labels"] = {"x": "y"}
    relabeled["spec"]["suspend"] = True
    assert causes(relabeled, compiled, old) == []


# ------------------------------------------------------------------------------------------------
# Example-like JobSets, one per feature upstream's examples use: accepted unchanged.


def pod(*containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"spec": {"containers": list(containers) or [container()], **spec}}


def indexed_rjob(name: str, replicas: int = 1, n: int = 1, **pod_spec: Any) -> dict[str, Any]:
    """n pods, n completions, backoffLimit 0, no completion mode (the upstream examples)."""
    return builders.rjob(name, replicas, parallelism=n, indexed=None, pod_template=pod(**pod_spec))


def failure_policy(action: str) -> dict[str, Any]:
    return {
        "maxRestarts": 3,
        "rules": [
            {
                "name": "rule1",
                "action": action,
                "onJobFailureReasons": ["PodFailurePolicy"],
                "onJobFailureMessagePatterns": [".*Maintenance.*"],
                "targetReplicatedJobs": ["workers"],
            }
        ],
    }


def multislice() -> dict[str, Any]:
    tpu = container(
        resources={"limits": {"google.com/tpu": 4}},
        ports=[{"containerPort": 8471}, {"containerPort": 8080}],
        securityContext={"privileged": True},
        env=[
            {
                "name": "REPLICATED_JOB_INDEX",
                "valueFrom": {
                    "fieldRef": {
                        "fieldPath": "metadata.annotations['jobset.sigs.k8s.io/job-index']"
                    }
                },
            }
        ],
    )
    rj = indexed_rjob("slice", replicas=2, n=4)
    rj["template"]["spec"]["template"] = pod(
        tpu,
        nodeSelector={
            "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
            "cloud.google.com/gke-tpu-topology": "4x4",
        },
        hostNetwork=True,
        dnsPolicy="ClusterFirstWithHostNet",
    )
    js = jobset(rj, name="v6e-multislice", failurePolicy={"maxRestarts": 4})
    js["metadata"]["annotations"] = {c.EXCLUSIVE_KEY: "cloud.google.com/gke-nodepool"}
    js["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "multislice-queue"}
    return js


def examples() -> dict[str, tuple[dict[str, Any], dict[str, bool]]]:
    none: dict[str, bool] = {}
    restart_job = {c.FEATURE_RESTART_JOB: True}
    driver = indexed_rjob("driver")
    workers = indexed_rjob("workers", replicas=2, n=2)
    out: dict[str, tuple[dict[str, Any], dict[str, bool]]] = {
        "paralleljobs": (jobset(indexed_rjob("workers", replicas=3, n=2)), none),
        "network": (
            jobset(
                indexed_rjob("leader"),
                workers,
                network={"enableDNSHostnames": True, "subdomain": "network-subdomain"},
            ),
            none,
        ),
        "success-policy": (
            jobset(
                driver,
                workers,
                successPolicy={"operator": "Any", "targetReplicatedJobs": ["driver"]},
            ),
            none,
        ),
        "startup-policy": (
            jobset(driver, workers, startupPolicy={"startupPolicyOrder": "InOrder"}),
            none,
        ),
        "depends-on": (
            jobset(
                indexed_rjob("initializer"),
                {**workers, "dependsOn": [{"name": "initializer", "status": "Complete"}]},
                {**indexed_rjob("launcher"), "dependsOn": [{"name": "workers", "status": "Ready"}]},
            ),
            none,
        ),
        "coordinator": (
            jobset(
                driver,
                workers,
                coordinator={"replicatedJob": "driver", "jobIndex": 0, "podIndex": 0},
            ),
            none,
        ),
        "ttl": (jobset(workers, ttlSecondsAfterFinished=5), none),
        "suspended": (jobset(workers, suspend=True), none),
        "groups": (
            jobset(
                {**indexed_rjob("trainer-a", 2), "groupName": "group-a"},
                {**indexed_rjob("trainer-b", 3), "groupName": "group-b"},
            ),
            none,
        ),
        "exclusive-placement": (
            jobset(
                {
                    **workers,
                    "template": {
                        **workers["template"],
                        "metadata": {
                            "annotations": {c.EXCLUSIVE_KEY: "topology.kubernetes.io/rack"}
                        },
                    },
                }
            ),
            none,
        ),
        "volume-claim-policies": (
            jobset(
                indexed_rjob(
                    "trainer",
                    containers=[
                        container(volumeMounts=[{"name": "model-cache", "mountPath": "/cache"}])
                    ],
                ),
                volumeClaimPolicies=[
                    {
                        "templates": [
                            {
                                "metadata": {"name": "model-cache"},
                                "spec": {
                                    "accessModes": ["ReadWriteMany"],
                                    "resources": {"requests": {"storage": "10Gi"}},
                                },
                            }
                        ],
                        "retentionPolicy": {"whenDeleted": "Retain"},
                    }
                ],
            ),
            none,
        ),
        "blocking-recreate": (
            jobset(
                workers, failurePolicy={"maxRestarts": 2, "restartStrategy": "BlockingRecreate"}
            ),
            none,
        ),
        "multislice": (multislice(), none),
        "managed-by": (jobset(workers, managedBy="kueue.x-k8s.io/multikueue"), none),
    }
    for action in c.FAILURE_POLICY_ACTIONS:
        gates = restart_job if action in c.JOB_RESTART_ACTIONS else none
        out[f"failure-policy-{action}"] = (
            jobset(workers, failurePolicy=failure_policy(action)),
            gates,
        )
    return out


@pytest.mark.parametrize("name", sorted(examples()))
def test_example_jobsets_are_accepted_unchanged(
    compiled: structural.CompiledSchema, name: str
) -> None:
    js, gates = examples()[name]
    assert structural.prune(js, compiled) == js, "the schema would drop fields of the example"
    admitted = admit(js, compiled)
    assert structural.validate(admitted, compiled) == []
    assert validate_create(admitted, features=gates) == []


def test_examples_cover_every_failure_policy_action() -> None:
    names = set(examples())
    assert {f"failure-policy-{a}" for a in c.FAILURE_POLICY_ACTIONS} <= names
