"""A container's process from its spec and its image's config, as kubelet and containerd make it.

Pure: the caller reads the image's `/etc/passwd` and `/etc/group` (`rootfiles.py`) and
expands `$(VAR)` in `command` and `args` first, as the kubelet does before it asks the runtime.

- **argv** (containerd's `WithProcessArgs`): `command` replaces the image's Entrypoint and
  drops its Cmd; `args` replace Cmd; with neither the image's Entrypoint + Cmd run. An
  Entrypoint of one empty string is no Entrypoint. Nothing at all: `no command specified`.
- **env**: containerd's default `PATH`, then `HOSTNAME`, then the image's `Env`, then the
  container's, a later value replacing an earlier one in place (`WithEnv`).
- **cwd**: the container's `workingDir`, else the image's `WorkingDir`, else `/`.
- **user**: `runAsUser` overrides the image's `User`, of which the kubelet passes only the user
  part (`getImageUser`: an image's `uid:gid` loses its gid); `runAsGroup` sets the group. A
  name is looked up in the image's `/etc/passwd` (containerd's `WithUser`; a name it does not
  hold is `no users found`), a uid gets its entry's group, or 0. The user's groups in the
  image's `/etc/group` are added, then the pod's `supplementalGroups` (`WithAdditionalGIDs`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from kubesim.images.types import ImageConfig

__all__ = [
    "DEFAULT_PATH_ENV",
    "ContainerProcess",
    "ProcessError",
    "container_process",
    "parse_group",
    "parse_passwd",
]

# containerd's `oci.WithDefaultPathEnv`
DEFAULT_PATH_ENV: Final = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
CREATE_CONTAINER_ERROR: Final = "CreateContainerError"
# how the kubelet shows containerd's refusal to create the container
CREATE_PREFIX: Final = "failed to create containerd container: "


class ProcessError(ValueError):
    """The container cannot be created: `reason` is its waiting reason, str() the message."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class PasswdEntry:
    name: str
    uid: int
    gid: int
    home: str


@dataclass(frozen=True)
class GroupEntry:
    name: str
    gid: int
    members: tuple[str, ...]


@dataclass(frozen=True)
class ContainerProcess:
    """What the runtime runs: argv, environment ("NAME=value"), working directory, identity."""

    argv: tuple[str, ...]
    env: tuple[str, ...]
    cwd: str
    uid: int
    gid: int
    additional_gids: tuple[int, ...] = field(default=())


def parse_passwd(text: str) -> list[PasswdEntry]:
    """`/etc/passwd` lines (name:password:uid:gid:gecos:home:shell); malformed ones skipped,
    as runc's `user.ParsePasswdFilter` skips them."""
    out = []
    for line in text.splitlines():
        parts = line.strip().split(":")
        if len(parts) < 4 or not parts[0] or parts[0].startswith("#"):
            continue
        try:
            uid, gid = int(parts[2]), int(parts[3])
        except ValueError:
            continue
        out.append(PasswdEntry(parts[0], uid, gid, parts[5] if len(parts) > 5 else ""))
    return out


def parse_group(text: str) -> list[GroupEntry]:
    """`/etc/group` lines (name:password:gid:member,member)."""
    out = []
    for line in text.splitlines():
        parts = line.strip().split(":")
        if len(parts) < 3 or not parts[0] or parts[0].startswith("#"):
            continue
        try:
            gid = int(parts[2])
        except ValueError:
            continue
        members = tuple(m for m in (parts[3] if len(parts) > 3 else "").split(",") if m)
        out.append(GroupEntry(parts[0], gid, members))
    return out


def _argv(command: Sequence[str], args: Sequence[str], image: ImageConfig) -> tuple[str, ...]:
    cmd, arg = list(command), list(args)
    if not cmd:
        if not arg:
            arg = list(image.cmd)
        if image.entrypoint != ("",):
            cmd = list(image.entrypoint)
    if not cmd and not arg:
        raise ProcessError(CREATE_CONTAINER_ERROR, f"{CREATE_PREFIX}no command specified")
    return (*cmd, *arg)


def _merge_env(*groups: Iterable[str]) -> tuple[str, ...]:
    """containerd's `replaceOrAppendEnvValues`: a name set again keeps its first place and
    takes the later value."""
    order: list[str] = []
    values: dict[str, str] = {}
    for group in groups:
        for item in group:
            name = item.split("=", 1)[0]
            if name not in values:
                order.append(name)
            values[name] = item
    return tuple(values[n] for n in order)


def _user_string(image_user: str, run_as_user: int | None, run_as_group: int | None) -> str:
    """The `user[:gid]` containerd is given. The kubelet passes runAsUser, else the user part
    of the image's User (its group is dropped), else uid 0; runAsGroup rides along."""
    user = str(run_as_user) if run_as_user is not None else (image_user.split(":", 1)[0] or "0")
    return user if run_as_group is None else f"{user}:{run_as_group}"


def _identity(userstr: str, passwd: Sequence[PasswdEntry] | None) -> tuple[int, int, str]:
    """uid, gid and the user's name (for its groups) of a `user[:gid]` string
    (containerd's `WithUser`: a uid without an entry gets gid 0; a name must have one)."""
    user, sep, group = userstr.partition(":")
    entries = passwd or ()
    if user.isdigit():
        uid = int(user)
        entry = next((p for p in entries if p.uid == uid), None)
        name, gid = (entry.name, entry.gid) if entry else ("", 0)
    else:
        if passwd is None:
            raise ProcessError(
                CREATE_CONTAINER_ERROR,
                f"{CREATE_PREFIX}open /etc/passwd: no such file or directory",
            )
        found = next((p for p in entries if p.name == user), None)
        if found is None:
            raise ProcessError(CREATE_CONTAINER_ERROR, f"{CREATE_PREFIX}no users found")
        uid, gid, name = found.uid, found.gid, found.name
    if sep:
        gid = int(group)
    return uid, gid, name


def container_process(
    container: Mapping[str, Any],
    image: ImageConfig,
    *,
    env: Sequence[tuple[str, str]] = (),
    hostname: str = "",
    run_as_user: int | None = None,
    run_as_group: int | None = None,
    supplemental_groups: Sequence[int] = (),
    passwd: str | None = None,
    group: str | None = None,
) -> ContainerProcess:
    """The process of `container` (its `command`, `args`, `workingDir`, already expanded)
    started from `image`; `env` is the container's environment as the kubelet resolved it,
    `run_as_*` the effective securityContext, `passwd` and `group` the image's files (None:
    the image has none). Raises ProcessError as containerd refuses."""
    command = [str(x) for x in container.get("command") or ()]
    args = [str(x) for x in container.get("args") or ()]
    argv = _argv(command, args, image)
    host = (f"HOSTNAME={hostname}",) if hostname else ()
    merged = _merge_env((DEFAULT_PATH_ENV,), host, image.env, (f"{k}={v}" for k, v in env))
    cwd = str(container.get("workingDir") or "") or image.working_dir or "/"
    users = None if passwd is None else parse_passwd(passwd)
    grps = parse_group(group or "")
    uid, gid, name = _identity(_user_string(image.user, run_as_user, run_as_group), users)
    extra: list[int] = []
    if name:
        extra = [g.gid for g in grps if name in g.members and g.gid != gid]
    for g in supplemental_groups:
        if g not in extra and g != gid:
            extra.append(int(g))
    return ContainerProcess(argv, merged, cwd, uid, gid, tuple(extra))
