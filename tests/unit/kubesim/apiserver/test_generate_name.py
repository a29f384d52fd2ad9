"""generateName: five characters of Kubernetes' suffix alphabet after the prefix, other
ones in a forked child than in its parent."""

from __future__ import annotations

from typing import Any

from kubesim.apiserver.core.objects import set_create_fields
from kubesim.apiserver.registry.catalogue import served_types
from kubesim.apiserver.registry.registry import Registry
from tests.unit.kubesim.forked import in_forked_child

ALPHABET = set("bcdfghjklmnpqrstvwxz2456789")


def _generated(n: int) -> list[str]:
    pods = Registry(served_types()).get("", "v1", "pods")
    assert pods is not None
    names = []
    for _ in range(n):
        meta: dict[str, Any] = {"generateName": "job-0-"}
        set_create_fields(pods, meta)
        names.append(meta["name"])
    return names


def test_generated_names_are_the_prefix_and_five_suffix_characters() -> None:
    names = _generated(2000)
    assert all(n.startswith("job-0-") and len(n) == len("job-0-") + 5 for n in names)
    suffixes = [n[len("job-0-") :] for n in names]
    assert set("".join(suffixes)) == ALPHABET
    assert len(set(suffixes)) > 1990  # 27**5 suffixes: a few repeats at most


def test_a_forked_child_generates_other_names_than_its_parent() -> None:
    child = in_forked_child(lambda: _generated(16))
    parent = _generated(16)
    assert len(child) == 16 and child != parent
