"""Polling until a condition holds: one async `eventually` and one sync `eventually_sync`.

`probe()` is called every `interval` seconds until `check(value)` is true (by default: until
the value is truthy), and that value is returned; after `within` seconds the test fails with
the last value (or the last exception, for exceptions listed in `retry_on`, which count as
"not yet"). The async one accepts a probe that returns a value or an awaitable.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, overload

__all__ = ["eventually", "eventually_sync"]

T = TypeVar("T")

WITHIN = 30.0


def _timed_out(within: float, what: str, check: object, last: object) -> AssertionError:
    waited_for = what or getattr(check, "__name__", repr(check))
    return AssertionError(f"timed out after {within}s waiting for {waited_for}: last {last!r}")


@overload
async def eventually(
    probe: Callable[[], Awaitable[T]],
    check: Callable[[T], object] = ...,
    within: float = ...,
    what: str = ...,
    *,
    interval: float = ...,
    retry_on: tuple[type[BaseException], ...] = ...,
) -> T: ...


@overload
async def eventually(
    probe: Callable[[], T],
    check: Callable[[T], object] = ...,
    within: float = ...,
    what: str = ...,
    *,
    interval: float = ...,
    retry_on: tuple[type[BaseException], ...] = ...,
) -> T: ...


async def eventually(
    probe: Callable[[], Any],
    check: Callable[[Any], object] = bool,
    within: float = WITHIN,
    what: str = "",
    *,
    interval: float = 0.05,
    retry_on: tuple[type[BaseException], ...] = (),
) -> Any:
    """Await `probe()` until `check` holds for its value; return that value."""
    deadline = time.monotonic() + within
    last: Any = None
    while True:
        try:
            value = probe()
            if inspect.isawaitable(value):
                value = await value
            last = value
            if check(value):
                return value
        except retry_on as exc:
            last = exc
        if time.monotonic() > deadline:
            raise _timed_out(within, what, check, last)
        await asyncio.sleep(interval)


def eventually_sync(
    probe: Callable[[], T],
    check: Callable[[T], object] = bool,
    within: float = WITHIN,
    what: str = "",
    *,
    interval: float = 0.1,
    retry_on: tuple[type[BaseException], ...] = (),
) -> T:
    """`eventually` for code without an event loop: `time.sleep` between probes."""
    deadline = time.monotonic() + within
    last: Any = None
    while True:
        try:
            value = probe()
            last = value
            if check(value):
                return value
        except retry_on as exc:
            last = exc
        if time.monotonic() > deadline:
            raise _timed_out(within, what, check, last)
        time.sleep(interval)
