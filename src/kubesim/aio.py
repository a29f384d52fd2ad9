"""asyncio helpers shared by the simulated components."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from typing import Any


async def cancel_and_wait(tasks: Iterable[asyncio.Task[Any] | None]) -> None:
    """Cancel every task, then wait for each to finish, swallowing their cancellation.

    Every component stops its background tasks this way: all are cancelled first so none
    keeps working while another is awaited, and a task that already ended is harmless.
    """
    pending = [t for t in tasks if t is not None]
    for task in pending:
        task.cancel()
    for task in pending:
        with contextlib.suppress(asyncio.CancelledError):
            await task
