"""The registry's layout: one module per built-in type, `registry/<group>/<kind>.py`, each
listed once in the catalogue - a module left out of it would silently not be served."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from kubesim.apiserver import registry
from kubesim.apiserver.registry import catalogue
from kubesim.apiserver.registry.resource import Resource


def _kind_modules() -> list[ModuleType]:
    found = []
    for group in pkgutil.iter_modules(registry.__path__):
        if not group.ispkg:
            continue
        package = importlib.import_module(f"{registry.__name__}.{group.name}")
        for mod in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{mod.name}")
            if isinstance(getattr(module, "RESOURCE", None), Resource):
                found.append(module)
    return found


def test_every_kind_module_is_in_the_catalogue_once() -> None:
    listed = [id(r) for r in catalogue.CATALOGUE]
    for module in _kind_modules():
        assert listed.count(id(module.RESOURCE)) == 1, module.__name__
    assert len(_kind_modules()) == len(catalogue.CATALOGUE)


def test_a_kind_module_is_named_after_its_group_and_kind() -> None:
    for module in _kind_modules():
        rt = module.RESOURCE.type
        *_, group_dir, name = module.__name__.split(".")
        assert name == rt.kind.lower(), module.__name__
        assert group_dir == (rt.group.split(".")[0] or "core"), module.__name__


def test_no_two_types_are_served_at_one_path() -> None:
    paths = [(r.type.group, r.type.version, r.type.plural) for r in catalogue.CATALOGUE]
    assert len(paths) == len(set(paths))
