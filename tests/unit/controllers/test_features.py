"""--feature-gates parsing: known gates, defaults, and what is refused."""

from __future__ import annotations

import pytest

from jobset.controllers.features import parse_feature_gates


def test_feature_gates() -> None:
    gates = parse_feature_gates("RestartJob=true, ElasticJobSet=false")
    assert gates["RestartJob"] is True and gates["ElasticJobSet"] is False
    assert gates["TLSOptions"] is True
    assert parse_feature_gates("")["RestartJob"] is False
    for bad in ("Nope=true", "RestartJob", "RestartJob=yes", "TLSOptions=false"):
        with pytest.raises(ValueError):
            parse_feature_gates(bad)
