"""A container's process from its spec and its image, as kubelet and containerd make it."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.images.process import DEFAULT_PATH_ENV, ProcessError, container_process
from kubesim.images.types import ImageConfig

IMAGE = ImageConfig(
    entrypoint=("/bin/entry",),
    cmd=("serve", "--port=80"),
    env=("PATH=/opt/bin:/bin", "MODE=image", "ONLY_IMAGE=1"),
    working_dir="/srv",
    user="app",
)
PASSWD = "root:x:0:0:root:/root:/bin/sh\napp:x:1000:1001:App:/home/app:/bin/sh\n"
GROUP = "root:x:0:\napp:x:1001:\nvideo:x:44:app,other\naudio:x:63:other\n"


def process(container: dict[str, Any], image: ImageConfig = IMAGE, **kw: Any) -> Any:
    return container_process(container, image, passwd=PASSWD, group=GROUP, **kw)


@pytest.mark.parametrize(
    ("container", "argv"),
    [
        pytest.param({}, ("/bin/entry", "serve", "--port=80"), id="image-entrypoint-and-cmd"),
        pytest.param({"args": ["check"]}, ("/bin/entry", "check"), id="args-replace-cmd"),
        pytest.param({"command": ["/bin/sh"]}, ("/bin/sh",), id="command-drops-cmd"),
        pytest.param(
            {"command": ["/bin/sh"], "args": ["-c", "x"]}, ("/bin/sh", "-c", "x"), id="both"
        ),
    ],
)
def test_argv_as_containerd_builds_it(container: dict[str, Any], argv: tuple[str, ...]) -> None:
    assert process(container).argv == argv


def test_an_entrypoint_of_one_empty_string_is_no_entrypoint() -> None:
    image = ImageConfig(entrypoint=("",), cmd=("/bin/true",))
    assert process({}, image).argv == ("/bin/true",)


def test_nothing_to_run_is_containerds_error() -> None:
    with pytest.raises(ProcessError, match="no command specified") as err:
        process({}, ImageConfig())
    assert err.value.reason == "CreateContainerError"


def test_env_image_then_container_later_wins_in_place() -> None:
    env = process({}, env=[("MODE", "pod"), ("EXTRA", "x")], hostname="web-0").env
    assert env == (
        "PATH=/opt/bin:/bin",
        "HOSTNAME=web-0",
        "MODE=pod",
        "ONLY_IMAGE=1",
        "EXTRA=x",
    )


def test_default_path_when_the_image_sets_none() -> None:
    assert process({}, ImageConfig(cmd=("x",))).env == (DEFAULT_PATH_ENV,)


@pytest.mark.parametrize(
    ("container", "image", "cwd"),
    [
        pytest.param({"workingDir": "/work"}, IMAGE, "/work", id="container"),
        pytest.param({}, IMAGE, "/srv", id="image"),
        pytest.param({}, ImageConfig(cmd=("x",)), "/", id="root"),
    ],
)
def test_working_dir(container: dict[str, Any], image: ImageConfig, cwd: str) -> None:
    assert process(container, image).cwd == cwd


def test_image_user_name_resolved_in_the_images_passwd_with_its_groups() -> None:
    p = process({}, supplemental_groups=[2000])
    assert (p.uid, p.gid, p.additional_gids) == (1000, 1001, (44, 2000))


def test_run_as_user_and_group_override_the_image_user() -> None:
    p = process({}, run_as_user=0, run_as_group=7)
    assert (p.uid, p.gid) == (0, 7)


def test_a_uid_without_an_entry_gets_group_zero() -> None:
    p = process({}, ImageConfig(cmd=("x",), user="4242"))
    assert (p.uid, p.gid, p.additional_gids) == (4242, 0, ())


def test_the_images_group_is_dropped_as_the_kubelet_passes_the_user_alone() -> None:
    p = process({}, ImageConfig(cmd=("x",), user="1000:5"))
    assert (p.uid, p.gid) == (1000, 1001)


def test_run_as_group_alone_keeps_the_images_user() -> None:
    p = process({}, run_as_group=9)
    assert (p.uid, p.gid) == (1000, 9)


def test_a_user_name_the_image_does_not_hold_is_containerds_error() -> None:
    with pytest.raises(ProcessError, match="no users found") as err:
        process({}, ImageConfig(cmd=("x",), user="nobody-here"))
    assert err.value.reason == "CreateContainerError"
    assert str(err.value) == "failed to create containerd container: no users found"


def test_a_user_name_in_an_image_without_passwd() -> None:
    with pytest.raises(ProcessError, match="open /etc/passwd"):
        container_process({}, IMAGE, passwd=None)
