"""asyncio helpers for the controller's runtime and the simulated cluster's components."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

__all__ = ["cancel_and_wait"]


async def cancel_and_wait(*tasks: asyncio.Task[Any] | None) -> None:
    """Cancel every task, then wait for each to finish, swallowing their cancellation.

    Every component of both sides stops its background tasks this way. All are cancelled
    first so none keeps working while another is awaited; None and a task that already
    ended are harmless. An exception other than the cancellation propagates.
    """
    pending = [t for t in tasks if t is not None]
    for task in pending:
        task.cancel()
    for task in pending:
        with contextlib.suppress(asyncio.CancelledError):
            await task
