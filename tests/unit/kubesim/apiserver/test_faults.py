"""Fault plans: parsing and validation, seeded determinism, probabilities, outage windows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubesim.apiserver.faults import NO_FAULT, Decision, FaultConfigError, FaultPlan, load_faults

PLAN: dict[str, Any] = {
    "seed": 7,
    "rules": [
        {
            "name": "flaky-writes",
            "match": {"verb": ["create", "update", "patch"], "resource": ["pods", "batch/jobs"]},
            "error": {"code": 503, "probability": 0.3},
        },
        {
            "match": {"verb": "list", "resource": "*"},
            "error": {"code": 429, "probability": 0.2, "retryAfter": 3},
            "latency": {"min": 0.01, "max": 0.05, "probability": 0.5},
        },
        {
            "match": {"verb": "watch"},
            "watchCut": {"perEventProbability": 0.1},
            "gone": {"probability": 0.25},
        },
    ],
}


def _run(plan: FaultPlan, n: int = 300) -> list[Decision]:
    plan.arm(0.0)
    calls = [
        ("create", "", "pods", "default"),
        ("update", "batch", "jobs", "ns1"),
        ("list", "", "configmaps", "default"),
        ("watch", "", "pods", ""),
        ("get", "", "pods", "default"),
    ]
    return [plan.decide(*calls[i % len(calls)], now=float(i)) for i in range(n)]


def _summary(decisions: list[Decision]) -> list[tuple[Any, ...]]:
    return [
        (d.error.code if d.error else None, d.delay, d.watch_cut_after, d.gone, d.reset_connection)
        for d in decisions
    ]


# ------------------------------------------------------------------ determinism


def test_same_seed_same_decisions() -> None:
    a = _summary(_run(FaultPlan.from_dict(PLAN)))
    b = _summary(_run(FaultPlan.from_dict(PLAN)))
    assert a == b
    assert any(x != (None, 0.0, None, False, False) for x in a)


def test_different_seed_different_decisions() -> None:
    a = _summary(_run(FaultPlan.from_dict(PLAN)))
    b = _summary(_run(FaultPlan.from_dict(PLAN, seed=8)))
    assert a != b


def test_seed_argument_overrides_file_seed() -> None:
    a = _summary(_run(FaultPlan.from_dict(PLAN, seed=7)))
    b = _summary(_run(FaultPlan.from_dict({**PLAN, "seed": 99}, seed=7)))
    assert a == b


def test_rule_decisions_do_not_depend_on_other_rules() -> None:
    """Adding a rule, and traffic that only it matches, must not reshuffle the decisions of
    the existing rules for the requests they match."""
    base = FaultPlan.from_dict(PLAN)
    extended = FaultPlan.from_dict(
        {
            **PLAN,
            "rules": [
                *PLAN["rules"],
                {"match": {"resource": "secrets"}, "error": {"code": 500, "probability": 0.5}},
            ],
        }
    )
    expected = _summary(_run(base))
    extended.arm(0.0)
    calls = [
        ("create", "", "pods", "default"),
        ("update", "batch", "jobs", "ns1"),
        ("list", "", "configmaps", "default"),
        ("watch", "", "pods", ""),
        ("get", "", "pods", "default"),
    ]
    got: list[Decision] = []
    for i in range(len(expected)):
        extended.decide("get", "", "secrets", "default", now=float(i))
        got.append(extended.decide(*calls[i % len(calls)], now=float(i)))
    assert _summary(got) == expected
    assert extended.counts.get("error_500", 0) > 0


# ------------------------------------------------------------------ probabilities


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_error_probability_roughly_right(p: float) -> None:
    plan = FaultPlan.from_dict({"rules": [{"error": {"code": 500, "probability": p}}]}, seed=1)
    n = 4000
    errors = sum(plan.decide("get", "", "pods", "ns", 0.0).error is not None for _ in range(n))
    assert abs(errors / n - p) < 0.03
    assert plan.counts == {"error_500": errors}


def test_probability_zero_and_one() -> None:
    never = FaultPlan.from_dict({"rules": [{"error": {"code": 500, "probability": 0}}]})
    always = FaultPlan.from_dict({"rules": [{"error": {"code": 500}}]})
    assert all(never.decide("get", "", "pods", "", 0.0) is NO_FAULT for _ in range(200))
    assert all(always.decide("get", "", "pods", "", 0.0).error for _ in range(200))


def test_per_event_watch_cut_has_geometric_mean() -> None:
    plan = FaultPlan.from_dict({"rules": [{"watchCut": {"perEventProbability": 0.1}}]}, seed=3)
    cuts = [plan.decide("watch", "", "pods", "", 0.0).watch_cut_after for _ in range(4000)]
    assert all(c is not None and c >= 1 for c in cuts)
    mean = sum(c for c in cuts if c is not None) / len(cuts)
    assert 9.0 < mean < 11.0  # 1 / 0.1


def test_after_events_watch_cut() -> None:
    plan = FaultPlan.from_dict(
        {"rules": [{"watchCut": {"afterEvents": 5, "probability": 0.5}}]}, seed=3
    )
    cuts = [plan.decide("watch", "", "pods", "", 0.0).watch_cut_after for _ in range(2000)]
    assert set(cuts) == {5, None}
    assert abs(cuts.count(5) / len(cuts) - 0.5) < 0.05
    # Watch faults never touch other verbs.
    assert plan.decide("list", "", "pods", "", 0.0) is NO_FAULT


def test_latency_fixed_and_range() -> None:
    fixed = FaultPlan.from_dict({"rules": [{"latency": {"seconds": 0.25}}]})
    assert fixed.decide("get", "", "pods", "", 0.0).delay == 0.25
    ranged = FaultPlan.from_dict({"rules": [{"latency": {"min": 0.1, "max": 0.2}}]}, seed=5)
    delays = [ranged.decide("get", "", "pods", "", 0.0).delay for _ in range(500)]
    assert all(0.1 <= d <= 0.2 for d in delays)
    assert max(delays) - min(delays) > 0.05


def test_latencies_add_up_and_first_error_wins() -> None:
    plan = FaultPlan.from_dict(
        {
            "rules": [
                {"latency": {"seconds": 0.1}, "error": {"code": 409}},
                {"latency": {"seconds": 0.2}, "error": {"code": 500}},
            ]
        }
    )
    d = plan.decide("update", "batch", "jobs", "ns", 0.0, name="j1")
    assert d.delay == pytest.approx(0.3)
    assert d.error is not None
    assert d.error.code == 409
    assert d.error.reason == "Conflict"
    assert d.error.message.startswith('Operation cannot be fulfilled on jobs.batch "j1": ')


def test_error_objects_look_real() -> None:
    plan = FaultPlan.from_dict({"rules": [{"error": {"code": 429, "retryAfter": 4}}]})
    err = plan.decide("list", "", "pods", "", 0.0).error
    assert err is not None
    assert (err.code, err.reason, err.retry_after) == (429, "TooManyRequests", 4)
    assert err.headers == {"Retry-After": "4"}
    assert err.to_status()["details"]["retryAfterSeconds"] == 4
    default_429 = FaultPlan.from_dict({"rules": [{"error": {"code": 429}}]})
    err = default_429.decide("list", "", "pods", "", 0.0).error
    assert err is not None and err.retry_after == 1
    plan = FaultPlan.from_dict({"rules": [{"error": {"code": 500, "message": "boom"}}]})
    err = plan.decide("get", "", "pods", "", 0.0).error
    assert err is not None and (err.reason, err.message) == ("InternalError", "boom")


# ------------------------------------------------------------------ matching


@pytest.mark.parametrize(
    ("match", "request_", "expected"),
    [
        ({"verb": "create"}, ("create", "", "pods", "a"), True),
        ({"verb": "create"}, ("delete", "", "pods", "a"), False),
        ({"verb": "*"}, ("deletecollection", "", "pods", "a"), True),
        ({"resource": "jobs"}, ("get", "batch", "jobs", "a"), True),  # bare plural: any group
        ({"resource": "batch/jobs"}, ("get", "other.io", "jobs", "a"), False),
        ({"resource": "core/pods"}, ("get", "", "pods", "a"), True),
        ({"resource": "core/pods"}, ("get", "x.io", "pods", "a"), False),
        ({"resource": "batch/*"}, ("get", "batch", "cronjobs", "a"), True),
        ({"resource": ["pods", "*"]}, ("get", "x", "anything", "a"), True),
        ({"namespace": ["a", "b"]}, ("get", "", "pods", "b"), True),
        ({"namespace": "a"}, ("get", "", "nodes", ""), False),
    ],
    ids=[
        "verb matches",
        "verb differs",
        "any verb",
        "bare plural in any group",
        "group differs",
        "core group",
        "core plural in another group",
        "any resource of a group",
        "list with a wildcard",
        "namespace in a list",
        "namespaced rule, cluster-scoped request",
    ],
)
def test_match(match: dict[str, Any], request_: tuple[str, str, str, str], expected: bool) -> None:
    plan = FaultPlan.from_dict({"rules": [{"match": match, "error": {"code": 500}}]})
    assert (plan.decide(*request_, now=0.0).error is not None) is expected


# ------------------------------------------------------------------ outage, compaction


def test_outage_window_with_error() -> None:
    plan = FaultPlan.from_dict({"outage": {"start": 10, "duration": 5}})
    plan.arm(100.0)
    assert plan.decide("get", "", "pods", "", 109.9) is NO_FAULT
    for t in (110.0, 112.5, 114.99):
        d = plan.decide("get", "", "pods", "", t)
        assert d.error is not None and d.error.code == 503
        assert not d.reset_connection
    assert plan.decide("get", "", "pods", "", 115.0) is NO_FAULT
    assert plan.counts == {"outage_error": 3}


def test_outage_reset_mode_several_windows_and_match() -> None:
    plan = FaultPlan.from_dict(
        {
            "outage": [
                {"start": 0, "duration": 1, "mode": "reset"},
                {"start": 5, "duration": 1, "match": {"verb": "watch"}},
            ]
        }
    )
    plan.arm(0.0)
    d = plan.decide("create", "", "pods", "", 0.5)
    assert d.reset_connection and d.error is None
    assert plan.decide("create", "", "pods", "", 5.5) is NO_FAULT
    d = plan.decide("watch", "", "pods", "", 5.5)
    assert d.error is not None and d.error.code == 503


def test_outage_arms_on_first_decision() -> None:
    plan = FaultPlan.from_dict({"outage": {"start": 1, "duration": 1}})
    assert plan.decide("get", "", "pods", "", 1000.0) is NO_FAULT
    assert plan.decide("get", "", "pods", "", 1001.5).error is not None


def test_outage_suppresses_rules() -> None:
    plan = FaultPlan.from_dict(
        {"rules": [{"latency": {"seconds": 1}}], "outage": {"start": 0, "duration": 1}}
    )
    plan.arm(0.0)
    assert plan.decide("get", "", "pods", "", 0.5).delay == 0.0
    assert plan.decide("get", "", "pods", "", 1.5).delay == 1.0


def test_compaction_and_record() -> None:
    plan = FaultPlan.from_dict({"compaction": {"everySeconds": 30}})
    assert plan.compaction_interval == 30.0
    assert plan.enabled
    plan.record("compaction")
    plan.record("compaction")
    assert plan.counts == {"compaction": 2}
    assert FaultPlan.from_dict({}).compaction_interval is None
    assert not FaultPlan(0).enabled


def test_empty_plan_injects_nothing() -> None:
    plan = FaultPlan(seed=1)
    assert plan.decide("watch", "", "pods", "", 0.0) is NO_FAULT
    assert NO_FAULT.is_noop


# ------------------------------------------------------------------ files and validation


def test_load_yaml_and_json(tmp_path: Path) -> None:
    y = tmp_path / "faults.yaml"
    y.write_text(
        """
