"""`pods/log` for real containers (`--run-image`): one log file per container instance.

`<sandbox>/logs/<container>/<restarts>.log` holds an instance's output; the newest is the
current one, the one before it is `--previous`. `log_response` answers `pods/log` with
`previous`, `follow` (until the instance ends or is replaced), `tailLines`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, BinaryIO, Final

import structlog
from aiohttp import web

from kubesim.machinery.errors import ApiError

__all__ = ["instance_logs", "log_response"]

log = structlog.get_logger("sim.kubelet")

FOLLOW_POLL: Final = 0.2


def instance_logs(directory: Path) -> list[Path] | None:
    """A container's instance logs, oldest first; None when it has none."""
    if not directory.is_dir():
        return None
    return sorted(directory.glob("*.log"), key=lambda p: int(p.stem))


def _tail(data: bytes, lines: str | None) -> bytes:
    if lines is None:
        return data
    n = int(lines)
    return b"".join(data.splitlines(keepends=True)[-n:]) if n > 0 else b""


async def log_response(
    request: web.Request,
    files: list[Path],
    pod: Mapping[str, Any],
    container: str,
    ended: Callable[[Path], bool],
) -> web.StreamResponse:
    """Answer `pods/log` from the instance logs `files`; `ended(path)` tells a follow when
    the instance writing `path` has ended (or been replaced)."""
    q = request.query
    previous = q.get("previous", "").lower() in ("true", "1")
    if previous:
        if len(files) < 2:
            raise ApiError(
                400,
                "BadRequest",
                f'previous terminated container "{container}" in pod "{pod["metadata"]["name"]}" not found',
            )
        path = files[-2]
    else:
        path = files[-1]
    follow = q.get("follow", "").lower() in ("true", "1") and not previous
    if not follow:
        return web.Response(
            body=_tail(path.read_bytes(), q.get("tailLines")), content_type="text/plain"
        )
    # The file stays open for the whole follow: the pod's directory is removed as soon as the
    # pod object is deleted, which can be right after the container exits, before the last
    # lines were sent; an open file is still readable after it is unlinked.
    f = await asyncio.to_thread(path.open, "rb")
    resp = web.StreamResponse(headers={"Content-Type": "text/plain"})
    with f:
        await resp.prepare(request)
        try:
            await _follow(request, resp, f, _tail(f.read(), q.get("tailLines")), path, ended)
            await resp.write_eof()
        except ConnectionResetError:  # the client went away: nothing is left to answer
            log.debug("log follow ended by the client", path=str(path))
    return resp


async def _follow(
    request: web.Request,
    resp: web.StreamResponse,
    f: BinaryIO,
    first: bytes,
    path: Path,
    ended: Callable[[Path], bool],
) -> None:
    """Write `first`, then what the instance adds to `f`, until it ends or the client goes."""
    await resp.write(first)
    while request.transport is not None and not request.transport.is_closing():
        done = ended(path)
        chunk = f.read()
        if chunk:
            await resp.write(chunk)
        elif done:
            return
        else:
            await asyncio.sleep(FOLLOW_POLL)
    raise ConnectionResetError("the client closed the connection")
