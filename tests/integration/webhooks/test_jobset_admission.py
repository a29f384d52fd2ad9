"""JobSet admission through the simulated API server's webhook chain, driven by kubectl.

The harness process serves the webhooks over TLS behind the Service
`jobset-webhook-service.jobset-system`, with the CA it generated injected as caBundle; the
simulated API server calls them exactly as kube-apiserver would. Nothing here calls the
Python validation functions: every expectation is what `kubectl apply` prints.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml

from jobset.api.regex import MANY_PATTERNS
from kubesim.process import SimProcess
from tests import builders
from tests.integration.placement.process import HarnessProcess

pytestmark = [pytest.mark.timeout(180), pytest.mark.kubectl]


def jobset(name: str, **spec: Any) -> dict[str, Any]:
    """A leader Job of one pod and two worker Jobs of two, no completion mode or restart policy."""
    plain: dict[str, Any] = dict(
        indexed=None, backoff_limit=None, restart_policy=None, container="c"
    )
    leader = builders.rjob("leader", 1, **plain)
    workers = builders.rjob("workers", 2, parallelism=2, **plain)
    return builders.jobset(name, leader, workers, **spec)


def with_rjob(js: dict[str, Any], index: int, **fields: Any) -> dict[str, Any]:
    out = copy.deepcopy(js)
    out["spec"]["replicatedJobs"][index].update(fields)
    return out


def apply(sim: SimProcess, obj: dict[str, Any]) -> tuple[int, str]:
    r = sim.kubectl("apply", "-f", "-", input=yaml.safe_dump(obj), check=False)
    return r.returncode, r.stdout + r.stderr


# (name, object, text expected in kubectl's error)
INVALID: list[tuple[str, dict[str, Any], str]] = [
    (
        "job-names-too-long",
        jobset("a" * 56),
        "JobSet name is too long, job names generated for this JobSet will exceed 63 characters",
    ),
    (
        "pod-names-too-long",
        jobset("b" * 47),
        "JobSet name is too long, pod names generated for this JobSet will exceed 63 characters",
    ),
    (
        "subdomain-not-dns",
        jobset("subdomain", network={"subdomain": "Not_A_Domain"}),
        'spec.network.subdomain: Invalid value: "Not_A_Domain": a lowercase RFC 1123 subdomain',
    ),
    (
        "managed-by-not-a-domain-path",
        jobset("managed", managedBy="not-a-path"),
        'spec.managedBy: Invalid value: "not-a-path": must be a domain-prefixed path',
    ),
    (
        "success-policy-unknown-target",
        jobset("success", successPolicy={"operator": "All", "targetReplicatedJobs": ["nope"]}),
        "invalid replicatedJob name 'nope' does not appear in .spec.ReplicatedJobs",
    ),
    (
        "failure-rule-bad-name",
        jobset(
            "rulename",
            failurePolicy={"rules": [{"name": "9starts-with-digit", "action": "FailJobSet"}]},
        ),
        "invalid failure policy rule name '9starts-with-digit'",
    ),
    (
        "failure-rule-duplicate-names",
        jobset(
            "dupes",
            failurePolicy={
                "rules": [
                    {"name": "same", "action": "FailJobSet"},
                    {"name": "same", "action": "RestartJobSet"},
                ]
            },
        ),
        "rule names are not unique",
    ),
    (
        "failure-rule-unknown-reason",
        jobset(
            "reason",
            failurePolicy={
                "rules": [
                    {"name": "r", "action": "FailJobSet", "onJobFailureReasons": ["OOMKilled"]}
                ]
            },
        ),
        "invalid job failure reason 'OOMKilled' in failure policy",
    ),
    (
        "failure-rule-unknown-target",
        jobset(
            "target",
            failurePolicy={
                "rules": [{"name": "r", "action": "FailJobSet", "targetReplicatedJobs": ["x"]}]
            },
        ),
        "invalid replicatedJob name 'x' in failure policy does not appear in",
    ),
    (
        "restart-job-needs-gate",
        jobset(
            "restartjob",
            failurePolicy={"rules": [{"name": "r", "action": "RestartJob"}]},
        ),
        "RestartJob feature gate is disabled",
    ),
    (
        "in-place-restart-needs-gate",
        jobset("inplace", failurePolicy={"restartStrategy": "InPlaceRestart"}),
        "InPlaceRestart restart strategy cannot be set when InPlaceRestart feature gate is disabled",
    ),
    (
        "depends-on-first",
        with_rjob(jobset("dep-first"), 0, dependsOn=[{"name": "workers", "status": "Ready"}]),
        "DependsOn can't be set for the first ReplicatedJob",
    ),
    (
        "depends-on-later",
        with_rjob(jobset("dep-later"), 1, dependsOn=[{"name": "nope", "status": "Complete"}]),
        "replicatedJob: workers cannot depend on replicatedJob: nope",
    ),
    (
        "coordinator-unknown-rjob",
        jobset("coord", coordinator={"replicatedJob": "nope", "jobIndex": 0, "podIndex": 0}),
        "coordinator replicatedJob nope does not exist",
    ),
    (
        "coordinator-index-out-of-range",
        jobset("coord-idx", coordinator={"replicatedJob": "workers", "jobIndex": 5}),
        "coordinator job index 5 is invalid for replicatedJob workers",
    ),
    (
        "replicas-times-parallelism-overflow",
        with_rjob(
            jobset("overflow"),
            1,
            replicas=65536,
            template={
                "spec": {
                    "parallelism": 65536,
                    "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
                }
            },
        ),
        "the product of replicas and parallelism must not exceed 2147483647",
    ),
]


@pytest.mark.parametrize(("case", "obj", "message"), INVALID, ids=[c[0] for c in INVALID])
def test_invalid_jobsets_are_rejected_with_the_field_and_reason(
    sim_none: SimProcess, harness: HarnessProcess, case: str, obj: dict[str, Any], message: str
) -> None:
    code, out = apply(sim_none, copy.deepcopy(obj))
    assert code != 0, f"{case}: accepted:\n{out}"
    assert message in out, f"{case}: unexpected error:\n{out}"
    assert "is invalid" in out
    name = obj["metadata"]["name"]
    missing = sim_none.kubectl("get", "jobset", name, check=False)
    assert missing.returncode != 0, f"{case}: the JobSet was stored anyway"


def test_defaults_appear_on_created_jobsets(sim_none: SimProcess, harness: HarnessProcess) -> None:
    obj = jobset(
        "defaults",
        failurePolicy={
            "maxRestarts": 2,
            "rules": [{"action": "FailJobSet"}, {"action": "RestartJobSet"}],
        },
    )
    code, out = apply(sim_none, obj)
    assert code == 0, out
    got = json.loads(sim_none.kubectl("get", "jobset", "defaults", "-o", "json").stdout)
    spec = got["spec"]
    assert spec["successPolicy"] == {"operator": "All"}
    assert spec["startupPolicy"] == {"startupPolicyOrder": "AnyOrder"}
    assert spec["network"]["enableDNSHostnames"] is True
    assert spec["network"]["publishNotReadyAddresses"] is True
    assert [r["name"] for r in spec["failurePolicy"]["rules"]] == [
        "failurePolicyRule0",
        "failurePolicyRule1",
    ]
    for rjob in spec["replicatedJobs"]:
        assert rjob["template"]["spec"]["completionMode"] == "Indexed"
        assert rjob["template"]["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"
        assert rjob["groupName"] == "default"  # a schema default, applied by the server


def test_defaulting_keeps_what_the_user_set(sim_none: SimProcess, harness: HarnessProcess) -> None:
    obj = jobset(
        "user-values",
        successPolicy={"operator": "Any", "targetReplicatedJobs": ["leader"]},
        network={"enableDNSHostnames": False},
    )
    obj["spec"]["replicatedJobs"][0]["template"]["spec"]["completionMode"] = "NonIndexed"
    obj["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["restartPolicy"] = (
        "Never"
    )
    code, out = apply(sim_none, obj)
    assert code == 0, out
    spec = json.loads(sim_none.kubectl("get", "jobset", "user-values", "-o", "json").stdout)["spec"]
    assert spec["successPolicy"] == {"operator": "Any", "targetReplicatedJobs": ["leader"]}
    assert spec["network"]["enableDNSHostnames"] is False
    assert spec["network"]["publishNotReadyAddresses"] is True
    leader = spec["replicatedJobs"][0]["template"]["spec"]
    assert leader["completionMode"] == "NonIndexed"
    assert leader["template"]["spec"]["restartPolicy"] == "Never"


def _patch(sim: SimProcess, name: str, patch: list[dict[str, Any]]) -> tuple[int, str]:
    r = sim.kubectl("patch", "jobset", name, "--type=json", "-p", json.dumps(patch), check=False)
    return r.returncode, r.stdout + r.stderr


def test_replicated_jobs_are_immutable_while_running(
    sim_none: SimProcess, harness: HarnessProcess
) -> None:
    code, out = apply(sim_none, jobset("immutable"))
    assert code == 0, out
    code, out = _patch(
        sim_none,
        "immutable",
        [{"op": "replace", "path": "/spec/replicatedJobs/1/replicas", "value": 3}],
    )
    assert code != 0
    assert "spec.replicatedJobs: Invalid value" in out and "field is immutable" in out
    # Kueue's fields are not mutable on a running JobSet either.
    code, out = _patch(
        sim_none,
        "immutable",
        [
            {
                "op": "add",
                "path": "/spec/replicatedJobs/1/template/spec/template/spec/nodeSelector",
                "value": {"pool": "a"},
            }
        ],
    )
    assert code != 0 and "field is immutable" in out
    code, out = _patch(
        sim_none,
        "immutable",
        [{"op": "add", "path": "/spec/managedBy", "value": "example.com/other"}],
    )
    assert code != 0 and "spec.managedBy" in out and "field is immutable" in out


def test_suspended_jobsets_accept_kueue_template_changes(
    sim_none: SimProcess, harness: HarnessProcess
) -> None:
    code, out = apply(sim_none, jobset("queued", suspend=True))
    assert code == 0, out
    tpl = "/spec/replicatedJobs/1/template/spec/template"
    code, out = _patch(
        sim_none,
        "queued",
        [
            {"op": "add", "path": f"{tpl}/spec/nodeSelector", "value": {"pool": "b"}},
            {
                "op": "add",
                "path": f"{tpl}/spec/tolerations",
                "value": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
            },
            {"op": "add", "path": f"{tpl}/metadata", "value": {"labels": {"kueue": "admitted"}}},
            {"op": "add", "path": f"{tpl}/spec/schedulingGates", "value": [{"name": "g"}]},
        ],
    )
    assert code == 0, out
    got = json.loads(sim_none.kubectl("get", "jobset", "queued", "-o", "json").stdout)
    assert got["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"][
        "nodeSelector"
    ] == {"pool": "b"}
    # ... but not anything else of the template.
    code, out = _patch(
        sim_none,
        "queued",
        [{"op": "replace", "path": f"{tpl}/spec/containers/0/image", "value": "other"}],
    )
    assert code != 0 and "field is immutable" in out


def test_becoming_suspended_allows_the_change_in_the_same_update(
    sim_none: SimProcess, harness: HarnessProcess
) -> None:
    code, out = apply(sim_none, jobset("suspending"))
    assert code == 0, out
    code, out = _patch(
        sim_none,
        "suspending",
        [
            {"op": "add", "path": "/spec/suspend", "value": True},
            {
                "op": "add",
                "path": "/spec/replicatedJobs/0/template/spec/template/spec/nodeSelector",
                "value": {"pool": "c"},
            },
        ],
    )
    assert code == 0, out


def test_invalid_message_pattern_is_admitted_with_a_warning(
    sim_none: SimProcess, harness: HarnessProcess
) -> None:
    # Upstream admits it and skips the pattern at run time; we admit it too, and say why
    # it will never match through the warning kubectl prints.
    obj = jobset(
        "badpattern",
        failurePolicy={
            "rules": [{"action": "FailJobSet", "onJobFailureMessagePatterns": ["ok", "(?=x)"]}]
        },
    )
    code, out = apply(sim_none, obj)
    assert code == 0, out
    assert "Warning: spec.failurePolicy.rules[0].onJobFailureMessagePatterns[1]" in out, out
    assert "not a valid RE2 (Go regexp) pattern" in out
    sim_none.kubectl("delete", "jobset", "badpattern")


def test_a_policy_of_many_patterns_is_checked_off_the_loop_with_the_same_warnings(
    sim_none: SimProcess, harness: HarnessProcess
) -> None:
    # MANY_PATTERNS or more are compiled in a worker thread; the answer is the same.
    rules = [
        {"action": "FailJobSet", "onJobFailureMessagePatterns": [f"^ok-{i}$", f"^fine-{i}$"]}
        for i in range(MANY_PATTERNS // 2)
    ]
    rules[-1]["onJobFailureMessagePatterns"].append("(?!x)")
    code, out = apply(sim_none, jobset("manypatterns", failurePolicy={"rules": rules}))
    assert code == 0, out
    last = MANY_PATTERNS // 2 - 1
    assert f"Warning: spec.failurePolicy.rules[{last}].onJobFailureMessagePatterns[2]" in out, out
    assert out.count("Warning:") == 1, out
    sim_none.kubectl("delete", "jobset", "manypatterns")
