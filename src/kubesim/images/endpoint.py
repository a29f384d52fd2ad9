"""`POST /sim/images`: load an image archive into a running simulator (`jobset sim load-image`).

The request body is the archive itself (`application/x-tar`), streamed to a file under the
store's directory (never held in memory; refused once it would leave less than the store's
reserve free) and loaded as `--load-image` loads at start. The answer lists what was loaded:
`{"images": [{"name": ..., "digest": ...}]}`. Bad archives are `400 BadRequest` with the
store's message. The API server serves it to the admin alone (`system:masters`), as
kind's node-level import needs the node.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Final

from aiohttp import web

from kubesim.images.archive import ArchiveError
from kubesim.images.store import ImageStore
from kubesim.images.unpack import RESERVE
from kubesim.machinery.errors import ApiError

__all__ = ["LOAD_PATH", "load_handler"]

LOAD_PATH: Final = "/sim/images"
CHUNK: Final = 1024 * 1024

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


async def _receive(request: web.Request, store: ImageStore) -> Path:
    """The body, written to a new file under the store (removed by the caller)."""
    fd, name = tempfile.mkstemp(prefix="upload-", suffix=".tar", dir=store.root)
    path = Path(name)
    try:
        with os.fdopen(fd, "wb") as out:
            room = shutil.disk_usage(store.root).free - RESERVE
            written = 0
            async for chunk in request.content.iter_chunked(CHUNK):
                written += len(chunk)
                if written > room:
                    raise ApiError(
                        413,
                        "RequestEntityTooLarge",
                        f"the archive is larger than the {max(room, 0)} bytes free under {store.root}",
                    )
                await asyncio.to_thread(out.write, chunk)
    except BaseException:
        _remove(path)
        raise
    if written == 0:
        _remove(path)
        raise ApiError(400, "BadRequest", "the request body must be an image archive")
    return path


def load_handler(store: ImageStore, runs_images: Callable[[], bool]) -> Handler:
    """The handler of `POST /sim/images` over `store`; `runs_images()` says whether the
    cluster has a runtime that runs loaded images (without one they would never run)."""

    async def handle(request: web.Request) -> web.StreamResponse:
        if not runs_images():
            raise ApiError(
                409,
                "Conflict",
                "this cluster runs no containers of images: start it with --load-image "
                "(or --run-image) to load images into it later",
            )
        await asyncio.to_thread(store.make_dirs)
        path = await _receive(request, store)
        try:
            records = await store.load(path)
        except ArchiveError as exc:
            message = str(exc).replace(str(path), "the archive")
            raise ApiError(400, "BadRequest", message) from None
        finally:
            _remove(path)
        images = [{"name": r.name, "digest": r.digest} for r in records]
        return web.json_response({"images": images})

    return handle
