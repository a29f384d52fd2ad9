"""kubeutil.aio.cancel_and_wait: every task cancelled before any is awaited."""

from __future__ import annotations

import asyncio

import pytest

from kubeutil.aio import cancel_and_wait


async def test_cancels_all_and_waits() -> None:
    cleaned: list[str] = []

    async def worker(name: str) -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            cleaned.append(name)

    a = asyncio.create_task(worker("a"))
    b = asyncio.create_task(worker("b"))
    await asyncio.sleep(0)
    await cancel_and_wait(a, None, b)
    assert sorted(cleaned) == ["a", "b"]
    assert a.cancelled() and b.cancelled()


async def test_finished_tasks_and_nothing_are_harmless() -> None:
    done = asyncio.create_task(asyncio.sleep(0))
    await done
    await cancel_and_wait(done)
    await cancel_and_wait()


async def test_other_exceptions_propagate() -> None:
    async def fails_on_cancel() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            raise RuntimeError("cleanup failed") from None

    task = asyncio.create_task(fails_on_cancel())
    await asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="cleanup failed"):
        await cancel_and_wait(task)
