"""A pod whose image the runtime's `ImageLookup` finds runs in that image's own root.

The image store (`--load-image`) is built elsewhere; here a lookup of the contract in
`kubesim.images.types` serves one image made on the spot: a root holding only
busybox-static, with a config that has its own Cmd, Env, WorkingDir and User. Its container
runs under runc in an overlay whose lower directory is the image's root: the image's command
and environment apply, what it writes stays in its own upper layer, the image's files and
the host are untouched, and `kubectl exec` enters it. Needs root, as `test_processes.py`.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kubesim.images.types import ImageConfig, ImageRecord
from tests.eventually import eventually
from tests.integration.sim.test_container_root import finished
from tests.integration.sim.test_processes import Env, real_cluster, running

pytestmark = [pytest.mark.kubectl]

IMAGE = "example.com/tiny:v1"
BARE = "example.com/tiny:bare"
NAME = "example.com/tiny:v1"
SCRIPT = "id -u; pwd; echo $GREETING; ls /; echo mine > written; cat /srv/app/written"


class OneImage:
    def __init__(self, record: ImageRecord) -> None:
        self.record = record
        self.asked: list[str] = []

    def lookup(self, reference: str) -> ImageRecord | None:
        self.asked.append(reference)
        if reference == BARE:  # the same root, with neither Entrypoint nor Cmd
            return ImageRecord(BARE, self.record.digest, self.record.rootfs, ImageConfig())
        return self.record if reference == IMAGE else None


def busybox_root(root: Path) -> Path:
    (root / "bin").mkdir(parents=True)
    (root / "srv" / "app").mkdir(parents=True)
    shutil.chown(root / "srv" / "app", 1000, 1000)  # the image's user owns its workdir
    shutil.copy2("/usr/bin/busybox", root / "bin" / "busybox")
    for applet in ("sh", "id", "ls", "cat", "echo", "sleep", "pwd"):
        (root / "bin" / applet).symlink_to("busybox")
    (root / "etc").mkdir()
    (root / "etc" / "image-release").write_text("tiny\n")
    return root


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[tuple[Env, OneImage, Path]]:
    rootfs = busybox_root(tmp_path / "image-root")
    config = ImageConfig(
        cmd=("sh", "-c", SCRIPT),
        env=("PATH=/bin", "GREETING=from-the-image"),
        working_dir="/srv/app",
        user="1000:1000",
    )
    images = OneImage(ImageRecord(NAME, "sha256:" + "0" * 64, rootfs, config))
    async with real_cluster(tmp_path) as e:
        e.cluster.runtime.image_store = images
        yield e, images, rootfs


async def test_a_loaded_image_runs_its_own_cmd_in_its_own_root(
    env: tuple[Env, OneImage, Path],
) -> None:
    e, images, rootfs = env
    pod = {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"name": "tiny"},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": IMAGE,
                    "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
                }
            ],
            "volumes": [{"name": "tmp", "emptyDir": {}}],
        },
    }
    await e.create(pod)
    lines = (await finished(e, "tiny")).splitlines()
    assert lines[:3] == ["1000", "/srv/app", "from-the-image"]
    listing = set(lines[3:-1])
    assert {"bin", "etc", "srv", "tmp", "proc", "dev", "sys"} <= listing
    assert not listing & {"usr", "root", "home", "work"}  # nothing of the host's
    assert lines[-1] == "mine"
    assert IMAGE in images.asked
    assert not (rootfs / "srv" / "app" / "written").exists()  # it went to the container's layer
    assert sorted(p.name for p in (rootfs / "bin").iterdir())[0] == "busybox"


async def test_exec_enters_the_image_root(env: tuple[Env, OneImage, Path]) -> None:
    e, _, _ = env
    pod = {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"name": "sleeper"},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "main", "image": IMAGE, "command": ["sleep", "600"]}],
        },
    }
    await e.create(pod)
    await eventually(lambda: e.pod("sleeper"), running)
    out = await eventually(
        lambda: e.kubectl("exec", "sleeper", "--", "cat", "/etc/image-release"),
        retry_on=(AssertionError,),  # until runc has started the command
    )
    assert out == "tiny\n"


async def test_an_image_without_a_command_waits_with_create_container_error(
    env: tuple[Env, OneImage, Path],
) -> None:
    e, _, _ = env
    pod = {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"name": "bare"},
        "spec": {"containers": [{"name": "main", "image": BARE}]},
    }
    await e.create(pod)

    def waiting(p: Any) -> bool:
        statuses = p.status.container_statuses or []
        return bool(statuses and statuses[0].state.waiting and statuses[0].state.waiting.message)

    done = await eventually(lambda: e.pod("bare"), waiting)
    state = done.status.container_statuses[0].state.waiting
    assert state.reason == "CreateContainerError"
    assert "no command specified" in state.message
