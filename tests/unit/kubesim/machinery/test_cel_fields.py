"""Validation converts to CEL only the fields a node's rules select.

A rule on a JobSet's `spec` that reads `startupPolicy` and `replicatedJobs` must not convert
thousands of failure-policy rules to CEL values: converting them was most of a large create's
cost. `fields_selected` finds what an expression reads of `self` and
`oldSelf`; every other use of the variable reads it whole, and then the whole value is
converted, as before.
"""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.machinery.cel import compile_expression
from kubesim.machinery.schema import validate
from kubesim.machinery.schema.validate import Run
from tests.unit.kubesim.machinery.test_schema import rule_schema


@pytest.mark.parametrize(
    ("expression", "self_fields", "old_fields"),
    [
        (
            "!(has(self.startupPolicy) && self.startupPolicy.startupPolicyOrder == 'InOrder'"
            " && self.replicatedJobs.exists(x, has(x.dependsOn)))",
            {"startupPolicy", "replicatedJobs"},
            set(),
        ),
        ("self.a == oldSelf.a", {"a"}, {"a"}),
        ("self.x.y + self.z > 0", {"x", "z"}, set()),
        ("self.templates.all(t, !has(t.metadata.namespace))", {"templates"}, set()),
        ("1 == 1", set(), set()),
        # Whole-value uses: no field set.
        ("self == oldSelf", None, None),
        ("size(self) > 1", None, set()),
        ('self["a"] == 1', None, set()),
        ('self.all(k, k != "")', None, set()),
        ("self.a.all(self, self > 1)", None, set()),  # a macro variable named self
        ("has(self.a) && oldSelf == self", None, None),
    ],
    ids=[
        "!(has(self.startupPolicy) && self.startupPolicy.startupPolicyOrder == 'InOrder' && self.replicatedJobs.exists(x, has(x.dependsOn)))",
        "self.a == oldSelf.a",
        "self.x.y + self.z > 0",
        "self.templates.all(t, !has(t.metadata.namespace))",
        "1 == 1",
        "self == oldSelf",
        "size(self) > 1",
        'self["a"] == 1',
        'self.all(k, k != "")',
        "self.a.all(self, self > 1)",
        "has(self.a) && oldSelf == self",
    ],
)
def test_fields_selected(
    expression: str, self_fields: set[str] | None, old_fields: set[str] | None
) -> None:
    read = compile_expression(expression).fields_read
    assert read["self"] == (None if self_fields is None else frozenset(self_fields))
    assert read["oldSelf"] == (None if old_fields is None else frozenset(old_fields))


def _spec_node(rules: list[dict[str, Any]]) -> Any:
    compiled = rule_schema(
        rules,
        a={"type": "integer"},
        b={"type": "array", "items": {"type": "string"}},
        namespace={"type": "string"},  # a CEL reserved word: __namespace__
    )
    return compiled, compiled.root.properties["spec"]  # type: ignore[index]


SPEC = {"a": 1, "b": ["x"] * 1000, "namespace": "n"}


def test_only_selected_fields_are_converted() -> None:
    _, node = _spec_node([{"rule": "self.a > 0"}])
    assert node.rule_fields == frozenset({"a"})
    converted = Run().to_cel_fields(SPEC, node)
    assert set(map(str, converted)) == {"a"}


def test_message_expression_and_reserved_names_count() -> None:
    _, node = _spec_node(
        [{"rule": "self.a > 0", "messageExpression": "'ns ' + self.__namespace__"}]
    )
    assert node.rule_fields == frozenset({"a", "__namespace__"})
    converted = Run().to_cel_fields(SPEC, node)
    assert {"a", "__namespace__"} <= set(map(str, converted))
    assert "b" not in set(map(str, converted))


def test_a_rule_reading_the_whole_value_converts_all_of_it() -> None:
    _, node = _spec_node([{"rule": "self.a > 0"}, {"rule": "size(self) == 3"}])
    assert node.rule_fields is None
    converted = Run().to_cel_fields(SPEC, node)
    assert set(map(str, converted)) >= {"a", "b"}


@pytest.mark.parametrize(
    ("rules", "spec", "errors"),
    [
        ([{"rule": "self.a > 1", "message": "a too small"}], SPEC, ["a too small"]),
        ([{"rule": "self.a > 0", "message": "a too small"}], SPEC, []),
        ([{"rule": "size(self) == 2", "message": "three fields"}], SPEC, ["three fields"]),
        (
            [{"rule": "!has(self.b) || self.a > 1", "message": "b needs a > 1"}],
            SPEC,
            ["b needs a > 1"],
        ),
        (
            [{"rule": "!has(self.b) || self.a > 1", "message": "b needs a > 1"}],
            {"a": 1},
            [],
        ),
        (
            [{"rule": "self.a == 1", "messageExpression": "'ns ' + self.__namespace__"}],
            {**SPEC, "a": 2},
            ["ns n"],
        ),
    ],
    ids=[
        "a selected field fails",
        "a selected field passes",
        "a rule that reads self whole",
        "has() of a present field",
        "has() of an absent field",
        "messageExpression reads a field",
    ],
)
def test_rules_give_the_same_results(
    rules: list[dict[str, Any]], spec: dict[str, Any], errors: list[str]
) -> None:
    compiled, _ = _spec_node(rules)
    causes = validate({"spec": spec}, compiled, None)
    assert [c.message.rsplit(": ", 1)[-1] for c in causes] == errors
