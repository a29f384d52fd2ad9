"""Object uids: random (version 4) UUIDs, as kube-apiserver gives every object it creates.

`uuid.uuid4()` reads the OS random source once per uid and builds a `UUID` object only to
print it; at tens of thousands of writes a second that is a visible share of a write. Here
one read of the random source serves `BATCH` uids, formatted straight from its hex digits.
"""

from __future__ import annotations

import os
from typing import Final

__all__ = ["BATCH", "new_uid"]

BATCH: Final = 256

# The variant digit (RFC 4122: binary 10xx) for each hex digit of random bits.
_VARIANT: Final = {d: "89ab"[int(d, 16) & 3] for d in "0123456789abcdef"}

_pool: list[str] = []
# A forked child must not hand out the uids its parent still holds.
os.register_at_fork(after_in_child=_pool.clear)


def _fill() -> list[str]:
    digits = os.urandom(16 * BATCH).hex()
    out = []
    for i in range(0, len(digits), 32):
        h = digits[i : i + 32]
        out.append(f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:]}")
    return out


def new_uid() -> str:
    """A new random UUID (version 4, RFC 4122 variant) in its canonical text form."""
    try:
        return _pool.pop()  # atomic: callers on other threads take distinct uids
    except IndexError:
        _pool.extend(_fill())
        return _pool.pop()
