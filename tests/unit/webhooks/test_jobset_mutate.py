"""The mutating JobSet webhook answers with the defaults' JSON patch, built directly: no deep
copy of the JobSet and no diff of the whole object, with the same patch as diffing the
defaulted copy gave."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, cast

import jsonpatch
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobset.api import constants as c
from jobset.api import defaulting
from jobset.api.defaulting import (
    default_jobset,
    default_rule_name,
    defaulted_view,
    defaulting_patch,
)
from jobset.webhooks import review
from jobset.webhooks.jobset_webhook import JobSetWebhook
from jobset.webhooks.review import AdmissionRequest


def reference_default(js: dict[str, Any]) -> dict[str, Any]:
    """The defaulting as it was written before the patch was built directly (deep copy, then
    fill in): the specification the patch must reproduce."""

    def child(parent: dict[str, Any], key: str) -> dict[str, Any]:
        value = parent.get(key)
        if not isinstance(value, dict):
            value = {}
            parent[key] = value
        return value

    out = copy.deepcopy(js)
    spec = child(out, "spec")
    if spec.get("successPolicy") is None:
        spec["successPolicy"] = {"operator": c.OPERATOR_ALL}
    if spec.get("startupPolicy") is None:
        spec["startupPolicy"] = {"startupPolicyOrder": c.STARTUP_ANY_ORDER}
    for rjob in spec.get("replicatedJobs") or []:
        if not isinstance(rjob, dict):
            continue
        job_spec = child(child(rjob, "template"), "spec")
        if job_spec.get("completionMode") is None:
            job_spec["completionMode"] = c.JOB_COMPLETION_MODE_INDEXED
        pod_spec = child(child(job_spec, "template"), "spec")
        if not pod_spec.get("restartPolicy"):
            pod_spec["restartPolicy"] = c.POD_RESTART_POLICY_ON_FAILURE
    network = child(spec, "network")
    if network.get("enableDNSHostnames") is None:
        network["enableDNSHostnames"] = True
    if network.get("publishNotReadyAddresses") is None:
        network["publishNotReadyAddresses"] = True
    failure_policy = spec.get("failurePolicy")
    if isinstance(failure_policy, dict):
        for index, rule in enumerate(failure_policy.get("rules") or []):
            if isinstance(rule, dict) and not rule.get("name"):
                rule["name"] = default_rule_name(index)
    for policy in spec.get("volumeClaimPolicies") or []:
        if isinstance(policy, dict) and policy.get("retentionPolicy") is None:
            policy["retentionPolicy"] = {"whenDeleted": c.RETENTION_DELETE}
    return out


# Values a field may hold in what a client sends: absent, null, empty, another type, or set.
def _maybe(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.sampled_from(["<absent>", None, "", 0, [], {}]) | values


def _obj(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({k: _maybe(v) for k, v in fields.items()}).map(
        lambda d: {k: v for k, v in d.items() if v != "<absent>"}
    )


pod_spec = _obj(restartPolicy=st.sampled_from(["Never", "Always"]), containers=st.just([]))
pod_template = _obj(spec=pod_spec, metadata=st.just({"labels": {"a": "b"}}))
job_spec = _obj(completionMode=st.just("NonIndexed"), template=pod_template)
rjob = _obj(name=st.just("rj"), template=_obj(spec=job_spec))
spec = _obj(
    replicatedJobs=st.lists(rjob | st.just("not-an-object"), max_size=3),
    successPolicy=st.just({"operator": "Any"}),
    startupPolicy=st.just({"startupPolicyOrder": "InOrder"}),
    network=_obj(enableDNSHostnames=st.booleans(), publishNotReadyAddresses=st.booleans()),
    failurePolicy=_obj(rules=st.lists(_obj(name=st.just("r"), action=st.just("FailJobSet")))),
    volumeClaimPolicies=st.lists(
        _obj(retentionPolicy=st.just({"whenDeleted": "Retain"})) | st.just(7), max_size=2
    ),
)
jobsets = st.fixed_dictionaries({"metadata": st.just({"name": "js"})}).flatmap(
    lambda base: _maybe(spec).map(
        lambda s: base if s == "<absent>" else {**base, "spec": s}  # type: ignore[comparison-overlap]
    )
)


def _key(op: dict[str, Any]) -> tuple[str, str, str]:
    return (op["op"], op["path"], repr(op.get("value")))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(js=jobsets)
def test_the_patch_is_the_diff_of_the_defaulted_copy(js: dict[str, Any]) -> None:
    before = copy.deepcopy(js)
    try:
        expected = reference_default(js)
    except (TypeError, AttributeError):
        with pytest.raises((TypeError, AttributeError)):
            defaulting_patch(js)
        return
    ops = defaulting_patch(js)
    assert js == before  # read, never written
    assert jsonpatch.apply_patch(js, ops) == expected
    assert default_jobset(js) == expected
    assert defaulted_view(js) == expected  # the controller's copy-free view
    assert js == before
    # The operations themselves are those the diff gave (order aside).
    diffed = jsonpatch.make_patch(js, expected).patch
    assert sorted(map(_key, ops)) == sorted(map(_key, diffed))


def _big_jobset() -> dict[str, Any]:
    """~0.9 MiB: 50 ReplicatedJobs of 20 containers with 100 env vars each."""
    containers = [
        {
            "name": f"c{i}",
            "image": "x",
            "env": [{"name": f"V{j}", "value": "v" * 5} for j in range(100)],
        }
        for i in range(20)
    ]
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.KIND,
        "metadata": {"name": "big", "namespace": "default"},
        "spec": {
            "replicatedJobs": [
                {
                    "name": f"r{i}",
                    "template": {
                        "spec": {"template": {"spec": {"containers": copy.deepcopy(containers)}}}
                    },
                }
                for i in range(50)
            ],
            "failurePolicy": {"rules": [{"action": "FailJobSet"}]},
        },
    }


def _counting(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    calls = [0]
    original = cast(Callable[..., Any], getattr(module, name))

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counting)
    return calls


async def test_mutate_neither_copies_nor_diffs_the_jobset(monkeypatch: pytest.MonkeyPatch) -> None:
    js = _big_jobset()
    req = AdmissionRequest(
        uid="u",
        operation="CREATE",
        kind={"group": c.GROUP, "version": c.VERSION, "kind": c.KIND},
        namespace="default",
        name="big",
        object=js,
        old_object=None,
        dry_run=False,
    )
    expected = reference_default(js)
    deep_copies = _counting(monkeypatch, copy, "deepcopy")
    diffs = _counting(monkeypatch, jsonpatch, "make_patch")
    diffs_in_review = _counting(monkeypatch, review.jsonpatch, "make_patch")
    assert review.jsonpatch is jsonpatch and defaulting.copy is copy
    resp = await JobSetWebhook(None).mutate(req)
    assert resp.allowed and resp.patch
    assert (deep_copies[0], diffs[0], diffs_in_review[0]) == (0, 0, 0)
    # 50 x (completionMode + restartPolicy) + successPolicy, startupPolicy, network, a rule
    # name: one operation each, none carrying the JobSet's own content.
    assert len(resp.patch) == 50 * 2 + 4
    assert jsonpatch.apply_patch(js, resp.patch) == expected


async def test_update_gets_the_defaults_back() -> None:
    """A re-applied manifest lacks the defaults create filled in: the update is defaulted
    too (without the create-only planned strategy annotation)."""
    js = _big_jobset()
    req = AdmissionRequest(
        uid="u",
        operation="UPDATE",
        kind={"group": c.GROUP, "version": c.VERSION, "kind": c.KIND},
        namespace="default",
        name="big",
        object=js,
        old_object=reference_default(js),
        dry_run=False,
    )
    resp = await JobSetWebhook(None).mutate(req)
    assert resp.allowed and resp.patch
    assert jsonpatch.apply_patch(js, resp.patch) == reference_default(js)
