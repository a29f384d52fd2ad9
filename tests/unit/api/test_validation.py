"""validate_create / validate_update: the cases of upstream's webhook test table, and more.

Each rule has a passing and a failing case; failing cases assert the field path and the
message text users see, since both are part of the contract with the Go controller.

A test that covers cases of upstream's pkg/webhooks/jobset_webhook_test.go names them, as a
`# upstream TestValidateCreate: "<name>"` line or as the case's id, so the two tables can be
compared (`grep -o 'upstream Test[A-Za-z]*: ".*"'`); an id saying "not upstream" is ours.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any

import pytest

from jobset.api import constants as c
from jobset.api.validation import (
    UNLIMITED,
    ErrorType,
    FieldError,
    Limits,
    format_invalid_message,
    invalid_status,
    is_dns1035_label,
    name_for_validation,
    semantic_equal,
    validate_create,
    validate_update,
    volume_claim_pvc_names,
)
from tests import builders

MAX_INT32 = 2**31 - 1
MIN_INT32 = -(2**31)


# ------------------------------------------------------------------------------------------------
# Builders


def pod_template(**spec: Any) -> dict[str, Any]:
    spec.setdefault("containers", [{"name": "test", "image": "bash:latest"}])
    return {"spec": spec}


def rjob(
    name: str = "rj",
    *,
    replicas: int = 1,
    group: str = "default",
    indexed: bool | None = None,
    completions: int | None = None,
    parallelism: int | None = None,
    pod: dict[str, Any] | None = None,
    depends_on: list[dict[str, str]] | None = None,
    **job_spec: Any,
) -> dict[str, Any]:
    return builders.rjob(
        name,
        replicas,
        parallelism=parallelism,
        completions=completions,
        indexed=indexed,
        backoff_limit=None,
        pod_template=pod if pod is not None else pod_template(),
        job=job_spec,
        group=group,
        depends_on=depends_on,
    )


def jobset(
    *rjobs: dict[str, Any],
    name: str | None = "js",
    generate_name: str | None = None,
    **spec: Any,
) -> dict[str, Any]:
    spec.setdefault("successPolicy", {"operator": "All"})
    rjobs = rjobs or (rjob(),)
    return builders.jobset(name, *rjobs, namespace="default", generate_name=generate_name, **spec)


def one(errs: list[FieldError]) -> FieldError:
    assert len(errs) == 1, [str(e) for e in errs]
    return errs[0]


def texts(errs: list[FieldError]) -> list[str]:
    return [str(e) for e in errs]


def indexed(name: str = "rj", replicas: int = 1, n: int = 1, **kw: Any) -> dict[str, Any]:
    return rjob(name, replicas=replicas, indexed=True, completions=n, parallelism=n, **kw)


# ------------------------------------------------------------------------------------------------
# FieldError rendering


def test_field_error_renders_like_kubernetes() -> None:
    err = FieldError("spec.replicatedJobs[0].name", ErrorType.INVALID, "bad", "x")
    assert str(err) == 'spec.replicatedJobs[0].name: Invalid value: "x": bad'
    assert err.to_cause() == {
        "reason": "FieldValueInvalid",
        "message": 'Invalid value: "x": bad',
        "field": "spec.replicatedJobs[0].name",
    }
    assert str(FieldError("a", ErrorType.INVALID, "m", 3)) == "a: Invalid value: 3: m"
    assert str(FieldError("a", ErrorType.INVALID, "m", None)) == "a: Invalid value: null: m"
    assert str(FieldError("a", ErrorType.INVALID, "m", True)) == "a: Invalid value: true: m"
    # Values of complex types are omitted (apimachinery's omitValue), long strings cut.
    assert str(FieldError("a", ErrorType.INVALID, "m", {"k": [1]})) == "a: Invalid value: m"
    assert str(FieldError("a", ErrorType.INVALID, "m", [1, 2])) == "a: Invalid value: m"
    long = str(FieldError("a", ErrorType.INVALID, "m", "x" * 10_000))
    assert long == f'a: Invalid value: "{"x" * 256}"... (10000 characters): m'
    assert str(FieldError("a", ErrorType.REQUIRED, "", "")) == "a: Required value"
    assert str(FieldError("a", ErrorType.FORBIDDEN, "no", "")) == "a: Forbidden: no"
    assert str(FieldError(None, ErrorType.INTERNAL, "boom")) == "<nil>: Internal error: boom"
    assert str(ErrorType.NOT_SUPPORTED) == "FieldValueNotSupported"
    assert ErrorType.DUPLICATE.label == "Duplicate value"


def test_invalid_status_aggregates_like_apierrors() -> None:
    a = FieldError(None, ErrorType.INTERNAL, "first")
    b = FieldError("spec.x", ErrorType.INVALID, "second", "v")
    assert format_invalid_message("js", []) == 'JobSet.jobset.x-k8s.io "js" is invalid'
    assert (
        format_invalid_message("js", [a])
        == 'JobSet.jobset.x-k8s.io "js" is invalid: <nil>: Internal error: first'
    )
    assert format_invalid_message("js", [a, b, a]) == (
        'JobSet.jobset.x-k8s.io "js" is invalid: '
        '[<nil>: Internal error: first, spec.x: Invalid value: "v": second]'
    )
    status = invalid_status("js", [a, b])
    assert status["code"] == 422
    assert status["reason"] == "Invalid"
    assert status["details"]["group"] == "jobset.x-k8s.io"
    assert status["details"]["kind"] == "JobSet"
    assert status["details"]["causes"][1] == {
        "reason": "FieldValueInvalid",
        "message": 'Invalid value: "v": second',
        "field": "spec.x",
    }


def test_name_for_validation() -> None:
    assert name_for_validation({"metadata": {"name": "jobset-name"}}) == "jobset-name"
    generated = name_for_validation({"metadata": {"generateName": "a" * 60}})
    assert len(generated) == 63
    assert generated.startswith("a" * 58)
    short = name_for_validation({"metadata": {"generateName": "js-"}})
    assert len(short) == 8 and short.startswith("js-")
    assert name_for_validation({}) == ""


def test_semantic_equal_treats_empty_as_absent() -> None:
    assert semantic_equal({"a": {}, "b": [], "c": None}, {})
    assert semantic_equal(None, [])
    assert semantic_equal({"x": {"labels": {}}}, {"x": {}})
    assert not semantic_equal({"a": 1}, {"a": 2})
    assert not semantic_equal([{"name": "a"}, {"name": "b"}], [{"name": "b"}, {"name": "a"}])


# ------------------------------------------------------------------------------------------------
# Create: names and sizes


def test_valid_jobsets_pass() -> None:
    assert validate_create(jobset()) == []
    assert validate_create(jobset(rjob(replicas=3), name="my-jobset")) == []
    assert validate_create(jobset(replicatedJobs=[])) == []  # no ReplicatedJobs at all


def test_generate_name_that_makes_job_names_too_long() -> None:
    # upstream TestValidateCreate: "generateName that produces overlong child job names is rejected"
    js = jobset(rjob("worker"), name=None, generate_name="a" * 49 + "-")
    err = one(validate_create(js))
    assert err.path == "spec.replicatedJobs[0].name"
    assert err.message == (
        "JobSet name is too long, job names generated for this JobSet will exceed 63 characters"
    )
    # A shorter prefix fits.
    assert validate_create(jobset(rjob("worker"), name=None, generate_name="a" * 40 + "-")) == []


def test_generate_name_that_makes_pvc_names_too_long() -> None:
    # upstream TestValidateCreate: "generateName that produces overlong PVC names is rejected"
    mounted = pod_template(
        containers=[
            {"name": "t", "image": "i", "volumeMounts": [{"name": "datasets", "mountPath": "/d"}]}
        ]
    )
    spec = {"volumeClaimPolicies": [{"templates": [{"metadata": {"name": "datasets"}}]}]}
    js = jobset(rjob("w", pod=mounted), name=None, generate_name="a" * 53 + "-", **spec)
    err = one(validate_create(js))
    assert err.path == "spec.volumeClaimPolicies[0].template[0].name"
    assert err.message == "VolumeClaimPolicies template name is too long"
    ok = jobset(rjob("w", pod=mounted), name=None, generate_name="a" * 40 + "-", **spec)
    assert validate_create(ok) == []


def test_replicas_times_parallelism_must_fit_int32() -> None:
    # upstream TestValidateCreate: "number of pods exceeds the limit"
    # upstream TestValidateCreate: "number of pods within the limit"
    # Upstream's rule alone (the size limits below would refuse these values first).
    js = jobset(
        rjob("test-jobset-replicated-job-0", replicas=MAX_INT32, parallelism=MAX_INT32),
        rjob("test-jobset-replicated-job-1", replicas=MIN_INT32, parallelism=MIN_INT32),
        name="js",
    )
    found = texts(validate_create(js, limits=UNLIMITED))
    for rj in ("test-jobset-replicated-job-0", "test-jobset-replicated-job-1"):
        assert (
            "<nil>: Internal error: the product of replicas and parallelism must not exceed "
            f"2147483647 for replicatedJob '{rj}'"
        ) in found
    ok = jobset(rjob(replicas=1000, parallelism=2_000_000))
    assert validate_create(ok, limits=UNLIMITED) == []
    # Parallelism defaults to 1 when unset: replicas alone never overflows.
    assert validate_create(jobset(rjob(replicas=MAX_INT32), name="j"), limits=UNLIMITED) == []


# ------------------------------------------------------------------------------------------------
# Size limits (--max-jobs-per-jobset, --max-pods-per-job; not upstream's)


def test_jobs_per_jobset_are_capped_naming_the_field_the_limit_and_the_flag() -> None:
    # 2**31-1 replicas passed admission: every controller pass then walked them all.
    err = one(validate_create(jobset(rjob(replicas=MAX_INT32), name="j")))
    assert str(err) == (
        "spec.replicatedJobs[0].replicas: Invalid value: 2147483647: must be no more than "
        "100000: a JobSet may have at most 100000 Jobs (the sum of replicas over "
        "spec.replicatedJobs; the controller's --max-jobs-per-jobset flag sets this limit)"
    )
    assert validate_create(jobset(rjob(replicas=100_000), name="j")) == []
    # The bench-large JobSet (64,000 Jobs) is admitted by the defaults.
    assert validate_create(jobset(rjob(replicas=64_000), name="j")) == []


def test_the_sum_of_replicas_is_capped() -> None:
    js = jobset(rjob("a", replicas=60_000), rjob("b", replicas=60_000), name="j")
    err = one(validate_create(js))
    assert err.path == "spec.replicatedJobs" and err.type == ErrorType.TOO_MANY
    assert str(err) == (
        "spec.replicatedJobs: Too many: 120000: must have at most 100000 Jobs in total (the "
        "sum of replicas over spec.replicatedJobs; the controller's --max-jobs-per-jobset "
        "flag sets this limit)"
    )
    assert validate_create(js, limits=Limits(max_jobs_per_jobset=120_000)) == []
    # A ReplicatedJob over the limit by itself is named (the total is then not repeated).
    over = validate_create(js, limits=Limits(max_jobs_per_jobset=10))
    assert [e.path for e in over] == [f"spec.replicatedJobs[{i}].replicas" for i in (0, 1)]


@pytest.mark.parametrize("key", ["parallelism", "completions"])
def test_pods_per_job_are_capped(key: str) -> None:
    js = jobset(rjob(**{key: 100_001}), name="j")
    err = one(validate_create(js))
    assert str(err) == (
        f"spec.replicatedJobs[0].template.spec.{key}: Invalid value: 100001: must be no more "
        "than 100000: a Job of a JobSet may have at most 100000 pods (the controller's "
        "--max-pods-per-job flag sets this limit)"
    )
    assert validate_create(js, limits=Limits(max_pods_per_job=100_001)) == []
    assert validate_create(jobset(rjob(**{key: 100_000}), name="j")) == []


def test_elastic_updates_are_capped_too() -> None:
    gates = {c.FEATURE_ELASTIC_JOBSET: True}
    old = jobset(rjob(indexed=True, parallelism=2, completions=2), name="j")
    new = copy.deepcopy(old)
    new["spec"]["replicatedJobs"][0]["template"]["spec"].update(
        {"parallelism": 200_000, "completions": 200_000}
    )
    found = texts(validate_update(new, old, features=gates))
    assert found == [
        f"spec.replicatedJobs[0].template.spec.{key}: Invalid value: 200000: must be no more "
        "than 100000: a Job of a JobSet may have at most 100000 pods (the controller's "
        "--max-pods-per-job flag sets this limit)"
        for key in ("parallelism", "completions")
    ]
    assert validate_update(new, old, features=gates, limits=UNLIMITED) == []


def test_success_policy_targets_must_exist() -> None:
    # upstream TestValidateCreate: "success policy has non matching replicated job"
    js = jobset(successPolicy={"operator": "All", "targetReplicatedJobs": ["does not exist"]})
    err = one(validate_create(js))
    assert err.type == ErrorType.INTERNAL and err.path is None
    assert err.message == (
        "invalid replicatedJob name 'does not exist' does not appear in .spec.ReplicatedJobs"
    )
    assert err.origin == "spec.successPolicy.targetReplicatedJobs"
    ok = jobset(successPolicy={"operator": "Any", "targetReplicatedJobs": ["rj"]})
    assert validate_create(ok) == []


def test_subdomain_too_long() -> None:
    js = jobset(network={"enableDNSHostnames": True, "subdomain": "a" * 64})
    err = one(validate_create(js))
    assert err.path == "spec.network.subdomain"
    assert err.message == ".spec.network.subdomain is too long, must be less than 63 characters"
    assert validate_create(jobset(network={"subdomain": "a" * 63})) == []


def test_subdomain_must_be_dns1123_subdomain_and_dns1035_label() -> None:
    # upstream TestValidateCreate: "network has invalid dns name"
    errs = validate_create(jobset(network={"subdomain": "Bad_Name"}))
    assert [e.path for e in errs] == ["spec.network.subdomain"] * 2
    assert errs[0].message.startswith("a lowercase RFC 1123 subdomain must consist of")
    assert errs[1].message.startswith("a DNS-1035 label must consist of")
    # A valid subdomain with dots is still not a DNS-1035 label (it names a Service).
    dotted = one(validate_create(jobset(network={"subdomain": "a.b"})))
    assert dotted.message.startswith("a DNS-1035 label")
    # Starting with a digit passes RFC 1123 but not RFC 1035.
    assert one(validate_create(jobset(network={"subdomain": "1abc"}))).path == (
        "spec.network.subdomain"
    )


def test_replicated_job_name_must_give_dns1035_job_names() -> None:
    # upstream TestValidateCreate: "jobset name with invalid character"
    err = one(validate_create(jobset(rjob("username.llama65b"))))
    assert err.path == "spec.replicatedJobs[0].name"
    assert err.value == "js-username.llama65b-0"
    assert err.message == (
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
        "with an alphabetic character, and end with an alphanumeric character (e.g. "
        "'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
    )


def test_group_name_must_be_dns1035_label() -> None:
    # upstream TestValidateCreate: "group name is not DNS 1035 compliant"
    err = one(validate_create(jobset(rjob(group="a" * 64))))
    assert err.path == "spec.replicatedJobs[0].groupName"
    assert err.message == (
        ".spec.replicatedJob[].groupName is too long, must be less than 63 characters"
    )
    bad = one(validate_create(jobset(rjob(group="Group_1"))))
    assert bad.path == "spec.replicatedJobs[0].groupName"
    assert bad.message.startswith("a DNS-1035 label")
    assert validate_create(jobset(rjob(group="workers"))) == []


def test_job_name_too_long_uses_highest_index() -> None:
    # upstream TestValidateCreate: "jobset name will result in job name being too long"
    js = jobset(rjob(replicas=101), name="a" * 58)  # a*58-rj-100 = 65 characters
    err = one(validate_create(js))
    assert err.path == "spec.replicatedJobs[0].name"
    assert err.value == "a" * 58 + "-rj-100"
    assert "job names generated for this JobSet will exceed 63 characters" in err.message
    assert validate_create(jobset(rjob(replicas=10), name="a" * 58)) == []  # 63 characters


POD_TOO_LONG = (
    "JobSet name is too long, pod names generated for this JobSet will exceed 63 characters"
)


def test_pod_name_too_long_for_indexed_jobs() -> None:
    # upstream TestValidateCreate: "jobset name will result in a pod name being too long"
    js = jobset(indexed(), name="a" * 56)
    err = one(validate_create(js))
    assert err.path == "spec.replicatedJobs[0].name"
    assert err.message == POD_TOO_LONG
    assert err.value == "a" * 56 + "-rj-0"  # upstream shows the Job name
    # <name>-rj-0-0-abcde is exactly 63 characters with a 50-character name.
    assert validate_create(jobset(indexed(), name="a" * 50)) == []
    assert one(validate_create(jobset(indexed(), name="a" * 51))).message == POD_TOO_LONG
    # Non-indexed Jobs (random pod names) and unset completions skip the check.
    assert validate_create(jobset(rjob(indexed=False, completions=1), name="a" * 56)) == []
    assert validate_create(jobset(rjob(indexed=True), name="a" * 56)) == []


def test_managed_by_must_be_domain_prefixed_path() -> None:
    # upstream TestValidateCreate: "jobset controller name is not a domain-prefixed path"
    err = one(validate_create(jobset(managedBy="notDomainPrefixedPathControllerName")))
    assert str(err) == (
        'spec.managedBy: Invalid value: "notDomainPrefixedPathControllerName": must be a '
        'domain-prefixed path (such as "acme.io/foo")'
    )
    host = one(validate_create(jobset(managedBy="Not_A_Host/path")))
    assert host.value == "Not_A_Host"
    assert host.message.startswith("a lowercase RFC 1123 subdomain")
    path = one(validate_create(jobset(managedBy="acme.io/bad path")))
    assert path.value == "bad path"
    assert path.message.startswith("Invalid path")
    assert str(one(validate_create(jobset(managedBy="")))) == "spec.managedBy: Required value"


def test_managed_by_at_most_63_characters() -> None:
    # upstream TestValidateCreate: "jobset controller name is too long"
    err = one(validate_create(jobset(managedBy="foo.bar/" + "a" * 63)))
    assert str(err) == "spec.managedBy: Too long: may not be more than 63 bytes"
    assert err.type == ErrorType.TOO_LONG


@pytest.mark.parametrize(
    "manager",
    [
        pytest.param(None, id="jobset controller name is unset"),
        pytest.param(c.JOBSET_CONTROLLER_NAME, id="jobset controller name is set and valid"),
        pytest.param("kueue.x-k8s.io/multikueue", id="not upstream: another manager"),
    ],
)
def test_managed_by_valid_values(manager: str | None) -> None:
    spec = {} if manager is None else {"managedBy": manager}
    assert validate_create(jobset(indexed(), **spec)) == []


# ------------------------------------------------------------------------------------------------
# Create: failure policy


def fp(*rules: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return {"failurePolicy": {"maxRestarts": 1, "rules": list(rules), **kw}}


def test_failure_policy_valid_rule() -> None:
    # upstream TestValidateCreate: "failure policy rule name is valid"
    js = jobset(
        indexed(),
        **fp(
            {
                "name": "superAwesomeFailurePolicyRule",
                "action": "RestartJobSet",
                "onJobFailureReasons": list(c.JOB_FAILURE_REASONS),
                "targetReplicatedJobs": ["rj"],
            }
        ),
    )
    assert validate_create(js) == []


def test_failure_policy_unknown_reason() -> None:
    # upstream TestValidateCreate: "jobset failure policy has an invalid on job failure reason"
    js = jobset(
        indexed(),
        **fp({"name": "r", "action": "FailJobSet", "onJobFailureReasons": ["fakeReason"]}),
    )
    err = one(validate_create(js))
    assert err.message == (
        "invalid job failure reason 'fakeReason' in failure policy is not a recognized job "
        "failure reason"
    )
    assert err.origin == "spec.failurePolicy.rules[0].onJobFailureReasons"


def test_failure_policy_unknown_target() -> None:
    # upstream TestValidateCreate: "jobset failure policy has an invalid replicated job"
    js = jobset(
        indexed(),
        **fp({"name": "r", "action": "FailJobSet", "targetReplicatedJobs": ["fakeReplicatedJob"]}),
    )
    err = one(validate_create(js))
    assert err.message == (
        "invalid replicatedJob name 'fakeReplicatedJob' in failure policy does not appear in "
        ".spec.ReplicatedJobs"
    )


def test_failure_policy_rule_name_length() -> None:
    # upstream TestValidateCreate: "jobset failure policy rule name is 0 characters long a.k.a unset"
    # upstream TestValidateCreate: "jobset failure policy rule name is greater than 128 characters long"
    empty = texts(validate_create(jobset(indexed(), **fp({"action": "FailJobSet"}))))
    assert (
        "<nil>: Internal error: invalid failure policy rule name of length 0, the rule name "
        "must be at least 1 characters long and at most 128 characters long"
    ) in empty
    long = jobset(indexed(), **fp({"name": "a" * 129, "action": "FailJobSet"}))
    err = one(validate_create(long))
    assert "invalid failure policy rule name of length 129" in err.message
    assert (
        validate_create(jobset(indexed(), **fp({"name": "a" * 128, "action": "FailJobSet"}))) == []
    )


def test_failure_policy_rule_names_unique() -> None:
    # upstream TestValidateCreate: "there are two failure policy rules with the same name"
    js = jobset(
        indexed(),
        **fp(
            {"name": "repeatedRuleName", "action": "FailJobSet"},
            {"name": "other", "action": "FailJobSet"},
            {"name": "repeatedRuleName", "action": "RestartJobSet"},
        ),
    )
    err = one(validate_create(js))
    assert err.message == (
        "rule names are not unique, rules with indices [0 2] all have the same name "
        "'repeatedRuleName'"
    )


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(
            "1ruleToRuleThemAll",
            id="failure policy rule name does not start with an alphabetic character",
        ),
        pytest.param(
            "ruleToRuleThemAll,",
            id="failure policy rule name does not end with an alphanumeric nor '_'",
        ),
        pytest.param("rule-name", id="not upstream: a hyphen"),
        pytest.param("_x", id="not upstream: starts with an underscore"),
    ],
)
def test_failure_policy_rule_name_format(name: str) -> None:
    err = one(validate_create(jobset(indexed(), **fp({"name": name, "action": "FailJobSet"}))))
    assert err.message == (
        f"invalid failure policy rule name '{name}', a failure policy rule name must start "
        "with an alphabetic character, optionally followed by a string of alphanumeric "
        "characters or '_,:', and must end with an alphanumeric character or '_'"
    )


@pytest.mark.parametrize("name", ["a", "rule_", "A:b,c_9"])
def test_failure_policy_rule_name_format_accepts(name: str) -> None:
    assert validate_create(jobset(indexed(), **fp({"name": name, "action": "FailJobSet"}))) == []


@pytest.mark.parametrize(
    "action",
    [
        pytest.param(
            c.RESTART_JOB,
            id="jobset failure policy rule has RestartJob action and RestartJob feature gate is disabled",
        ),
        pytest.param(
            c.RESTART_JOB_AND_IGNORE_MAX_RESTARTS,
            id="jobset failure policy rule has RestartJobAndIgnoreMaxRestarts action and RestartJob feature gate is disabled",
        ),
    ],
)
def test_restart_job_actions_need_feature_gate(action: str) -> None:
    # The gate error is the only failure-policy error reported (upstream returns early).
    js = jobset(
        indexed(),
        **fp({"name": "r", "action": action, "onJobFailureReasons": ["fakeReason"]}),
    )
    err = one(validate_create(js))
    assert err.message == (
        "RestartJob and RestartJobAndIgnoreMaxRestarts failure policy actions are not allowed "
        "when RestartJob feature gate is disabled"
    )
    ok = jobset(indexed(), **fp({"name": "r", "action": action}))
    assert validate_create(ok, features={c.FEATURE_RESTART_JOB: True}) == []


@pytest.mark.parametrize(
    "action",
    [
        pytest.param(
            c.RESTART_JOB,
            id="jobset failure policy rule has RestartJob action and a replicated job with replicas > 1024",
        ),
        pytest.param(
            c.RESTART_JOB_AND_IGNORE_MAX_RESTARTS,
            id="jobset failure policy rule has RestartJobAndIgnoreMaxRestarts action and a replicated job with replicas > 1024",
        ),
    ],
)
def test_restart_job_actions_limit_replicas(action: str) -> None:
    gates = {c.FEATURE_RESTART_JOB: True}
    js = jobset(indexed(replicas=1025), **fp({"name": "r", "action": action}))
    err = one(validate_create(js, features=gates))
    assert err.message == (
        "JobSet cannot have a failure policy rule with RestartJob or "
        "RestartJobAndIgnoreMaxRestarts action and a replicated job with replicas > 1024"
    )
    js = jobset(indexed(replicas=1024), **fp({"name": "r", "action": action}))
    assert validate_create(js, features=gates) == []
    # Other actions have no such limit.
    js = jobset(indexed(replicas=5000), **fp({"name": "r", "action": "RestartJobSet"}))
    assert validate_create(js) == []


# ------------------------------------------------------------------------------------------------
# Create: coordinator


def coordinated(coord: dict[str, Any], *rjobs: dict[str, Any], **kw: Any) -> dict[str, Any]:
    rjobs = rjobs or (
        indexed("replicatedjob-a", replicas=2, n=2),
        indexed("replicatedjob-b", replicas=2, n=2),
    )
    return jobset(*rjobs, coordinator=coord, **kw)


def test_coordinator_valid() -> None:
    js = coordinated({"replicatedJob": "replicatedjob-b", "jobIndex": 1, "podIndex": 1})
    assert validate_create(js) == []


def test_coordinator_replicated_job_must_exist() -> None:
    # upstream TestValidateCreate: "coordinator replicated job does not exist"
    err = one(validate_create(coordinated({"replicatedJob": "fake-rjob"})))
    assert err.message == "coordinator replicatedJob fake-rjob does not exist"
    assert err.origin == "spec.coordinator"


def test_coordinator_job_needs_indexed_completions() -> None:
    # upstream TestValidateCreate: "coordinator replicated job missing completions"
    js = coordinated(
        {"replicatedJob": "replicatedjob-a"},
        rjob("replicatedjob-a", replicas=2, indexed=True, parallelism=2),
    )
    msg = "job for coordinator pod must be indexed completion mode, and completions number must be set"
    assert one(validate_create(js)).message == msg
    js = coordinated(
        {"replicatedJob": "replicatedjob-a"},
        rjob("replicatedjob-a", indexed=False, completions=2),
    )
    assert one(validate_create(js)).message == msg


def test_coordinator_job_index_in_range() -> None:
    # upstream TestValidateCreate: "coordinator job index invalid"
    err = one(validate_create(coordinated({"replicatedJob": "replicatedjob-a", "jobIndex": 2})))
    assert err.message == "coordinator job index 2 is invalid for replicatedJob replicatedjob-a"
    err = one(validate_create(coordinated({"replicatedJob": "replicatedjob-a", "jobIndex": -1})))
    assert "coordinator job index -1 is invalid" in err.message


def test_coordinator_pod_index_in_range() -> None:
    # upstream TestValidateCreate: "coordinator pod index invalid"
    err = one(validate_create(coordinated({"replicatedJob": "replicatedjob-a", "podIndex": 2})))
    assert err.message == (
        "coordinator pod index 2 is invalid for replicatedJob replicatedjob-a job index 0"
    )


@pytest.mark.parametrize(
    ("js_name", "rj_name", "subdomain"),
    [("a" * 60, "replicatedjob-a", None), ("jobset", "a" * 60, None), ("jobset", "rj", "a" * 60)],
    ids=[
        "coordinator label value is too long due to long JobSet name",
        "coordinator label value is too long due to long ReplicatedJob name",
        "coordinator label value is too long due to long SubDomain",
    ],
)
def test_coordinator_label_value_must_be_valid(
    js_name: str, rj_name: str, subdomain: str | None
) -> None:
    spec: dict[str, Any] = {}
    if subdomain:
        spec["network"] = {"subdomain": subdomain}
    js = coordinated({"replicatedJob": rj_name}, indexed(rj_name), name=js_name, **spec)
    errs = [e for e in validate_create(js) if e.origin == "spec.coordinator"]
    err = one(errs)
    assert err.message.startswith("spec will lead to invalid label value")
    assert 'for coordinator label "jobset.sigs.k8s.io/coordinator"' in err.message
    assert "must be no more than 63 characters" in err.message


# ------------------------------------------------------------------------------------------------
# Create: dependsOn


def chain(*deps: list[dict[str, str]] | None) -> dict[str, Any]:
    return jobset(*(rjob(f"job-{i + 1}", depends_on=d) for i, d in enumerate(deps)))


def ready(name: str) -> dict[str, str]:
    return {"name": name, "status": "Ready"}


@pytest.mark.parametrize(
    "deps",
    [
        [None, [ready("job-1")], [ready("job-1")]],
        [None, [ready("job-1")], [ready("job-2")]],
        [None, None, [ready("job-1"), {"name": "job-2", "status": "Complete"}]],
    ],
    ids=[
        "DependsOn is valid since job-2 depends on job-1 and job-3 depends on job-1",
        "DependsOn is valid since job-2 depends on job-1 and job-3 depends on job-2",
        "DependsOn is valid since job-3 depends on job-1 and job-2",
    ],
)
def test_depends_on_earlier_jobs_is_valid(deps: list[Any]) -> None:
    assert validate_create(chain(*deps)) == []


def test_depends_on_later_job_is_invalid() -> None:
    # upstream TestValidateCreate: "DependsOn is invalid since job-2 depends on job-3"
    # upstream TestValidateCreate: "DependsOn is invalid since job-2 depends on job-3 and job-1"
    err = one(validate_create(chain(None, [ready("job-3")], None)))
    assert err.message == "replicatedJob: job-2 cannot depend on replicatedJob: job-3"
    err = one(validate_create(chain(None, [ready("job-3"), ready("job-1")], None)))
    assert err.message == "replicatedJob: job-2 cannot depend on replicatedJob: job-3"


def test_depends_on_itself_is_refused() -> None:
    # Upstream admits it and then never creates the ReplicatedJob; refused here.
    err = one(validate_create(chain(None, [ready("job-2")])))
    assert str(err) == (
        'spec.replicatedJobs[1].dependsOn[0].name: Invalid value: "job-2": '
        "a ReplicatedJob cannot depend on itself: it would never start"
    )


def test_depends_on_unknown_job_is_invalid() -> None:
    # upstream TestValidateCreate: "job-2 depends on invalid ReplicatedJob"
    err = one(validate_create(chain(None, [ready("invalid")])))
    assert err.message == "replicatedJob: job-2 cannot depend on replicatedJob: invalid"


def test_depends_on_not_allowed_on_first_job() -> None:
    # upstream TestValidateCreate: "dependsOn cannot be set for first replicated job"
    found = texts(validate_create(chain([{"name": "invalid", "status": "Complete"}])))
    assert "<nil>: Internal error: DependsOn can't be set for the first ReplicatedJob" in found
    assert validate_create(jobset(replicatedJobs=[])) == []


# ------------------------------------------------------------------------------------------------
# Create: volumeClaimPolicies

PVC_SPEC = {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1Gi"}}}


def mounting(*claims: str, init: bool = False, volumes: Sequence[str] = ()) -> dict[str, Any]:
    mounts = [{"name": n, "mountPath": f"/mnt/{n}"} for n in claims]
    container = {"name": "c", "image": "i", "volumeMounts": mounts}
    pod: dict[str, Any] = {"containers": [{"name": "main", "image": "i"}]}
    pod["initContainers" if init else "containers"] = (
        [container] if init else [container, {"name": "side", "image": "i"}]
    )
    if volumes:
        pod["volumes"] = [{"name": v, "emptyDir": {}} for v in volumes]
    return {"spec": pod}


def vcp(*names: str, retention: str | None = None) -> dict[str, Any]:
    policy: dict[str, Any] = {
        "templates": [{"metadata": {"name": n}, "spec": copy.deepcopy(PVC_SPEC)} for n in names]
    }
    if retention:
        policy["retentionPolicy"] = {"whenDeleted": retention}
    return {"volumeClaimPolicies": [policy]}


def test_volume_claim_mounted_by_container_or_init_container() -> None:
    # upstream TestValidateCreate: "volumeClaimPolicy is valid since volume exists in the container"
    # upstream TestValidateCreate: "volumeClaimPolicy is valid since volume exists in the initContainer"
    assert validate_create(jobset(rjob(pod=mounting("data")), **vcp("data"))) == []
    assert validate_create(jobset(rjob(pod=mounting("data", init=True)), **vcp("data"))) == []
    # A second ReplicatedJob may mount it instead of the first.
    js = jobset(rjob("a"), rjob("b", pod=mounting("data")), **vcp("data"))
    assert validate_create(js) == []


def test_volume_claim_names_unique() -> None:
    # upstream TestValidateCreate: "volumeClaimPolicy is invalid since template names are not unique"
    js = jobset(rjob(pod=mounting("data")), **vcp("data", "data"))
    err = one(validate_create(js))
    assert str(err) == (
        'spec.volumeClaimPolicies[0].template[1].name: Invalid value: "data": '
        "names must be unique for VolumeClaimPolicies template"
    )


def test_volume_claim_name_dns1123() -> None:
    # upstream TestValidateCreate: "volumeClaimPolicy is invalid since template name has uppercase letters"
    js = jobset(rjob(pod=mounting("Data")), **vcp("Data"))
    err = one(validate_create(js))
    assert err.path == "spec.volumeClaimPolicies[0].template[0].name"
    assert err.message.startswith(
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters"
    )


def test_volume_claim_name_too_long() -> None:
    # upstream TestValidateCreate: "volumeClaimPolicy is invalid since template name is too long"
    claim = "c" * 60  # c*60-js = 63 characters: fits
    assert validate_create(jobset(rjob(pod=mounting(claim)), **vcp(claim))) == []
    claim = "c" * 61
    err = one(validate_create(jobset(rjob(pod=mounting(claim)), **vcp(claim))))
    assert err.message == "VolumeClaimPolicies template name is too long"


def test_volume_claim_needs_a_mount() -> None:
    # upstream TestValidateCreate: "volumeClaimPolicy is invalid since no matching volumeMount in containers"
    err = one(validate_create(jobset(rjob(pod=mounting("other")), **vcp("data"))))
    assert err.path == "spec.replicatedJobs"
    assert err.message == (
        "replicatedJob containers don't have a matching volumeMount: data from VolumeClaimPolicies"
    )


def test_volume_claim_conflicts_with_template_volume() -> None:
    # upstream TestValidateCreate: "volumeClaimPolicy is invalid since volume name conflicts with existing volume"
    js = jobset(rjob(pod=mounting("data", volumes=["scratch", "data"])), **vcp("data"))
    err = one(validate_create(js))
    assert err.path == "spec.replicatedJobs[0].template.spec.template.spec.volumes[1].name"
    assert err.message == "volume name conflicts with VolumeClaimPolicy template name: data"


def test_existing_pvc_must_match_and_be_retained() -> None:
    # upstream TestValidateCreate: "volumeClaimPolicy is valid when existing PVC matches template spec"
    # upstream TestValidateCreate: "volumeClaimPolicy retention policy must be retain for existing PVC"
    # upstream TestValidateCreate: "volumeClaimPolicy is invalid when existing PVC does not match template spec"
    js = jobset(rjob(pod=mounting("data")), **vcp("data", retention="Retain"))
    assert volume_claim_pvc_names(js) == ["data-js"]
    same = {"spec": copy.deepcopy(PVC_SPEC)}
    assert validate_create(js, existing_pvcs={"data-js": same}) == []

    deleting = jobset(rjob(pod=mounting("data")), **vcp("data", retention="Delete"))
    err = one(validate_create(deleting, existing_pvcs={"data-js": same}))
    assert str(err) == (
        'spec.volumeClaimPolicies[0].retentionPolicy.whenDeleted: Invalid value: "Delete": '
        "retentionPolicy must be retain when PVC exists"
    )

    other = {"spec": {**PVC_SPEC, "accessModes": ["ReadWriteOnce"]}}
    err = one(validate_create(js, existing_pvcs={"data-js": other}))
    assert err.path == "spec.volumeClaimPolicies[0].template[0].spec"
    assert err.message == "spec does not match existing PVC data-js in namespace default"


def test_existing_pvc_defaulted_and_bound_by_the_server_still_matches() -> None:
    js = jobset(rjob(pod=mounting("data")), **vcp("data", retention="Retain"))
    stored = {
        **copy.deepcopy(PVC_SPEC),
        "volumeMode": "Filesystem",
        "storageClassName": "standard",
        "volumeName": "pvc-1234",
    }
    assert validate_create(js, existing_pvcs={"data-js": {"spec": stored}}) == []
    other_class = {**stored, "storageClassName": "fast"}
    # A class the template names is compared as given.
    named = jobset(rjob(pod=mounting("data")), **vcp("data", retention="Retain"))
    named["spec"]["volumeClaimPolicies"][0]["templates"][0]["spec"]["storageClassName"] = "standard"
    err = one(validate_create(named, existing_pvcs={"data-js": {"spec": other_class}}))
    assert err.message == "spec does not match existing PVC data-js in namespace default"


def test_pvc_lookup_failure_is_an_internal_error() -> None:
    js = jobset(rjob(pod=mounting("data")), **vcp("data"))
    err = one(validate_create(js, existing_pvcs={"data-js": RuntimeError("timeout")}))
    assert str(err) == (
        "spec.volumeClaimPolicies[0].template[0]: Internal error: "
        "failed to check for existing PVC data-js: timeout"
    )


# ------------------------------------------------------------------------------------------------
# Create: in-place restart

IN_PLACE = {"InPlaceRestart": True}


def in_place_rjob(**kw: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "completions": 2,
        "parallelism": 2,
        "backoffLimit": MAX_INT32,
        "podReplacementPolicy": "Failed",
    }
    fields.update(kw)
    fields = {k: v for k, v in fields.items() if v is not None}
    return rjob("job-1", indexed=True, **fields)


def in_place_js(r: dict[str, Any]) -> dict[str, Any]:
    return jobset(r, failurePolicy={"maxRestarts": 3, "restartStrategy": "InPlaceRestart"})


def test_in_place_restart_needs_feature_gate() -> None:
    # upstream TestValidateCreate: "InPlaceRestart restart strategy cannot be set when InPlaceRestart feature gate is disabled"
    # upstream TestValidateCreate: "InPlaceRestart restart strategy can be set when InPlaceRestart feature gate is enabled"
    err = one(validate_create(in_place_js(in_place_rjob())))
    assert err.message == (
        "InPlaceRestart restart strategy cannot be set when InPlaceRestart feature gate is disabled"
    )
    assert validate_create(in_place_js(in_place_rjob()), features=IN_PLACE) == []


def test_in_place_restart_backoff_limit() -> None:
    # upstream TestValidateCreate: "InPlaceRestart enabled: backoffLimit is not MaxInt32"
    err = one(validate_create(in_place_js(in_place_rjob(backoffLimit=6)), features=IN_PLACE))
    assert str(err) == (
        "spec.replicatedJobs[0].template.spec.backoffLimit: Invalid value: 6: replicatedJob "
        "job-1: must be set to 2147483647 (MaxInt32) when in-place restart is enabled"
    )


def test_in_place_restart_pod_replacement_policy() -> None:
    # upstream TestValidateCreate: "InPlaceRestart enabled: podReplacementPolicy is not Failed"
    js = in_place_js(in_place_rjob(podReplacementPolicy="TerminatingOrFailed"))
    err = one(validate_create(js, features=IN_PLACE))
    assert err.path == "spec.replicatedJobs[0].template.spec.podReplacementPolicy"
    assert (
        err.message == "replicatedJob job-1: must be set to Failed when in-place restart is enabled"
    )
    unset = one(
        validate_create(in_place_js(in_place_rjob(podReplacementPolicy=None)), features=IN_PLACE)
    )
    assert "Invalid value: null" in str(unset)


@pytest.mark.parametrize(
    "fields",
    [{"completions": 3}, {"completions": None}, {"parallelism": None}],
    ids=[
        "InPlaceRestart enabled: completions != parallelism",
        "InPlaceRestart enabled: completions is nil",
        "InPlaceRestart enabled: parallelism is nil",
    ],
)
def test_in_place_restart_completions_equal_parallelism(fields: dict[str, Any]) -> None:
    err = one(validate_create(in_place_js(in_place_rjob(**fields)), features=IN_PLACE))
    assert err.path == "spec.replicatedJobs[0].template.spec.completions"
    assert err.message == (
        "replicatedJob job-1: completions and parallelism must be set and equal to each other "
        "when in-place restart is enabled"
    )


def test_dns_helpers() -> None:
    assert is_dns1035_label("a-1") == []
    assert is_dns1035_label("a" * 64)[0] == "must be no more than 63 characters"


# ------------------------------------------------------------------------------------------------
# Update


def rjobs_for_update() -> list[dict[str, Any]]:
    return [
        {
            "name": "test-jobset-replicated-job-0",
            "replicas": 1,
            "template": {"spec": {"parallelism": 1}},
        },
        {
            "name": "test-jobset-replicated-job-1",
            "replicas": 1,
            "template": {"spec": {"parallelism": 1}},
        },
    ]


def upd(rjobs: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    spec["replicatedJobs"] = rjobs if rjobs is not None else rjobs_for_update()
    return {"metadata": {"name": "js"}, "spec": spec}


def with_annotation(rjobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = copy.deepcopy(rjobs)
    out[0]["template"]["spec"]["template"] = {"metadata": {"annotations": {"key": "value"}}}
    return out


def immutable(errs: list[FieldError]) -> None:
    err = one(errs)
    assert err.path == "spec.replicatedJobs"
    assert err.message == "field is immutable"
    assert str(err) == "spec.replicatedJobs: Invalid value: field is immutable"  # no dump


def test_update_suspend_and_metadata() -> None:
    # upstream TestValidateUpdate: "update suspend"
    # upstream TestValidateUpdate: "update labels"
    assert validate_update(upd(), upd(suspend=True)) == []
    new = upd()
    new["metadata"]["labels"] = {"hello": "world"}
    assert validate_update(new, upd(suspend=True)) == []


def test_update_managed_by_immutable() -> None:
    # upstream TestValidateUpdate: "managedBy is immutable"
    err = one(validate_update(upd(managedBy="example.com/new"), upd(managedBy="example.com/old")))
    assert str(err) == 'spec.managedBy: Invalid value: "example.com/new": field is immutable'
    err = one(validate_update(upd(managedBy="example.com/new"), upd()))
    assert err.path == "spec.managedBy"
    assert validate_update(upd(managedBy="a.io/x"), upd(managedBy="a.io/x")) == []


def test_pod_template_mutable_while_suspended_or_getting_suspended() -> None:
    # upstream TestValidateUpdate: "replicated job pod template can be updated for suspended jobset"
    # upstream TestValidateUpdate: "replicated job pod template can be updated for jobset getting suspended"
    base = rjobs_for_update()
    assert validate_update(upd(with_annotation(base)), upd(base, suspend=True)) == []
    assert validate_update(upd(with_annotation(base), suspend=True), upd(base, suspend=False)) == []
    immutable(validate_update(upd(with_annotation(base)), upd(base)))


def test_kueue_fields_mutable_while_suspended_only() -> None:
    # upstream TestValidateUpdate: "replicated job pod template cannot be updated for running jobset"
    base = rjobs_for_update()
    changed = copy.deepcopy(base)
    changed[0]["template"]["spec"]["template"] = {
        "metadata": {"labels": {"kueue.x-k8s.io/queue": "q"}},
        "spec": {
            "nodeSelector": {"pool": "a"},
            "tolerations": [{"key": "k", "operator": "Exists"}],
            "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
        },
    }
    assert validate_update(upd(changed, suspend=True), upd(base, suspend=True)) == []
    immutable(validate_update(upd(changed), upd(base)))
    # Other pod fields stay immutable even while suspended.
    image = copy.deepcopy(base)
    image[0]["template"]["spec"]["template"] = {
        "spec": {"containers": [{"name": "c", "image": "x"}]}
    }
    immutable(validate_update(upd(image, suspend=True), upd(base, suspend=True)))


def test_scheduling_gates_removed_while_suspended() -> None:
    # upstream TestValidateUpdate: "schedulingGates for pod template can be updated for suspended JobSet"
    # upstream TestValidateUpdate: "schedulingGates for pod template cannot be updated for unsuspended JobSet"
    gated = rjobs_for_update()
    gated[0]["template"]["spec"]["template"] = {"spec": {"schedulingGates": [{"name": "g"}]}}
    assert validate_update(upd(rjobs_for_update(), suspend=True), upd(gated, suspend=True)) == []
    immutable(validate_update(upd(rjobs_for_update()), upd(gated)))


def test_replicated_job_rename_and_additions_rejected() -> None:
    # upstream TestValidateUpdate: "replicated job name cannot be updated"
    # upstream TestValidateUpdate: "adding a new ReplicatedJob while suspended does not panic and is rejected"
    renamed = rjobs_for_update()
    renamed[0]["name"] = "other"
    immutable(validate_update(upd(renamed), upd()))
    added = [*rjobs_for_update(), {"name": "new", "replicas": 1, "template": {"spec": {}}}]
    immutable(validate_update(upd(added, suspend=True), upd(suspend=True)))
    immutable(
        validate_update(upd(list(reversed(rjobs_for_update())), suspend=True), upd(suspend=True))
    )


ELASTIC = {"ElasticJobSet": True}


def elastic_rjobs(par: int | None, comp: int | None, mode: str = "Indexed") -> list[dict[str, Any]]:
    spec: dict[str, Any] = {"completionMode": mode}
    if par is not None:
        spec["parallelism"] = par
    if comp is not None:
        spec["completions"] = comp
    return [{"name": "rj", "replicas": 1, "template": {"spec": spec}}]


def finished(js: dict[str, Any], ctype: str) -> dict[str, Any]:
    js["status"] = {"conditions": [{"type": ctype, "status": "True"}]}
    return js


def test_elastic_scaling_of_indexed_jobs() -> None:
    # upstream TestValidateUpdate: "valid scaling of parallelism and completions"
    old = upd(elastic_rjobs(2, 2))
    assert validate_update(upd(elastic_rjobs(4, 4)), old, features=ELASTIC) == []
    immutable(validate_update(upd(elastic_rjobs(4, 4)), old))  # gate off


def test_elastic_scaling_bounds() -> None:
    # upstream TestValidateUpdate: "invalid scaling of parallelism to < 1"
    # upstream TestValidateUpdate: "invalid scaling of completions to < 1"
    # upstream TestValidateUpdate: "invalid scaling: parallelism and completions must be equal"
    old = upd(elastic_rjobs(2, 2))
    errs = validate_update(upd(elastic_rjobs(0, 2)), old, features=ELASTIC)
    assert texts(errs)[0] == (
        "spec.replicatedJobs[0].template.spec.parallelism: Invalid value: 0: parallelism must be >= 1"
    )
    errs = validate_update(upd(elastic_rjobs(2, 0)), old, features=ELASTIC)
    assert texts(errs)[0] == (
        "spec.replicatedJobs[0].template.spec.completions: Invalid value: 0: completions must be >= 1"
    )
    err = one(validate_update(upd(elastic_rjobs(4, 5)), old, features=ELASTIC))
    assert str(err) == (
        "spec.replicatedJobs[0].template.spec.completions: Invalid value: 5: completions must "
        "be equal to parallelism for Elastic Indexed Jobs"
    )


@pytest.mark.parametrize(
    "ctype",
    [
        pytest.param("Completed", id="cannot scale parallelism if JobSet is Completed"),
        pytest.param("Failed", id="cannot scale completions if JobSet is Failed"),
    ],
)
def test_elastic_scaling_forbidden_once_finished(ctype: str) -> None:
    old = finished(upd(elastic_rjobs(2, 2)), ctype)
    err = one(validate_update(upd(elastic_rjobs(3, 3)), old, features=ELASTIC))
    assert str(err) == (
        "spec.replicatedJobs[0].template.spec: Forbidden: Cannot mutate parallelism or "
        "completions when JobSet is in a terminal state (Completed or Failed)"
    )


def test_elastic_scaling_keeps_other_fields_immutable() -> None:
    # upstream TestValidateUpdate: "immutability still enforced for other fields during valid scale"
    old = upd(elastic_rjobs(2, 2))
    new = upd(elastic_rjobs(3, 3))
    new["spec"]["replicatedJobs"][0]["replicas"] = 2
    immutable(validate_update(new, old, features=ELASTIC))
    # Non-indexed Jobs cannot be scaled even with the gate.
    old = upd(elastic_rjobs(2, 2, "NonIndexed"))
    immutable(validate_update(upd(elastic_rjobs(3, 3, "NonIndexed")), old, features=ELASTIC))


def test_elastic_scaling_matches_replicated_jobs_by_name() -> None:
    # upstream TestValidateUpdate: "reordering ReplicatedJobs evaluates ElasticJobSet scaling correctly by name"
    a: dict[str, Any] = {
        "name": "a",
        "replicas": 1,
        "template": {"spec": {"completionMode": "Indexed", "parallelism": 1, "completions": 1}},
    }
    b: dict[str, Any] = {
        "name": "b",
        "replicas": 1,
        "template": {"spec": {"completionMode": "Indexed", "parallelism": 2, "completions": 2}},
    }
    old = upd([a, b])
    b2 = copy.deepcopy(b)
    b2["template"]["spec"].update(parallelism=4, completions=4)
    # Reordered: scaling is judged per name (no error about b's values), but order is immutable.
    immutable(validate_update(upd([b2, a]), old, features=ELASTIC))
    assert validate_update(upd([a, b2]), old, features=ELASTIC) == []


def _with_resources(memory: str, cpu: str, size: str) -> list[dict[str, Any]]:
    out = rjobs_for_update()
    pod = out[0]["template"]["spec"].setdefault("template", {}).setdefault("spec", {})
    pod["containers"] = [
        {
            "name": "c",
            "image": "busybox",
            "resources": {"requests": {"memory": memory, "cpu": cpu}, "limits": {"cpu": cpu}},
        }
    ]
    pod["volumes"] = [{"name": "scratch", "emptyDir": {"sizeLimit": size}}]
    return out


def test_quantities_compare_by_amount_not_text() -> None:
    # `1024Mi` resubmitted for `1Gi` (what `kubectl apply` of a re-rendered manifest does)
    # is the same JobSet, as resource.Quantity's semantic equality says upstream.
    old = upd(_with_resources("1Gi", "0.5", "1G"))
    assert validate_update(upd(_with_resources("1024Mi", "500m", "1000M")), old) == []
    immutable(validate_update(upd(_with_resources("1025Mi", "500m", "1G")), old))
    immutable(validate_update(upd(_with_resources("1Gi", "501m", "1G")), old))
    assert semantic_equal({"requests": {"cpu": "1"}}, {"requests": {"cpu": 1}})
    assert not semantic_equal({"image": "1Gi"}, {"image": "1024Mi"})  # only quantity fields


def test_many_errors_give_a_bounded_answer() -> None:
    # A JobSet that breaks one rule 2,000 times (50 x 40 claims unmounted) must not turn
    # into a megabyte denial: values of lists are omitted, errors capped, dedup linear.
    errors = [
        FieldError("spec.replicatedJobs", ErrorType.INVALID, f"claim {i} not mounted", [{}] * 50)
        for i in range(2000)
    ] * 2
    status = invalid_status("js", errors)
    assert len(status["details"]["causes"]) == 50
    assert status["message"].endswith("and 1950 more errors]")
    assert len(json.dumps(status)) < 16_000
