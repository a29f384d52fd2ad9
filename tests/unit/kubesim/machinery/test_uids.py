"""kubesim.machinery.uids: object uids are random version 4 UUIDs, unique per process."""

from __future__ import annotations

import uuid

from kubesim.machinery.uids import BATCH, new_uid
from tests.unit.kubesim.forked import in_forked_child


def test_uids_are_canonical_random_v4_uuids() -> None:
    uids = [new_uid() for _ in range(10 * BATCH + 7)]
    assert len(set(uids)) == len(uids)
    for text in uids:
        parsed = uuid.UUID(text)
        assert (parsed.version, parsed.variant) == (4, uuid.RFC_4122)
        assert str(parsed) == text  # lower-case, dashed: as kube-apiserver prints them
    # every random digit takes every value: nothing but the version and variant is fixed
    digits = {i: {u[i] for u in uids} for i in range(36) if u_is_random(i)}
    assert all(len(seen) == 16 for seen in digits.values())
    assert {u[19] for u in uids} == set("89ab")


def u_is_random(i: int) -> bool:
    return i not in (8, 13, 14, 18, 19, 23)


def test_a_forked_child_draws_other_uids_than_its_parent() -> None:
    new_uid()  # the pool holds uids the child must not hand out again
    child = in_forked_child(lambda: [new_uid() for _ in range(8)])
    parent = [new_uid() for _ in range(8)]
    assert len(child) == 8 and not set(child) & set(parent)
