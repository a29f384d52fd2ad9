"""default_jobset: what upstream's mutating webhook fills in, and nothing else.

Each test names the cases of upstream's TestJobSetDefaulting it covers
(`# upstream TestJobSetDefaulting: "<name>"`), so the two can be compared.
"""

from __future__ import annotations

import copy
from typing import Any

from jobset.api import constants as c
from jobset.api import default_jobset, default_rule_name


def _pod_template(restart_policy: str | None = "Never") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    if restart_policy is not None:
        spec["restartPolicy"] = restart_policy
    return {"spec": spec}


def _js(**spec: Any) -> dict[str, Any]:
    spec.setdefault(
        "replicatedJobs",
        [{"name": "rj", "template": {"spec": {"template": _pod_template()}}}],
    )
    return {"apiVersion": c.API_VERSION, "kind": c.KIND, "metadata": {"name": "js"}, "spec": spec}


def test_empty_spec_gets_every_default() -> None:
    # upstream TestJobSetDefaulting: "job completion mode is unset"
    # upstream TestJobSetDefaulting: "enableDNSHostnames is unset"
    # upstream TestJobSetDefaulting: "pod restart policy unset"
    # upstream TestJobSetDefaulting: "success policy unset"
    out = default_jobset({"metadata": {"name": "js"}, "spec": {"replicatedJobs": [{"name": "rj"}]}})
    spec = out["spec"]
    assert spec["successPolicy"] == {"operator": "All"}
    assert spec["startupPolicy"] == {"startupPolicyOrder": "AnyOrder"}
    assert spec["network"] == {"enableDNSHostnames": True, "publishNotReadyAddresses": True}
    job = spec["replicatedJobs"][0]["template"]["spec"]
    assert job["completionMode"] == "Indexed"
    assert job["template"]["spec"]["restartPolicy"] == "OnFailure"
    # Schema defaults are the API server's business, not the webhook's.
    assert "replicas" not in spec["replicatedJobs"][0]
    assert "groupName" not in spec["replicatedJobs"][0]
    assert "failurePolicy" not in spec


def test_completion_mode_kept_when_set() -> None:
    # upstream TestJobSetDefaulting: "job completion mode is set to non-indexed"
    js = _js()
    js["spec"]["replicatedJobs"][0]["template"]["spec"]["completionMode"] = "NonIndexed"
    out = default_jobset(js)
    assert out["spec"]["replicatedJobs"][0]["template"]["spec"]["completionMode"] == "NonIndexed"


def test_restart_policy_only_filled_when_empty() -> None:
    # upstream TestJobSetDefaulting: "pod restart policy set"
    js = _js(
        replicatedJobs=[
            {"name": "a", "template": {"spec": {"template": _pod_template("Always")}}},
            {"name": "b", "template": {"spec": {"template": _pod_template("")}}},
            {"name": "c", "template": {"spec": {"template": _pod_template(None)}}},
        ]
    )
    out = default_jobset(js)
    policies = [
        r["template"]["spec"]["template"]["spec"]["restartPolicy"]
        for r in out["spec"]["replicatedJobs"]
    ]
    assert policies == ["Always", "OnFailure", "OnFailure"]


def test_network_fields_defaulted_independently() -> None:
    # upstream TestJobSetDefaulting: "enableDNSHostnames is false"
    # upstream TestJobSetDefaulting: "PublishNotReadyNetworkAddresess is false"
    out = default_jobset(_js(network={"enableDNSHostnames": False}))
    assert out["spec"]["network"] == {"enableDNSHostnames": False, "publishNotReadyAddresses": True}
    out = default_jobset(_js(network={"publishNotReadyAddresses": False, "subdomain": "s"}))
    assert out["spec"]["network"] == {
        "enableDNSHostnames": True,
        "publishNotReadyAddresses": False,
        "subdomain": "s",
    }


def test_success_and_startup_policies_kept_when_set() -> None:
    # upstream TestJobSetDefaulting: "success policy operator set, replicatedJobNames unset"
    # upstream TestJobSetDefaulting: "startup policy order InOrder set"
    out = default_jobset(
        _js(
            successPolicy={"operator": "Any", "targetReplicatedJobs": ["rj"]},
            startupPolicy={"startupPolicyOrder": "InOrder"},
        )
    )
    assert out["spec"]["successPolicy"] == {"operator": "Any", "targetReplicatedJobs": ["rj"]}
    assert out["spec"]["startupPolicy"] == {"startupPolicyOrder": "InOrder"}


def test_failure_policy_rule_names_use_their_index() -> None:
    # upstream TestJobSetDefaulting: "failure policy rule name is defaulted when: there is one rule and it does not have a name"
    # upstream TestJobSetDefaulting: "failure policy rule name is defaulted when: there are two rules, the first rule has a name, the second rule does not have a name"
    out = default_jobset(
        _js(
            failurePolicy={
                "maxRestarts": 3,
                "rules": [
                    {"name": "mine", "action": "FailJobSet"},
                    {"action": "RestartJobSet"},
                    {"name": "", "action": "FailJobSet"},
                ],
            }
        )
    )
    names = [r["name"] for r in out["spec"]["failurePolicy"]["rules"]]
    assert names == ["mine", "failurePolicyRule1", "failurePolicyRule2"]
    assert default_rule_name(7) == "failurePolicyRule7"
    assert "restartStrategy" not in out["spec"]["failurePolicy"]  # a schema default


def test_volume_claim_retention_defaults_to_delete() -> None:
    # upstream TestJobSetDefaulting: "volumeClaimPolicy retentionPolicy is defaulted to Delete when nil"
    out = default_jobset(
        _js(
            volumeClaimPolicies=[
                {"templates": [{"metadata": {"name": "a"}}]},
                {
                    "templates": [{"metadata": {"name": "b"}}],
                    "retentionPolicy": {"whenDeleted": "Retain"},
                },
            ]
        )
    )
    retention = [p["retentionPolicy"] for p in out["spec"]["volumeClaimPolicies"]]
    assert retention == [{"whenDeleted": "Delete"}, {"whenDeleted": "Retain"}]


def test_managed_by_untouched() -> None:
    # upstream TestJobSetDefaulting: "managedBy field is left nil"
    # upstream TestJobSetDefaulting: "when provided, managedBy field is preserved"
    assert "managedBy" not in default_jobset(_js())["spec"]
    out = default_jobset(_js(managedBy="kueue.x-k8s.io/multikueue"))
    assert out["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"


def test_input_is_not_mutated_and_defaulting_is_idempotent() -> None:
    js = _js(failurePolicy={"rules": [{"action": "FailJobSet"}]})
    before = copy.deepcopy(js)
    once = default_jobset(js)
    assert js == before
    assert default_jobset(once) == once
    # Unknown fields and metadata pass through.
    js["spec"]["somethingNew"] = {"x": 1}
    passed: dict[str, Any] = dict(default_jobset(js)["spec"])
    assert passed["somethingNew"] == {"x": 1}
    assert default_jobset(js)["metadata"] == {"name": "js"}
