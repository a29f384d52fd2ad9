"""asyncio helpers of the controller runtime (the simulator's twin is `kubesim/aio.py`: the
import contracts keep the two packages from sharing code)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

__all__ = ["cancel_and_wait"]


async def cancel_and_wait(*tasks: asyncio.Task[Any] | None) -> None:
    """Cancel every task, then wait for each to finish, swallowing their cancellation.

    All are cancelled first so none keeps working while another is awaited; None and a task
    that already ended are harmless. An exception other than the cancellation propagates.
    """
    pending = [t for t in tasks if t is not None]
    for task in pending:
        task.cancel()
    for task in pending:
        with contextlib.suppress(asyncio.CancelledError):
            await task
