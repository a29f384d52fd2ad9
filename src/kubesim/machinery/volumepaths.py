"""The rules kube-apiserver applies to the names and paths a pod's volumes turn into files.

A volume's name, a ConfigMap or Secret key, an `items[].path` and a mount's `subPath` all
end up joined to a directory on the host by the real-process kubelet, so the API refuses
each one that could leave that directory (as `k8s.io/kubernetes/pkg/apis/core/validation`
does, in its words), and the kubelet checks them again before it writes, so an object that
reached the store another way still cannot make it write elsewhere. Pure functions.
"""

from __future__ import annotations

import posixpath
import re
from typing import Final

from kubeutil import names

__all__ = [
    "CONFIG_MAP_KEY_MAX_LENGTH",
    "is_config_map_key",
    "local_descending_path_errors",
    "local_non_reserved_path_errors",
    "safe_relative",
]

CONFIG_MAP_KEY_MAX_LENGTH: Final = names.DNS1123_SUBDOMAIN_MAX_LENGTH
_CONFIG_MAP_KEY_FMT: Final = "[-._a-zA-Z0-9]+"
_CONFIG_MAP_KEY_RE: Final = re.compile(_CONFIG_MAP_KEY_FMT)
_CONFIG_MAP_KEY_MSG: Final = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
)


def _chdir_prefix(value: str) -> list[str]:
    if value == ".":
        return ["must not be '.'"]
    if value == "..":
        return ["must not be '..'"]
    if value.startswith(".."):
        return ["must not start with '..'"]
    return []


def is_config_map_key(value: str) -> list[str]:
    """`validation.IsConfigMapKey`: a key of a ConfigMap's or Secret's data (a file name)."""
    errs: list[str] = []
    if len(value) > CONFIG_MAP_KEY_MAX_LENGTH:
        errs.append(names.max_len_error(CONFIG_MAP_KEY_MAX_LENGTH))
    if not _CONFIG_MAP_KEY_RE.fullmatch(value):
        errs.append(
            names.regex_error(
                _CONFIG_MAP_KEY_MSG, _CONFIG_MAP_KEY_FMT, "key.name", "KEY_NAME", "key-name"
            )
        )
    return errs + _chdir_prefix(value)


def local_descending_path_errors(path: str) -> list[str]:
    """`validateLocalDescendingPath`: relative, and no `..` element (one error for many)."""
    errs: list[str] = []
    if posixpath.isabs(path):
        errs.append("must be a relative path")
    if ".." in path.split("/"):
        errs.append("must not contain '..'")
    return errs


def local_non_reserved_path_errors(path: str) -> list[str]:
    """`ValidateLocalNonReservedPath`: a descending path that does not start with `..` either
    (the kubelet's atomic writer keeps its own `..data` entries there)."""
    errs = local_descending_path_errors(path)
    if path.startswith("..") and not path.startswith("../"):
        errs.append("must not start with '..'")
    return errs


def safe_relative(path: str) -> bool:
    """What the kubelet joins to a directory of its own: a non-empty relative path with no
    `..`-led element and no NUL, so the result stays inside that directory."""
    if not path or "\x00" in path or posixpath.isabs(path):
        return False
    return not any(part.startswith("..") for part in path.split("/"))
