"""PATCH semantics of the simulated API server, checked against what Kubernetes does.

The expected results follow kube-apiserver (apimachinery's strategic merge patch and
structured-merge-diff's server-side apply), since kubectl and Helm rely on exactly that.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from kubesim.machinery.patch import (
    ConflictError,
    ListStrategy,
    PatchError,
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
    builtin_patch_schema,
    crd_patch_schema,
    server_side_apply,
    update_managed_fields,
)

DEPLOYMENT = builtin_patch_schema("apps", "Deployment")
T0, T1, T2, T3 = (f"2024-05-01T10:00:0{i}Z" for i in range(4))


def deployment(**spec_overrides: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {
                            "name": "nginx",
                            "image": "nginx:1.25",
                            "ports": [{"containerPort": 80}],
                            "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                        },
                        {"name": "sidecar", "image": "busybox"},
                    ]
                },
            },
        },
    }
    obj["spec"].update(spec_overrides)
    return obj


def containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = obj["spec"]["template"]["spec"]["containers"]
    return result


def managed(obj: dict[str, Any], manager: str, operation: str = "Apply") -> dict[str, Any]:
    entries: list[dict[str, Any]] = [
        e
        for e in obj["metadata"].get("managedFields", [])
        if e["manager"] == manager and e["operation"] == operation
    ]
    assert len(entries) == 1, obj["metadata"].get("managedFields")
    return entries[0]


# ------------------------------------------------------------------------------- JSON patch


def test_json_patch_applies_operations_without_touching_input() -> None:
    obj = deployment()
    before = copy.deepcopy(obj)
    out = apply_json_patch(
        obj,
        [
            {"op": "replace", "path": "/spec/replicas", "value": 5},
            {"op": "add", "path": "/metadata/labels/tier", "value": "frontend"},
            {"op": "remove", "path": "/spec/template/spec/containers/1"},
            {"op": "test", "path": "/spec/template/spec/containers/0/name", "value": "nginx"},
        ],
    )
    assert out["spec"]["replicas"] == 5
    assert out["metadata"]["labels"] == {"app": "web", "tier": "frontend"}
    assert [c["name"] for c in containers(out)] == ["nginx"]
    assert obj == before


def test_json_patch_failed_test_operation_raises() -> None:
    with pytest.raises(PatchError, match="test"):
        apply_json_patch(deployment(), [{"op": "test", "path": "/spec/replicas", "value": 3}])


@pytest.mark.parametrize(
    "ops",
    [
        [{"op": "remove", "path": "/spec/paused"}],  # nothing to remove
        [{"op": "frobnicate", "path": "/spec"}],  # unknown operation
        [{"op": "add", "value": 1}],  # no path
        [{"op": "replace", "path": "", "value": [1, 2]}],  # result is not an object
        {"op": "add", "path": "/a", "value": 1},  # not a list of operations
    ],
)
def test_json_patch_rejects_bad_patches(ops: Any) -> None:
    with pytest.raises(PatchError):
        apply_json_patch(deployment(), ops)


# ------------------------------------------------------------------------- JSON merge patch


def test_merge_patch_null_deletes_and_lists_replace() -> None:
    obj = deployment()
    before = copy.deepcopy(obj)
    out = apply_merge_patch(
        obj,
        {
            "metadata": {"labels": {"app": None, "new": "x"}, "annotations": {"a": None}},
            "spec": {"template": {"spec": {"containers": [{"name": "only"}]}}},
        },
    )
    assert out["metadata"]["labels"] == {"new": "x"}
    assert out["metadata"]["annotations"] == {}  # RFC 7386: nulls inside new objects vanish
    assert containers(out) == [{"name": "only"}]
    assert out["spec"]["selector"] is obj["spec"]["selector"]  # untouched sub-trees are shared
    assert obj == before


def test_merge_patch_must_be_an_object() -> None:
    with pytest.raises(PatchError):
        apply_merge_patch(deployment(), [1, 2])  # type: ignore[arg-type]


# -------------------------------------------------------------------- strategic merge patch


def test_smp_adds_env_to_named_container_and_keeps_the_rest() -> None:
    obj = deployment()
    before = copy.deepcopy(obj)
    patch = {
        "spec": {
            "template": {
                "spec": {"containers": [{"name": "nginx", "env": [{"name": "C", "value": "3"}]}]}
            }
        }
    }
    out = apply_strategic_merge_patch(obj, patch, DEPLOYMENT)
    nginx, sidecar = containers(out)
    assert nginx["name"] == "nginx" and nginx["image"] == "nginx:1.25"
    # Without `$setElementOrder` a new item goes first, as in Kubernetes.
    assert [e["name"] for e in nginx["env"]] == ["C", "A", "B"]
    assert sidecar == {"name": "sidecar", "image": "busybox"}
    assert obj == before


def test_smp_patch_delete_removes_one_container() -> None:
    patch = {
        "spec": {"template": {"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}}}
    }
    out = apply_strategic_merge_patch(deployment(), patch, DEPLOYMENT)
    assert [c["name"] for c in containers(out)] == ["nginx"]


def test_smp_patch_replace_list_element_replaces_whole_list() -> None:
    patch = {
        "spec": {
            "template": {
                "spec": {"containers": [{"$patch": "replace"}, {"name": "solo", "image": "x"}]}
            }
        }
    }
    out = apply_strategic_merge_patch(deployment(), patch, DEPLOYMENT)
    assert containers(out) == [{"name": "solo", "image": "x"}]


def test_smp_patch_replace_and_delete_on_maps() -> None:
    obj = deployment()
    replaced = apply_strategic_merge_patch(
        obj, {"metadata": {"labels": {"$patch": "replace", "only": "me"}}}, DEPLOYMENT
    )
    assert replaced["metadata"]["labels"] == {"only": "me"}
    assert replaced["metadata"]["name"] == "web"
    deleted = apply_strategic_merge_patch(
        obj, {"spec": {"template": {"metadata": {"$patch": "delete"}}}}, DEPLOYMENT
    )
    assert deleted["spec"]["template"]["metadata"] == {}
    explicit_merge = apply_strategic_merge_patch(
        obj, {"metadata": {"labels": {"$patch": "merge", "x": "y"}}}, DEPLOYMENT
    )
    assert explicit_merge["metadata"]["labels"] == {"app": "web", "x": "y"}


def test_smp_retain_keys_clears_unlisted_fields() -> None:
    # What kubectl apply sends when switching a Deployment from RollingUpdate to Recreate.
    obj = deployment(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}})
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    out = apply_strategic_merge_patch(obj, patch, DEPLOYMENT)
    assert out["spec"]["strategy"] == {"type": "Recreate"}
    with pytest.raises(PatchError, match="retainKeys"):
        apply_strategic_merge_patch(
            obj, {"spec": {"strategy": {"$retainKeys": ["type"], "other": 1}}}, DEPLOYMENT
        )


def test_smp_set_element_order_orders_merged_list() -> None:
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [
                        {"name": "sidecar"},
                        {"name": "new"},
                        {"name": "nginx"},
                    ],
                    "containers": [{"name": "new", "image": "new:1"}],
                }
            }
        }
    }
    out = apply_strategic_merge_patch(deployment(), patch, DEPLOYMENT)
    assert [c["name"] for c in containers(out)] == ["sidecar", "new", "nginx"]
    assert containers(out)[2]["image"] == "nginx:1.25"


def test_smp_set_element_order_must_agree_with_patch_list() -> None:
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "nginx"}, {"name": "sidecar"}],
                    "containers": [{"name": "sidecar"}, {"name": "nginx"}],
                }
            }
        }
    }
    with pytest.raises(PatchError, match="doesn't match"):
        apply_strategic_merge_patch(deployment(), patch, DEPLOYMENT)


def test_smp_list_order_follows_apimachinery() -> None:
    # Items named in the patch take the patch's order; server-only items keep their place
    # ahead of the patch items they preceded; brand-new items come first.
    obj = {"spec": {"template": {"spec": {"containers": [{"name": n} for n in "abc"]}}}}
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "c"}, {"name": "a"}]}}}}
    out = apply_strategic_merge_patch(obj, patch, DEPLOYMENT)
    assert [c["name"] for c in containers(out)] == ["b", "c", "a"]
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "z"}]}}}}
    out = apply_strategic_merge_patch(obj, patch, DEPLOYMENT)
    assert [c["name"] for c in containers(out)] == ["z", "a", "b", "c"]


def test_smp_primitive_merge_list_and_delete_from_primitive_list() -> None:
    obj = {"metadata": {"name": "x", "finalizers": ["a", "b"]}}
    added = apply_strategic_merge_patch(obj, {"metadata": {"finalizers": ["b", "c"]}}, DEPLOYMENT)
    assert sorted(added["metadata"]["finalizers"]) == ["a", "b", "c"]
    removed = apply_strategic_merge_patch(
        obj, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a", "zzz"]}}, DEPLOYMENT
    )
    assert removed["metadata"]["finalizers"] == ["b"]


def test_smp_non_merging_lists_are_replaced() -> None:
    obj = deployment()
    obj["spec"]["template"]["spec"]["tolerations"] = [{"key": "a", "operator": "Exists"}]
    patch = {"spec": {"template": {"spec": {"tolerations": [{"key": "b", "operator": "Exists"}]}}}}
    out = apply_strategic_merge_patch(obj, patch, DEPLOYMENT)
    assert out["spec"]["template"]["spec"]["tolerations"] == [{"key": "b", "operator": "Exists"}]


def test_smp_ports_merge_by_container_port_and_service_port() -> None:
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [{"name": "nginx", "ports": [{"containerPort": 80, "name": "h"}]}]
                }
            }
        }
    }
    out = apply_strategic_merge_patch(deployment(), patch, DEPLOYMENT)
    assert containers(out)[0]["ports"] == [{"containerPort": 80, "name": "h"}]
    service = {"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]}}
    out = apply_strategic_merge_patch(
        service,
        {"spec": {"ports": [{"port": 443, "name": "https"}]}},
        builtin_patch_schema("", "Service"),
    )
    assert out["spec"]["ports"] == [
        {"port": 80, "targetPort": 8080},
        {"port": 443, "name": "https"},
    ]


def test_smp_pod_template_of_cronjob_and_unknown_kinds() -> None:
    cronjob = {
        "spec": {
            "jobTemplate": {
                "spec": {"template": {"spec": {"containers": [{"name": "a", "image": "1"}]}}}
            }
        }
    }
    patch = {
        "spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "b"}]}}}}}
    }
    for schema in (builtin_patch_schema("batch", "CronJob"), builtin_patch_schema("x.io", "Thing")):
        out = apply_strategic_merge_patch(cronjob, patch, schema)
        names = [
            c["name"] for c in out["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
        ]
        assert sorted(names) == ["a", "b"], schema


def test_smp_nulls_delete_and_new_subtrees_are_clean() -> None:
    patch = {
        "spec": {
            "replicas": None,
            "template": {
                "spec": {
                    "volumes": [{"name": "v", "emptyDir": {"medium": None, "sizeLimit": "1Gi"}}],
                    "containers": [
                        {
                            "name": "nginx",
                            "securityContext": {
                                "$patch": "replace",
                                "runAsUser": 1,
                                "fsGroup": None,
                            },
                        }
                    ],
                }
            },
        }
    }
    out = apply_strategic_merge_patch(deployment(), patch, DEPLOYMENT)
    assert "replicas" not in out["spec"]
    assert out["spec"]["template"]["spec"]["volumes"] == [
        {"name": "v", "emptyDir": {"sizeLimit": "1Gi"}}
    ]
    assert containers(out)[0]["securityContext"] == {"runAsUser": 1}


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}, "merge key"),
        ({"spec": {"template": {"spec": {"containers": [{"name": "a", "$patch": "x"}]}}}}, "x"),
        ({"spec": {"strategy": {"$patch": "explode"}}}, "explode"),
        ({"spec": {"$setElementOrder": []}}, "setElementOrder"),
    ],
    ids=["merge key", "x", "explode", "setElementOrder"],
)
def test_smp_rejects_bad_directives(patch: dict[str, Any], message: str) -> None:
    with pytest.raises(PatchError, match=message):
        apply_strategic_merge_patch(deployment(), patch, DEPLOYMENT)


# ----------------------------------------------------------------------------------- schema


def test_builtin_schema_knows_kubernetes_merge_keys() -> None:
    pod = builtin_patch_schema("", "Pod")
    assert pod.list_strategy(("spec", "containers")) == ListStrategy("map", ("name",), True, "name")
    assert pod(("spec", "containers", "env")).keys == ("name",)
    assert pod(("spec", "containers", "volumeMounts")).smp_key == "mountPath"
    ports = pod(("spec", "containers", "ports"))
    assert (ports.keys, ports.smp_key) == (("containerPort", "protocol"), "containerPort")
    assert pod(("spec", "tolerations")).type == "atomic"
    assert pod(("spec", "hostAliases")).smp_key == "ip"
    assert pod(("metadata", "finalizers")) == ListStrategy("set", smp_merge=True)
    assert pod(("metadata", "ownerReferences")).keys == ("uid",)
    assert pod(("status", "conditions")).keys == ("type",)
    assert pod.node(("spec", "nodeSelector")).atomic
    job = builtin_patch_schema("batch", "Job")
    conditions = job(("status", "conditions"))  # atomic for apply, merged by type in SMP
    assert (conditions.type, conditions.smp_merge, conditions.smp_key) == ("atomic", True, "type")
    assert job(("spec", "template", "spec", "initContainers")).smp_key == "name"
    assert job.node(("spec", "selector")).atomic
    svc = builtin_patch_schema("", "Service")
    assert svc(("spec", "ports")).smp_key == "port"


def test_crd_schema_reads_list_type_annotations() -> None:
    schema = crd_patch_schema(
        {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "jobs": {
                            "type": "array",
                            "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["name"],
                            "items": {
                                "type": "object",
                                "properties": {
                                    "name": {"type": "string"},
                                    "tags": {
                                        "type": "array",
                                        "x-kubernetes-list-type": "set",
                                        "items": {"type": "string"},
                                    },
                                },
                            },
                        },
                        "plain": {"type": "array", "items": {"type": "string"}},
                        "sel": {"type": "object", "x-kubernetes-map-type": "atomic"},
                    },
                }
            },
        }
    )
    assert schema(("spec", "jobs")).keys == ("name",)
    assert schema(("spec", "jobs", "tags")).type == "set"
    assert schema(("spec", "plain")).type == "atomic"
    assert schema.node(("spec", "sel")).atomic
    assert schema(("metadata", "ownerReferences")).keys == ("uid",)  # metadata is ObjectMeta


# ------------------------------------------------------------------------ server-side apply


def test_ssa_create_records_fields_v1() -> None:
    obj = server_side_apply(None, deployment(), "kubectl", DEPLOYMENT, force=False, now=T0)
    entry = managed(obj, "kubectl")
    assert {k: v for k, v in entry.items() if k != "fieldsV1"} == {
        "manager": "kubectl",
        "operation": "Apply",
        "apiVersion": "apps/v1",
        "time": T0,
        "fieldsType": "FieldsV1",
    }
    assert entry["fieldsV1"] == {
        "f:metadata": {"f:labels": {"f:app": {}}},
        "f:spec": {
            "f:replicas": {},
            "f:selector": {},  # LabelSelector is atomic
            "f:template": {
                "f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {
                    "f:containers": {
                        'k:{"name":"nginx"}': {
                            ".": {},
                            "f:env": {
                                'k:{"name":"A"}': {".": {}, "f:name": {}, "f:value": {}},
                                'k:{"name":"B"}': {".": {}, "f:name": {}, "f:value": {}},
                            },
                            "f:image": {},
                            "f:name": {},
                            "f:ports": {
                                # the defaulted key field takes part in the key
                                'k:{"containerPort":80,"protocol":"TCP"}': {
                                    ".": {},
                                    "f:containerPort": {},
                                }
                            },
                        },
                        'k:{"name":"sidecar"}': {".": {}, "f:image": {}, "f:name": {}},
                    }
                },
            },
        },
    }
    without = {k: v for k, v in obj.items()}
    without["metadata"] = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
    assert without == deployment()


def live_after_create() -> dict[str, Any]:
    """What the server stores: the applied object plus defaults nobody applied."""
    obj = server_side_apply(None, deployment(), "kubectl", DEPLOYMENT, force=False, now=T0)
    obj = copy.deepcopy(obj)
    obj["metadata"].update(uid="u-1", resourceVersion="7", generation=1)
    nginx = containers(obj)[0]
    nginx["imagePullPolicy"] = "IfNotPresent"
    nginx["ports"][0]["protocol"] = "TCP"
    obj["spec"]["strategy"] = {"type": "RollingUpdate"}
    return obj


def test_ssa_reapply_without_a_field_removes_it() -> None:
    live = live_after_create()
    before = copy.deepcopy(live)
    config = deployment()
    del config["metadata"]["labels"]
    config["spec"]["template"]["spec"]["containers"] = [
        {"name": "nginx", "image": "nginx:1.26", "env": [{"name": "A", "value": "1"}]}
    ]
    out = server_side_apply(live, config, "kubectl", DEPLOYMENT, force=False, now=T1)
    assert "labels" not in out["metadata"]
    (nginx,) = containers(out)  # the sidecar this manager applied before is gone
    assert nginx["env"] == [{"name": "A", "value": "1"}]
    assert nginx["image"] == "nginx:1.26"
    assert "ports" not in nginx
    assert nginx["imagePullPolicy"] == "IfNotPresent"  # unowned (defaulted) fields stay
    assert out["spec"]["strategy"] == {"type": "RollingUpdate"}
    assert out["metadata"]["uid"] == "u-1"
    entry = managed(out, "kubectl")
    assert entry["time"] == T1
    assert "f:metadata" not in entry["fieldsV1"]
    assert live == before


def test_ssa_field_shared_with_another_manager_survives_removal() -> None:
    live = live_after_create()
    # A second applier sets the same replicas value: no conflict, shared ownership.
    other = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 2},
    }
    live = server_side_apply(live, other, "autoscaler", DEPLOYMENT, force=False, now=T1)
    assert managed(live, "autoscaler")["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    config = deployment()
    del config["spec"]["replicas"]
    out = server_side_apply(live, config, "kubectl", DEPLOYMENT, force=False, now=T2)
    assert out["spec"]["replicas"] == 2
    assert "f:replicas" not in managed(out, "kubectl")["fieldsV1"]["f:spec"]
    assert managed(out, "autoscaler")["fieldsV1"] == {"f:spec": {"f:replicas": {}}}


def test_ssa_conflict_with_other_applier_and_force_takes_ownership() -> None:
    live = live_after_create()
    other = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 5},
    }
    with pytest.raises(ConflictError) as err:
        server_side_apply(live, other, "helm", DEPLOYMENT, force=False, now=T1)
    assert err.value.conflicts == [(".spec.replicas", "kubectl")]
    assert str(err.value) == 'Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas'
    assert err.value.status_causes() == [
        {
            "reason": "conflict",
            "message": 'conflict with "kubectl": .spec.replicas',
            "field": ".spec.replicas",
        }
    ]
    out = server_side_apply(live, other, "helm", DEPLOYMENT, force=True, now=T1)
    assert out["spec"]["replicas"] == 5
    assert managed(out, "helm")["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" not in managed(out, "kubectl")["fieldsV1"]["f:spec"]


def test_ssa_conflicts_with_update_managers_and_lists_paths() -> None:
    live = live_after_create()
    scaled = copy.deepcopy(live)
    scaled["spec"]["replicas"] = 4
    containers(scaled)[0]["image"] = "nginx:edited"
    scaled = update_managed_fields(live, scaled, "kubectl-edit", "Update", T1)
    with pytest.raises(ConflictError) as err:
        server_side_apply(scaled, deployment(), "kubectl", DEPLOYMENT, force=False, now=T2)
    assert sorted(err.value.conflicts) == [
        (".spec.replicas", "kubectl-edit"),
        ('.spec.template.spec.containers[name="nginx"].image', "kubectl-edit"),
    ]
    assert "Apply failed with 2 conflicts" in str(err.value)
    assert f'conflicts with "kubectl-edit" using apps/v1 at {T1}' in str(err.value)


def test_ssa_merges_keyed_lists_and_keeps_items_of_others() -> None:
    live = live_after_create()
    injected = copy.deepcopy(live)
    containers(injected).append({"name": "istio-proxy", "image": "proxy"})
    injected = update_managed_fields(live, injected, "injector", "Update", T1)
    config = deployment()
    containers(config)[0]["env"] = [{"name": "B", "value": "2"}, {"name": "A", "value": "1"}]
    out = server_side_apply(injected, config, "kubectl", DEPLOYMENT, force=False, now=T2)
    assert [c["name"] for c in containers(out)] == ["nginx", "sidecar", "istio-proxy"]
    assert [e["name"] for e in containers(out)[0]["env"]] == ["B", "A"]
    assert managed(out, "injector", "Update")["fieldsV1"]["f:spec"]["f:template"]["f:spec"] == {
        "f:containers": {'k:{"name":"istio-proxy"}': {".": {}, "f:image": {}, "f:name": {}}}
    }


def test_ssa_sets_and_atomic_lists() -> None:
    pod_schema = builtin_patch_schema("", "Pod")
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "finalizers": ["example.com/a"]},
        "spec": {"containers": [{"name": "c", "image": "i"}], "tolerations": [{"key": "k"}]},
    }
    out = server_side_apply(None, pod, "mgr", pod_schema, force=False, now=T0)
    fields = managed(out, "mgr")["fieldsV1"]
    assert fields["f:metadata"] == {"f:finalizers": {'v:"example.com/a"': {}}}
    assert fields["f:spec"]["f:tolerations"] == {}
    other = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "finalizers": ["example.com/b"]},
    }
    out = server_side_apply(out, other, "other", pod_schema, force=False, now=T1)
    assert out["metadata"]["finalizers"] == ["example.com/a", "example.com/b"]


def test_ssa_rejects_invalid_configurations() -> None:
    dup = deployment()
    containers(dup).append({"name": "nginx"})
    with pytest.raises(PatchError, match="duplicate"):
        server_side_apply(None, dup, "m", DEPLOYMENT, force=False, now=T0)
    keyless = deployment()
    containers(keyless).append({"image": "nameless"})
    with pytest.raises(PatchError, match="key"):
        server_side_apply(None, keyless, "m", DEPLOYMENT, force=False, now=T0)
    with_managed = deployment()
    with_managed["metadata"]["managedFields"] = [{"manager": "x"}]
    with pytest.raises(PatchError, match="managedFields"):
        server_side_apply(None, with_managed, "m", DEPLOYMENT, force=False, now=T0)


def test_ssa_noop_reapply_keeps_time_and_ignored_fields_are_not_owned() -> None:
    live = live_after_create()
    again = server_side_apply(live, deployment(), "kubectl", DEPLOYMENT, force=False, now=T3)
    assert managed(again, "kubectl")["time"] == T0
    assert {k: v for k, v in again.items() if k != "metadata"} == {
        k: v for k, v in live.items() if k != "metadata"
    }
    with_status = deployment()
    with_status["status"] = {"replicas": 9}
    out = server_side_apply(
        None, with_status, "m", DEPLOYMENT, force=False, now=T0, ignore=("status",)
    )
    assert "f:status" not in managed(out, "m")["fieldsV1"]


def test_ssa_custom_resource_with_list_map() -> None:
    schema = crd_patch_schema(
        {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "replicatedJobs": {
                            "type": "array",
                            "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["name"],
                            "items": {"type": "object", "properties": {"name": {"type": "string"}}},
                        }
                    },
                }
            },
        }
    )
    base = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "js"}}
    first = {**base, "spec": {"replicatedJobs": [{"name": "a", "replicas": 1}]}}
    live = server_side_apply(None, first, "alice", schema, force=False, now=T0)
    second = {**base, "spec": {"replicatedJobs": [{"name": "b", "replicas": 2}]}}
    out = server_side_apply(live, second, "bob", schema, force=False, now=T1)
    assert [j["name"] for j in out["spec"]["replicatedJobs"]] == ["a", "b"]
    assert managed(out, "bob")["fieldsV1"]["f:spec"]["f:replicatedJobs"] == {
        'k:{"name":"b"}': {".": {}, "f:name": {}, "f:replicas": {}}
    }


def test_ssa_by_kubectl_refreshes_client_side_apply_annotation() -> None:
    annotation = "kubectl.kubernetes.io/last-applied-configuration"
    live = live_after_create()
    live["metadata"]["annotations"] = {annotation: "{}"}
    out = server_side_apply(
        live, deployment(replicas=3), "kubectl", DEPLOYMENT, force=False, now=T1
    )
    assert json.loads(out["metadata"]["annotations"][annotation])["spec"]["replicas"] == 3
    out = server_side_apply(live, deployment(replicas=3), "helm", DEPLOYMENT, force=True, now=T1)
    assert out["metadata"]["annotations"][annotation] == "{}"


# -------------------------------------------------------------------- update_managed_fields


def test_update_managed_fields_on_create() -> None:
    obj = deployment()
    obj["metadata"].update(uid="u", creationTimestamp=T0, finalizers=["f"])
    out = update_managed_fields(None, obj, "kubectl-create", "Update", T0)
    entry = managed(out, "kubectl-create", "Update")
    assert entry["apiVersion"] == "apps/v1" and entry["time"] == T0
    fields = entry["fieldsV1"]
    # Server-set and identifying metadata is never owned; new maps, lists and list items are
    # owned themselves (`.`) as well as their contents.
    assert fields["f:metadata"] == {
        "f:finalizers": {".": {}, 'v:"f"': {}},
        "f:labels": {".": {}, "f:app": {}},
    }
    assert "." not in fields["f:spec"]
    assert fields["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"sidecar"}'] == {
        ".": {},
        "f:image": {},
        "f:name": {},
    }
    assert "managedFields" not in obj["metadata"]


def test_update_managed_fields_moves_ownership_of_changed_fields() -> None:
    created = update_managed_fields(None, deployment(), "creator", "Update", T0)
    changed = copy.deepcopy(created)
    changed["spec"]["replicas"] = 7
    del changed["metadata"]["labels"]
    out = update_managed_fields(created, changed, "scaler", "Update", T1)
    assert managed(out, "scaler", "Update")["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    creator = managed(out, "creator", "Update")
    assert creator["time"] == T0
    assert "f:replicas" not in creator["fieldsV1"]["f:spec"]
    assert "f:metadata" not in creator["fieldsV1"]
    # A write that changes nothing leaves managedFields alone.
    again = update_managed_fields(out, copy.deepcopy(out), "scaler", "Update", T2)
    assert again["metadata"]["managedFields"] == out["metadata"]["managedFields"]


def test_update_managed_fields_honours_supplied_and_reset_entries() -> None:
    created = update_managed_fields(None, deployment(), "creator", "Update", T0)
    # kubectl's client-side to server-side apply migration rewrites managedFields directly.
    rewritten = copy.deepcopy(created)
    rewritten["metadata"]["managedFields"][0]["manager"] = "kubectl"
    rewritten["metadata"]["managedFields"][0]["operation"] = "Apply"
    out = update_managed_fields(created, rewritten, "kubectl", "Update", T1)
    assert [e["manager"] for e in out["metadata"]["managedFields"]] == ["kubectl"]
    reset = copy.deepcopy(created)
    reset["metadata"]["managedFields"] = [{}]
    out = update_managed_fields(created, reset, "someone", "Update", T1)
    assert "managedFields" not in out["metadata"]
    # ...and an object without managed fields is not tracked by later updates.
    later = copy.deepcopy(out)
    later["spec"]["replicas"] = 9
    assert "managedFields" not in update_managed_fields(out, later, "x", "Update", T2)["metadata"]


def test_create_by_apply_is_not_recorded_twice() -> None:
    # The server may run its usual create bookkeeping on an object that apply produced.
    applied = server_side_apply(None, deployment(), "kubectl", DEPLOYMENT, force=False, now=T0)
    created = update_managed_fields(None, applied, "kubectl", "Update", T0)
    assert [e["operation"] for e in created["metadata"]["managedFields"]] == ["Apply"]
    again = server_side_apply(
        created, deployment(replicas=3), "kubectl", DEPLOYMENT, force=False, now=T1
    )
    assert again["spec"]["replicas"] == 3


def test_kubectl_takes_over_fields_it_applied_client_side() -> None:
    annotation = "kubectl.kubernetes.io/last-applied-configuration"
    obj = deployment()
    obj["metadata"]["annotations"] = {annotation: json.dumps(deployment())}
    live = update_managed_fields(None, obj, "kubectl-client-side-apply", "Update", T0)
    changed = deployment(replicas=4)
    with pytest.raises(ConflictError):
        server_side_apply(live, changed, "helm", DEPLOYMENT, force=False, now=T1)
    out = server_side_apply(live, changed, "kubectl", DEPLOYMENT, force=False, now=T1)
    assert out["spec"]["replicas"] == 4
    # A field whose live value no longer matches the annotation is still a conflict.
    edited = copy.deepcopy(live)
    edited["spec"]["replicas"] = 3
    edited = update_managed_fields(live, edited, "kubectl-client-side-apply", "Update", T1)
    with pytest.raises(ConflictError) as err:
        server_side_apply(edited, changed, "kubectl", DEPLOYMENT, force=False, now=T2)
    assert err.value.conflicts == [(".spec.replicas", "kubectl-client-side-apply")]
