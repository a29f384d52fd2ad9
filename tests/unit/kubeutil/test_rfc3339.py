"""kubeutil.rfc3339: the API's timestamps (metav1.Time, MicroTime), garbage as unset."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kubeutil.rfc3339 import parse_rfc3339


def test_api_timestamps() -> None:
    assert parse_rfc3339("2024-05-01T10:00:00Z") == datetime(2024, 5, 1, 10, tzinfo=UTC)
    micro = parse_rfc3339("2024-05-01T10:00:00.123456Z")
    assert micro is not None and micro.microsecond == 123456
    offset = parse_rfc3339("2024-05-01T12:00:00+02:00")
    assert (
        offset is not None
        and offset.timestamp() == datetime(2024, 5, 1, 10, tzinfo=UTC).timestamp()
    )


@pytest.mark.parametrize("value", [None, "", "yesterday", 0, "2024-13-01T00:00:00Z"])
def test_empty_or_invalid_is_unset(value: object) -> None:
    assert parse_rfc3339(value) is None
