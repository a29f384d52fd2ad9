"""The event loop the DNS servers run on: a thread of its own beside the API server's loop.

A loaded API server (a large list, a burst of writes, admission work) holds its loop for
as long as each step takes; cluster DNS sharing that loop would stop answering for as long,
and pods' lookups would time out. The servers run here instead; the record table they read
is still fed on the API server's loop, under the feed's lock.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["LoopThread"]

T = TypeVar("T")


class LoopThread:
    """An asyncio loop running in a daemon thread; `run` awaits a coroutine on it."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` on this thread's loop and wait for its result from the caller's loop."""
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))

    def stop(self) -> None:
        """Stop the loop and wait for the thread (what runs on it must be stopped first)."""
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join()
