"""Helpers shared by the runtime integration tests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


async def eventually(
    check: Callable[[], T | Awaitable[T]], within: float = 20.0, interval: float = 0.05
) -> T:
    """Poll `check` until it returns something truthy; fail with its last value after `within`."""
    deadline = time.monotonic() + within
    last: object = None
    while True:
        result = check()
        if asyncio.iscoroutine(result) or isinstance(result, Awaitable):
            result = await result
        if result:
            return result  # type: ignore[return-value]
        last = result
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {within}s (last: {last!r})")
        await asyncio.sleep(interval)
