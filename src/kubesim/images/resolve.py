"""The one call a runtime makes for a container of a loaded image: `process_of`.

It reads the image's `/etc/passwd` and `/etc/group` inside its root (`rootfiles.py`) and
hands them, with the container's spec and the image's config, to the pure
`process.container_process`: argv, environment, working directory and identity as kubelet
and containerd make them, or `ProcessError` with the waiting reason and message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubesim.images.process import ContainerProcess, container_process
from kubesim.images.rootfiles import read_in_root
from kubesim.images.types import ImageRecord

__all__ = ["process_of"]


def process_of(
    container: Mapping[str, Any],
    record: ImageRecord,
    *,
    env: Sequence[tuple[str, str]] = (),
    hostname: str = "",
    run_as_user: int | None = None,
    run_as_group: int | None = None,
    supplemental_groups: Sequence[int] = (),
) -> ContainerProcess:
    """`container` (its `command`, `args` and `workingDir` already `$(VAR)`-expanded) started
    from the loaded image `record`; see `process.container_process`."""
    return container_process(
        container,
        record.config,
        env=env,
        hostname=hostname,
        run_as_user=run_as_user,
        run_as_group=run_as_group,
        supplemental_groups=supplemental_groups,
        passwd=read_in_root(record.rootfs, "/etc/passwd"),
        group=read_in_root(record.rootfs, "/etc/group"),
    )
