"""Label and field selectors: grammar, semantics and error messages as kube-apiserver has them."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.machinery.errors import ApiError
from kubesim.machinery.selectors import (
    FieldSelector,
    LabelSelector,
    field_selectors_for,
)

# ------------------------------------------------------------------ label selectors: matching


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ("", {}, True),
        ("", None, True),
        ("a=b", {"a": "b"}, True),
        ("a=b", {"a": "c"}, False),
        ("a=b", {}, False),
        ("a==b", {"a": "b"}, True),
        ("a!=b", {"a": "c"}, True),
        ("a!=b", {}, True),  # != matches when the label is absent
        ("a!=b", {"a": "b"}, False),
        ("a in (x,y)", {"a": "y"}, True),
        ("a in (x,y)", {"a": "z"}, False),
        ("a in (x,y)", {}, False),
        ("a notin (x,y)", {"a": "z"}, True),
        ("a notin (x,y)", {}, True),
        ("a notin (x,y)", {"a": "x"}, False),
        ("a", {"a": ""}, True),
        ("a", {"b": "x"}, False),
        ("!a", {"b": "x"}, True),
        ("!a", {"a": "x"}, False),
        ("a=", {"a": ""}, True),  # an empty value is allowed
        ("a=", {}, False),
        ("a in ()", {"a": ""}, True),
        ("a in (,x)", {"a": ""}, True),
        ("a>5", {"a": "6"}, True),
        ("a>5", {"a": "5"}, False),
        ("a>5", {"a": "x"}, False),
        ("a>5", {}, False),
        ("a<5", {"a": "-3"}, True),
        ("in=notin", {"in": "notin"}, True),  # keywords are identifiers where a key/value is due
        ("x in (in,notin)", {"x": "notin"}, True),
        ("  a = b ,  c  ", {"a": "b", "c": "1"}, True),
        ("example.com/app=web", {"example.com/app": "web"}, True),
    ],
    ids=[
        "empty vs {}",
        "empty vs None",
        "a=b vs {'a': 'b'}",
        "a=b vs {'a': 'c'}",
        "a=b vs {}",
        "a==b vs {'a': 'b'}",
        "a!=b vs {'a': 'c'}",
        "a!=b vs {}",
        "a!=b vs {'a': 'b'}",
        "a in (x,y) vs {'a': 'y'}",
        "a in (x,y) vs {'a': 'z'}",
        "a in (x,y) vs {}",
        "a notin (x,y) vs {'a': 'z'}",
        "a notin (x,y) vs {}",
        "a notin (x,y) vs {'a': 'x'}",
        "a vs {'a': ''}",
        "a vs {'b': 'x'}",
        "!a vs {'b': 'x'}",
        "!a vs {'a': 'x'}",
        "a= vs {'a': ''}",
        "a= vs {}",
        "a in () vs {'a': ''}",
        "a in (,x) vs {'a': ''}",
        "a>5 vs {'a': '6'}",
        "a>5 vs {'a': '5'}",
        "a>5 vs {'a': 'x'}",
        "a>5 vs {}",
        "a<5 vs {'a': '-3'}",
        "in=notin vs {'in': 'notin'}",
        "x in (in,notin) vs {'x': 'notin'}",
        "  a = b ,  c   vs {'a': 'b', 'c': '1'}",
        "example.com/app=web vs {'example.com/app': 'web'}",
    ],
)
def test_label_selector_matches(
    selector: str, labels: dict[str, str] | None, expected: bool
) -> None:
    assert LabelSelector.parse(selector).matches(labels) is expected


def test_label_selector_combined_requirements_all_must_hold() -> None:
    sel = LabelSelector.parse("a=b,c!=d,e in (x,y),f notin (z),g,!h")
    base = {"a": "b", "e": "x", "g": "1"}
    assert sel.matches(base)
    assert not sel.matches({**base, "c": "d"})
    assert not sel.matches({**base, "f": "z"})
    assert not sel.matches({**base, "h": "1"})
    assert not sel.matches({k: v for k, v in base.items() if k != "g"})
    assert not sel.matches({**base, "e": "q"})


def test_label_selector_string_form_is_sorted_and_reparsable() -> None:
    sel = LabelSelector.parse("z=1,a in (y,x),!m,k")
    assert str(sel) == "a in (x,y),k,!m,z=1"
    assert LabelSelector.parse(str(sel)) == sel


def test_label_selector_empty() -> None:
    assert LabelSelector.parse("").empty()
    assert LabelSelector.parse("   ").empty()
    assert not LabelSelector.parse("a").empty()
    assert not LabelSelector.nothing().empty()
    assert not LabelSelector.nothing().matches({})


# ------------------------------------------------------------------ label selectors: errors


def _parse_error(s: str) -> ApiError:
    with pytest.raises(ApiError) as info:
        LabelSelector.parse(s)
    assert info.value.code == 400
    assert info.value.reason == "BadRequest"
    return info.value


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
        ("a=b c", "found 'c', expected: ',' or 'end of string'"),
        ("a=b,", "found '', expected: identifier after ','"),
        ("=a", "found '=', expected: !, identifier, or 'end of string'"),
        ("a in x", "unable to parse requirement: found 'x' expected: '('"),
        ("a in (x", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("a in (x y)", "unable to parse requirement: found 'y', expected: ',' or ')'"),
        ("a=!b", "unable to parse requirement: found '!', expected: identifier"),
        (
            "a>x",
            'unable to parse requirement: values[0]: Invalid value: "x": '
            "for 'Gt', 'Lt' operators, the value must be an integer",
        ),
    ],
    ids=["a b", "a=b c", "a=b,", "=a", "a in x", "a in (x", "a in (x y)", "a=!b", "a>x"],
)
def test_label_selector_syntax_errors(selector: str, message: str) -> None:
    assert _parse_error(selector).message == message


def test_label_selector_rejects_bad_key_with_upstream_message() -> None:
    msg = _parse_error("-a=b").message
    assert msg.startswith('unable to parse requirement: <nil>: Invalid value: "-a": name part ')
    assert "must start and end with an alphanumeric character" in msg
    assert "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used" in msg


def test_label_selector_rejects_bad_prefix_and_long_name() -> None:
    assert "prefix part" in _parse_error("Example.COM/app=x").message
    assert "name part must be no more than 63 characters" in _parse_error("a" * 64).message
    assert "a qualified name" in _parse_error("a/b/c").message


def test_label_selector_rejects_bad_value() -> None:
    msg = _parse_error("app=-web").message
    assert msg.startswith('unable to parse requirement: values[0][app]: Invalid value: "-web": ')
    assert "a valid label must be an empty string" in msg
    assert "must be no more than 63 characters" in _parse_error("app=" + "v" * 64).message


# ------------------------------------------------------------------ metav1.LabelSelector


def test_from_label_selector() -> None:
    sel = LabelSelector.from_label_selector(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["a", "b"]},
                {"key": "env", "operator": "NotIn", "values": ["prod"]},
                {"key": "owner", "operator": "Exists"},
                {"key": "legacy", "operator": "DoesNotExist"},
            ],
        }
    )
    ok = {"app": "web", "tier": "b", "owner": "me"}
    assert sel.matches(ok)
    assert not sel.matches({**ok, "app": "db"})
    assert not sel.matches({**ok, "tier": "c"})
    assert not sel.matches({**ok, "env": "prod"})
    assert not sel.matches({k: v for k, v in ok.items() if k != "owner"})
    assert not sel.matches({**ok, "legacy": ""})


def test_from_label_selector_nil_and_empty() -> None:
    assert not LabelSelector.from_label_selector(None).matches({"a": "b"})
    assert LabelSelector.from_label_selector({}).matches({"a": "b"})
    assert LabelSelector.from_label_selector({"matchLabels": {}}).empty()


@pytest.mark.parametrize(
    ("sel", "fragment"),
    [
        ({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}, "not a valid"),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}, "can't be empty"),
        (
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
            "values set must be empty",
        ),
        ({"matchLabels": {"bad key": "x"}}, 'key: Invalid value: "bad key"'),
        ({"matchLabels": {"a": "bad value"}}, 'values[0][a]: Invalid value: "bad value"'),
    ],
    ids=[
        "not a valid",
        "can't be empty",
        "values set must be empty",
        'key: Invalid value: "bad key"',
        'values[0][a]: Invalid value: "bad value"',
    ],
)
def test_from_label_selector_errors(sel: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ApiError) as info:
        LabelSelector.from_label_selector(sel)
    assert info.value.code == 400
    assert fragment in info.value.message


# ------------------------------------------------------------------ field selectors


POD: dict[str, Any] = {
    "metadata": {"name": "p1", "namespace": "ns1"},
    "spec": {"nodeName": "node-a", "restartPolicy": "Never"},
    "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.7"}]},
}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("", True),
        ("metadata.name=p1", True),
        ("metadata.name=p2", False),
        ("metadata.namespace==ns1", True),
        ("spec.nodeName!=", True),  # "scheduled pods", as kubelets and kubectl ask
        ("spec.nodeName=", False),
        ("status.phase==Running,spec.nodeName=node-a", True),
        ("status.phase!=Running", False),
        ("spec.hostNetwork=false", True),  # absent bool reads as "false", as upstream
        ("spec.hostNetwork=true", False),
        ("status.podIP=10.0.0.7", True),  # from podIPs when podIP is absent
        ("spec.schedulerName=", True),  # missing string field compares as ""
    ],
    ids=[
        "''",
        "metadata.name=p1",
        "metadata.name=p2",
        "metadata.namespace==ns1",
        "spec.nodeName!=",
        "spec.nodeName=",
        "status.phase==Running,spec.nodeName=node-a",
        "status.phase!=Running",
        "spec.hostNetwork=false",
        "spec.hostNetwork=true",
        "status.podIP=10.0.0.7",
        "spec.schedulerName=",
    ],
)
def test_field_selector_on_pods(selector: str, expected: bool) -> None:
    fs = FieldSelector.parse(selector, field_selectors_for("", "pods"))
    assert fs.matches(POD) is expected


def test_field_selector_unsupported_field() -> None:
    with pytest.raises(ApiError) as info:
        FieldSelector.parse("spec.foo=bar", field_selectors_for("", "pods"))
    assert info.value.code == 400
    assert info.value.message == "field label not supported: spec.foo"


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("metadata.name", "invalid selector: 'metadata.name'; can't understand 'metadata.name'"),
        ("metadata.name=a\\x", "invalid field selector: invalid escape sequence: \\x"),
        ("metadata.name=a=b", "invalid field selector: unescaped character in value: 61"),
    ],
    ids=["metadata.name", "metadata.name=a\\x", "metadata.name=a=b"],
)
def test_field_selector_syntax_errors(selector: str, message: str) -> None:
    with pytest.raises(ApiError) as info:
        FieldSelector.parse(selector, {"metadata.name"})
    assert info.value.code == 400
    assert info.value.message == message


def test_field_selector_escapes() -> None:
    fs = FieldSelector.parse(r"metadata.name=a\,b\=c", {"metadata.name"})
    assert fs.exact("metadata.name") == "a,b=c"
    assert fs.matches({"metadata": {"name": "a,b=c"}})


def test_field_selector_exact_for_index_lookups() -> None:
    fs = FieldSelector.parse("metadata.name=x,spec.nodeName!=n", field_selectors_for("", "pods"))
    assert fs.exact("metadata.name") == "x"
    assert fs.exact("spec.nodeName") is None
    assert FieldSelector.parse("", {"metadata.name"}).empty()


def test_field_selectors_for_builtins() -> None:
    pods = field_selectors_for("", "pods")
    assert {"metadata.name", "metadata.namespace", "spec.nodeName", "status.phase"} <= pods
    assert field_selectors_for("core", "Pod") == pods
    assert "type" in field_selectors_for("", "secrets")
    assert "spec.unschedulable" in field_selectors_for("", "nodes")
    assert "status.phase" in field_selectors_for("", "namespaces")
    assert "status.successful" in field_selectors_for("batch", "jobs")
    assert "status.replicas" in field_selectors_for("apps", "replicasets")
    assert "spec.nodeName" not in field_selectors_for("", "secrets")
    assert "regarding.name" in field_selectors_for("events.k8s.io", "events")
    assert "involvedObject.name" not in field_selectors_for("events.k8s.io", "events")
    # A custom resource: metadata only, unless the CRD declares selectableFields.
    assert set(field_selectors_for("jobset.x-k8s.io", "jobsets")) == {
        "metadata.name",
        "metadata.namespace",
    }
    assert "spec.color" in field_selectors_for("example.com", "widgets", [".spec.color"])


def test_field_selector_computed_fields() -> None:
    job = {"metadata": {"name": "j"}, "status": {}}
    fields = field_selectors_for("batch", "jobs")
    assert FieldSelector.parse("status.successful=0", fields).matches(job)
    assert FieldSelector.parse("status.successful=3", fields).matches({"status": {"succeeded": 3}})

    node_fields = field_selectors_for("", "nodes")
    assert FieldSelector.parse("spec.unschedulable=false", node_fields).matches({"spec": {}})
    assert FieldSelector.parse("spec.unschedulable=true", node_fields).matches(
        {"spec": {"unschedulable": True}}
    )


def test_field_selector_events() -> None:
    event = {
        "metadata": {"name": "e1", "namespace": "ns"},
        "involvedObject": {"kind": "Pod", "name": "p1", "uid": "u-1"},
        "reason": "Scheduled",
        "type": "Normal",
        "reportingComponent": "default-scheduler",
    }
    core = field_selectors_for("", "events")
    for sel in (
        "involvedObject.kind=Pod,involvedObject.name=p1",
        "involvedObject.uid=u-1",
        "reason=Scheduled,type=Normal",
        "source=default-scheduler",  # falls back to the reporting controller
        "reportingComponent=default-scheduler",
    ):
        assert FieldSelector.parse(sel, core).matches(event), sel
    assert not FieldSelector.parse("involvedObject.name=p2", core).matches(event)
    assert FieldSelector.parse("source=kubelet", core).matches({"source": {"component": "kubelet"}})

    new_style = {
        "metadata": {"name": "e2", "namespace": "ns"},
        "regarding": {"kind": "Job", "name": "j1"},
        "reportingController": "job-controller",
    }
    ev = field_selectors_for("events.k8s.io", "events")
    assert FieldSelector.parse("regarding.name=j1,regarding.kind=Job", ev).matches(new_style)
    assert FieldSelector.parse("reportingController=job-controller", ev).matches(new_style)
    assert not FieldSelector.parse("regarding.name=j2", ev).matches(new_style)


def test_field_selector_crd_selectable_fields_stringify_scalars() -> None:
    fields = field_selectors_for("example.com", "widgets", [".spec.replicas", ".spec.enabled"])
    obj = {"metadata": {"name": "w"}, "spec": {"replicas": 3, "enabled": True}}
    assert FieldSelector.parse("spec.replicas=3,spec.enabled=true", fields).matches(obj)
    assert not FieldSelector.parse("spec.replicas=4", fields).matches(obj)


def test_field_selector_plain_set_uses_dotted_paths() -> None:
    fs = FieldSelector.parse("spec.a.b=x", {"spec.a.b"})
    assert fs.matches({"spec": {"a": {"b": "x"}}})
    assert not fs.matches({"spec": {"a": "x"}})
    assert not fs.matches({})