seed: 7
rules:
  - name: flaky-writes
    match: {verb: [create, update, patch], resource: [pods, batch/jobs]}
    error: {code: 503, probability: 0.3}
  - match: {verb: list, resource: "*"}
    error: {code: 429, probability: 0.2, retryAfter: 3}
    latency: {min: 0.01, max: 0.05, probability: 0.5}
  - match: {verb: watch}
    watchCut: {perEventProbability: 0.1}
    gone: {probability: 0.25}
"""
    )
    j = tmp_path / "faults.json"
    j.write_text(json.dumps(PLAN))
    expected = _summary(_run(FaultPlan.from_dict(PLAN)))
    assert _summary(_run(load_faults(y))) == expected
    assert _summary(_run(load_faults(j))) == expected
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert not load_faults(empty).enabled


def test_gone_decision() -> None:
    plan = FaultPlan.from_dict({"rules": [{"gone": {"probability": 1}}]})
    d = plan.decide("watch", "", "pods", "", 0.0)
    assert d.gone and d.error is None
    assert plan.decide("list", "", "pods", "", 0.0) is NO_FAULT
    assert plan.counts == {"gone": 1}


@pytest.mark.parametrize(
    ("doc", "fragment"),
    [
        ({"rule": []}, "rule: unknown key (expected one of: seed, rules, compaction, outage)"),
        ({"seed": "x"}, "seed: expected an integer"),
        ({"rules": {}}, "rules: expected a list"),
        ({"rules": [{"error": {"code": 418}}]}, "rules[0].error.code: 418 is not one of"),
        ({"rules": [{"error": {}}]}, "rules[0].error.code: required"),
        ({"rules": [{"error": {"code": 500, "probability": 1.5}}]}, "probability: must be at most"),
        ({"rules": [{"error": {"code": 500, "probability": True}}]}, "expected a number"),
        ({"rules": [{"error": {"code": 500, "retryAfter": 2}}]}, "retryAfter: only allowed"),
        ({"rules": [{"latncy": {"seconds": 1}}]}, "rules[0].latncy: unknown key"),
        ({"rules": [{"name": "x"}]}, "rules[0]: no action"),
        ({"rules": [{"latency": {"min": 2, "max": 1}}]}, "rules[0].latency.max: must be at least"),
        ({"rules": [{"latency": {"seconds": 1, "max": 1}}]}, "either seconds, or min and max"),
        ({"rules": [{"latency": {"seconds": -1}}]}, "latency.seconds: must be at least 0"),
        ({"rules": [{"watchCut": {"afterEvents": 0}}]}, "watchCut.afterEvents: must be at least 1"),
        ({"rules": [{"watchCut": {}}]}, "needs afterEvents or perEventProbability"),
        (
            {"rules": [{"match": {"verb": "get"}, "gone": {"probability": 1}}]},
            "rules[0].gone: applies only to watch requests",
        ),
        ({"rules": [{"match": {"verb": "fetch"}, "error": {"code": 500}}]}, "unknown verb 'fetch'"),
        ({"rules": [{"match": {"verb": []}, "error": {"code": 500}}]}, "must not be an empty"),
        ({"rules": [{"match": {"resource": "a/b/c"}, "error": {"code": 500}}]}, "not a resource"),
        ({"rules": [{"match": {"kind": "Pod"}, "error": {"code": 500}}]}, "match.kind: unknown"),
        ({"compaction": {"everySeconds": 0}}, "compaction.everySeconds: must be greater than 0"),
        ({"outage": {"start": 1}}, "outage.duration: required"),
        ({"outage": [{"start": 1, "duration": 1, "mode": "x"}]}, "outage[0].mode: 'x' is not"),
        ([1, 2], "expected a mapping, got a list"),
    ],
    ids=[
        "rule: unknown key (expected one of: seed, rules, compaction, outage)",
        "seed: expected an integer",
        "rules: expected a list",
        "rules[0].error.code: 418 is not one of",
        "rules[0].error.code: required",
        "probability: must be at most",
        "expected a number",
        "retryAfter: only allowed",
        "rules[0].latncy: unknown key",
        "rules[0]: no action",
        "rules[0].latency.max: must be at least",
        "either seconds, or min and max",
        "latency.seconds: must be at least 0",
        "watchCut.afterEvents: must be at least 1",
        "needs afterEvents or perEventProbability",
        "rules[0].gone: applies only to watch requests",
        "unknown verb 'fetch'",
        "must not be an empty",
        "not a resource",
        "match.kind: unknown",
        "compaction.everySeconds: must be greater than 0",
        "outage.duration: required",
        "outage[0].mode: 'x' is not",
        "expected a mapping, got a list",
    ],
)
def test_validation_errors_name_the_bad_key(doc: Any, fragment: str) -> None:
    with pytest.raises(FaultConfigError) as info:
        FaultPlan.from_dict(doc, source="faults.yaml")
    assert str(info.value).startswith("faults.yaml: ")
    assert fragment in str(info.value)


def test_bad_files(tmp_path: Path) -> None:
    with pytest.raises(FaultConfigError, match="no such faults file"):
        load_faults(tmp_path / "missing.yaml")
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("rules: [unclosed\n")
    with pytest.raises(FaultConfigError, match=r"bad\.yaml: not valid YAML"):
        load_faults(bad_yaml)
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{nope}")
    with pytest.raises(FaultConfigError, match=r"bad\.json: not valid JSON"):
        load_faults(bad_json)
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("rules:\n  - error: {code: 503, probabilty: 0.1}\n")
    with pytest.raises(FaultConfigError, match=r"wrong\.yaml: rules\[0\]\.error\.probabilty"):
        load_faults(wrong)
