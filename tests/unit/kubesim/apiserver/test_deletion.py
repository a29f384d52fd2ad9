"""DeleteOptions from a DELETE's body and query (`deletion.delete_options`): the wrong types
are kube-apiserver's 400, found by the API fuzzer (tests/integration/sim/test_fuzz_api.py)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.apiserver.core.deletion import delete_options
from kubesim.machinery.errors import ApiError


def test_the_query_overrides_the_body() -> None:
    body = {"propagationPolicy": "Orphan", "gracePeriodSeconds": 5}
    query = {"propagationPolicy": "Foreground", "gracePeriodSeconds": "+0", "orphanDependents": ""}
    assert delete_options(body, query) == {
        "propagationPolicy": "Foreground",
        "gracePeriodSeconds": 0,
        "orphanDependents": True,
    }
    assert delete_options(None, {}) == {}


@pytest.mark.parametrize("body", [[], ["a"], "x", 1, 1.5, True])
def test_a_body_that_is_no_object(body: Any) -> None:
    with pytest.raises(ApiError) as err:
        delete_options(body, {})
    assert (err.value.code, err.value.reason) == (400, "BadRequest")


@pytest.mark.parametrize(
    "body",
    [
        {"gracePeriodSeconds": "30"},
        {"gracePeriodSeconds": True},
        {"gracePeriodSeconds": 1.5},
        {"gracePeriodSeconds": 2**63},
        {"propagationPolicy": 1},
        {"orphanDependents": "true"},
        {"preconditions": []},
        {"preconditions": {"uid": 7}},
        {"dryRun": "All"},
    ],
)
def test_fields_of_the_wrong_type(body: dict[str, Any]) -> None:
    with pytest.raises(ApiError) as err:
        delete_options(body, {})
    assert err.value.code == 400


@pytest.mark.parametrize("value", ["", "abc", "1.5", "1_000", " 1", "1e3", str(2**63)])
def test_a_grace_period_query_go_would_not_parse(value: str) -> None:
    with pytest.raises(ApiError) as err:
        delete_options(None, {"gracePeriodSeconds": value})
    assert err.value.code == 400
    assert "gracePeriodSeconds: strconv.ParseInt" in err.value.message
