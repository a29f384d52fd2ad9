"""CEL cost limits as kube-apiserver has them: an evaluation past the per-call limit is
cancelled with cel-go's text, whatever operator would have absorbed an error; the rules of
one object share a budget, and the 422 says which limit stopped validation."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from celpy import celtypes

from kubesim.machinery.cel import (
    COST_LIMIT_MESSAGE,
    PER_CALL_LIMIT,
    CelError,
    CostTracker,
    compile_expression,
)
from kubesim.machinery.schema.compiler import compile_schema

# the module (the package exports its `validate` function under the same name)
schema_validate = importlib.import_module("kubesim.machinery.schema.validate")
CUBIC = 'self.all(a, self.all(b, self.all(c, a + b + c != "")))'


def _strings(n: int) -> celtypes.ListType:
    return celtypes.ListType([celtypes.StringType(f"s{i}") for i in range(n)])


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(CUBIC, id="nested-macros"),
        pytest.param(f"({CUBIC}) || true", id="or-does-not-absorb"),
        pytest.param(
            'self.exists(a, self.exists(b, self.exists(c, a + b + c == "")))', id="exists"
        ),
    ],
)
def test_an_expensive_expression_is_cancelled_at_the_per_call_limit(source: str) -> None:
    tracker = CostTracker()
    with pytest.raises(CelError) as err:
        compile_expression(source).evaluate({"self": _strings(120)}, tracker)
    assert err.value.cost_limit and err.value.message == COST_LIMIT_MESSAGE
    assert tracker.cost == PER_CALL_LIMIT + 1


def test_a_cheap_expression_costs_its_steps_and_passes() -> None:
    tracker = CostTracker()
    program = compile_expression('self.all(a, a != "")')
    assert program.evaluate({"self": _strings(120)}, tracker)
    assert 120 < tracker.cost < 2_000


def test_calls_cost_in_proportion_to_what_they_read() -> None:
    small, large = CostTracker(), CostTracker()
    program = compile_expression("self.contains('z')")
    program.evaluate({"self": celtypes.StringType("a" * 10)}, small)
    program.evaluate({"self": celtypes.StringType("a" * 10_000)}, large)
    assert large.cost - small.cost == 999


def _crd_schema(rules: list[dict[str, Any]]) -> Any:
    return compile_schema(
        {
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "items": {"type": "string"},
                    "x-kubernetes-validations": rules,
                }
            },
        }
    )


def test_a_rule_past_the_per_call_limit_stops_validation_with_kube_apiservers_text() -> None:
    schema = _crd_schema([{"rule": CUBIC, "message": "cubic"}, {"rule": "size(self) < 0"}])
    causes = schema_validate.validate({"items": [f"s{i}" for i in range(120)]}, schema)
    assert [(c.field, c.message) for c in causes] == [
        (
            "items",
            "Invalid value: \"array\": 'operation cancelled: actual cost limit exceeded': no "
            "further validation rules will be run due to call cost exceeds limit for rule: cubic",
        )
    ]


def test_rules_past_the_budget_stop_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    # The real budget (ten per-call limits) takes minutes of Python to spend: a smaller
    # one shows the same accounting.
    monkeypatch.setattr(schema_validate, "RUNTIME_COST_BUDGET", 3_000)
    rule = {"rule": 'self.all(a, a != "")'}
    schema = _crd_schema([rule] * 10)
    causes = schema_validate.validate({"items": [f"s{i}" for i in range(120)]}, schema)
    assert [(c.field, c.message) for c in causes] == [
        (
            "items",
            'Invalid value: "array": validation failed due to running out of cost budget, no '
            "further validation rules will be run",
        )
    ]
