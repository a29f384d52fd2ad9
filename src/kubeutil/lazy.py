"""A package's public names loaded on first use (PEP 562), so that importing the package for
one name does not import every module behind the others (the user commands' start-up)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, homes: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of `package`, whose names live in the modules `homes`
    maps them to (a name that is itself a submodule maps to that submodule); each name is
    imported when first asked for and kept in the package's `namespace` after that."""

    def getattr_(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(home)
        value = module if home == f"{package}.{name}" else getattr(module, name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted([*namespace, *homes])

    return getattr_, dir_
