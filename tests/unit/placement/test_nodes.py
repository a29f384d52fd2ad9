"""`placement/nodes.py`: the planner reads quantities exactly as the simulated scheduler does
(through `kubeutil.quantity`, the one parser), and how many pods a node holds."""

from __future__ import annotations

from fractions import Fraction

import pytest

from jobset.placement.nodes import pods_that_fit, quantity
from kubesim.base.resources import resource_units


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", Fraction(1, 2)),
        ("0.1", Fraction(1, 10)),
        (".5", Fraction(1, 2)),
        ("8Gi", Fraction(8 * 2**30)),
        ("1e3", Fraction(1000)),
        ("2E-1", Fraction(1, 5)),
        (" 4 ", Fraction(4)),
        (3, Fraction(3)),
        (1.5, Fraction(3, 2)),
    ],
    ids=[
        "milli",
        "decimal",
        "leading dot",
        "binary suffix",
        "exponent",
        "negative exponent",
        "spaces trimmed",
        "an int",
        "a float",
    ],
)
def test_quantities_are_exact(text: str | int | float, value: Fraction) -> None:
    assert quantity(text) == value


@pytest.mark.parametrize("text", ["", "abc", "1.2.3", "5mi", "1Kb", "1e", True, None])
def test_unreadable_quantities_count_as_nothing(text: object) -> None:
    # The planner must never raise on a Node or template that passed no validation.
    assert quantity(text) == 0


@pytest.mark.parametrize("cpu", ["100m", "1", "1.5", "2500m", "1e1"])
def test_planner_and_scheduler_agree_on_cpu(cpu: str) -> None:
    assert quantity(cpu) * 1000 == resource_units("cpu", cpu)


def test_a_node_holds_as_many_pods_as_its_tightest_resource_allows() -> None:
    node = {"status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
    assert pods_that_fit(node, {"cpu": quantity("1500m"), "memory": quantity("1Gi")}) == 2
    assert pods_that_fit(node, {"memory": quantity("3Gi")}) == 2
    assert pods_that_fit(node, {"example.com/gpu": quantity("1")}) == 0
