"""Unknown and duplicate fields of a request body, as kube-apiserver's strict decoding finds
them (`fieldValidation=Strict|Warn`).

- A built-in type is decoded into its Go type: each field the type does not have is an
  "unknown field", a field given twice a "duplicate field", reported in the order the body
  has them (a field both unknown and repeated only as unknown). The fields of each type are
  `builtin_fields.json` (tools/gen_builtin_fields.py, from kubernetes_asyncio's models).
- A custom resource is decoded as JSON (every repeated key, in order), then pruned by its
  structural schema: what pruning drops is unknown, except under
  `x-kubernetes-preserve-unknown-fields`; `metadata` (and an embedded resource's) is
  ObjectMeta and decoded as a built-in type.

Paths read as kube-apiserver's: `spec.template.spec.containers[0].imagePullPolicy`.

`prune_typed` drops what `typed_unknown_fields` reports, from the same table: what a
built-in object keeps once decoded into its Go type, whatever `fieldValidation` says.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from functools import cache
from importlib import resources
from typing import Any, Final

from kubesim.machinery.schema.nodes import CompiledSchema, Node

__all__ = [
    "Pairs",
    "builtin_model",
    "duplicate_fields",
    "load_pairs",
    "pairs_to_json",
    "prune_field",
    "prune_typed",
    "schema_unknown_fields",
    "typed_problems",
    "typed_unknown_fields",
]

_OBJECT_META: Final = "V1ObjectMeta"


class Pairs(list[tuple[str, Any]]):
    """A JSON object as decoded, every key in order, repeats kept."""


def load_pairs(raw: bytes | str) -> Any:
    """The body with its objects as `Pairs` (ValueError when it is not JSON)."""
    return json.loads(raw, object_pairs_hook=Pairs)


def pairs_to_json(tree: Any) -> Any:
    """The body as a decoder keeps it: the last of repeated keys wins."""
    if isinstance(tree, Pairs):
        return {k: pairs_to_json(v) for k, v in tree}
    if isinstance(tree, list):
        return [pairs_to_json(v) for v in tree]
    return tree


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def duplicate_fields(tree: Any, path: str = "") -> Iterator[str]:
    """The paths of repeated keys, in the order the body has them."""
    if isinstance(tree, Pairs):
        seen: set[str] = set()
        for key, _value in tree:
            if key in seen:
                yield _child(path, key)
            seen.add(key)
        for key, value in dict(tree).items():
            yield from duplicate_fields(value, _child(path, key))
    elif isinstance(tree, list):
        for i, value in enumerate(tree):
            yield from duplicate_fields(value, f"{path}[{i}]")


@cache
def _table() -> dict[str, dict[str, str]]:
    text = resources.files(__package__).joinpath("builtin_fields.json").read_text()
    table: dict[str, dict[str, str]] = json.loads(text)
    return table


@cache
def builtin_model(group: str, version: str, kind: str) -> str | None:
    """The model of a built-in kind (`V1Pod`, `EventsV1Event`, ...), None when unknown."""
    prefix = (group.split(".")[0] if group else "core").capitalize()
    ver = version[:1].upper() + version[1:]
    table = _table()
    for name in (f"{prefix}{ver}{kind}", f"{ver}{kind}"):
        fields = table.get(name)
        if fields is not None and "kind" in fields:
            return name
    return None


@cache
def _element(type_name: str) -> tuple[str, str]:
    """('list'|'map'|'one', the element's type) of a model's field type."""
    if type_name.startswith("list[") and type_name.endswith("]"):
        return "list", type_name[5:-1]
    if type_name.startswith("dict(") and type_name.endswith(")"):
        return "map", type_name.split(",", 1)[1].strip()[:-1]
    return "one", type_name


@cache
def _descends(type_name: str) -> bool:
    """Whether a value of this field type can hold an object with fields of its own."""
    return _element(type_name)[1] in _table()


@cache
def _plan(type_name: str) -> tuple[str, str, dict[str, str] | None]:
    """What pruning a value of this type needs: its shape, its element type, and for an
    object type its fields, each with the type to descend into ("" for a leaf)."""
    shape, element = _element(type_name)
    fields = _table().get(element)
    if fields is None:
        return shape, element, None
    return shape, element, {k: v if _descends(v) else "" for k, v in fields.items()}


def prune_typed(value: Any, type_name: str) -> Any:
    """`value` without the fields its built-in type does not have: `value` itself when it
    has none (the common case costs a walk, no copy), else a copy along the dropped paths."""
    shape, element, plan = _plan(type_name)
    if shape == "list":
        return _prune_items(value, element, enumerate(value)) if isinstance(value, list) else value
    if shape == "map":
        return _prune_items(value, element, value.items()) if isinstance(value, dict) else value
    if plan is None or not isinstance(value, dict):
        return value
    out: dict[str, Any] | None = None
    for key, item in value.items():
        sub = plan.get(key)
        if sub is None:
            out = dict(value) if out is None else out
            del out[key]
        elif sub:
            new = prune_typed(item, sub)
            if new is not item:
                out = dict(value) if out is None else out
                out[key] = new
    return value if out is None else out


def _prune_items(container: Any, element: str, items: Iterable[tuple[Any, Any]]) -> Any:
    """A list's or a free-keyed map's elements pruned as `element` (keys all kept)."""
    if not _descends(element):
        return container
    out: Any = None
    for key, item in items:
        new = prune_typed(item, element)
        if new is not item:
            out = (
                (list(container) if isinstance(container, list) else dict(container))
                if out is None
                else out
            )
            out[key] = new
    return container if out is None else out


def prune_field(obj: dict[str, Any], model: str, key: str) -> dict[str, Any]:
    """`obj` with only its field `key` pruned (a status write changes nothing else)."""
    sub = _table().get(model, {}).get(key)
    if sub is None or key not in obj:
        return obj
    new = prune_typed(obj[key], sub)
    return obj if new is obj[key] else {**obj, key: new}


def _typed_walk(tree: Any, type_name: str, path: str, out: list[tuple[str, str]]) -> None:
    shape, element = _element(type_name)
    if shape == "list":
        for i, value in enumerate(tree if isinstance(tree, list) else []):
            _typed_walk(value, element, f"{path}[{i}]", out)
        return
    if shape == "map":
        if isinstance(tree, Pairs):
            for key, value in dict(tree).items():
                _typed_walk(value, element, f"{path}[{key}]", out)
        return
    fields = _table().get(element)
    if fields is None or not isinstance(tree, Pairs):
        return  # a scalar, or free-form (`object`): nothing more to know
    seen: set[str] = set()
    for key, _value in tree:
        if key not in fields:
            if key not in seen:
                out.append(("unknown", _child(path, key)))
        elif key in seen:
            out.append(("duplicate", _child(path, key)))
        seen.add(key)
    for key, value in dict(tree).items():
        if key in fields:
            _typed_walk(value, fields[key], _child(path, key), out)


def typed_problems(tree: Any, model: str, path: str = "") -> list[str]:
    """A built-in body's unknown and duplicate fields, as kube-apiserver words each."""
    found: list[tuple[str, str]] = []
    _typed_walk(tree, model, path, found)
    return [f'{what} field "{where}"' for what, where in found]


def typed_unknown_fields(obj: Any, model: str, path: str = "") -> list[str]:
    """The unknown fields of an already decoded built-in object (a patch's result)."""
    found: list[tuple[str, str]] = []
    _typed_walk(_as_pairs(obj), model, path, found)
    return [where for what, where in found if what == "unknown"]


def _as_pairs(value: Any) -> Any:
    if isinstance(value, Mapping):
        return Pairs((k, _as_pairs(v)) for k, v in value.items())
    if isinstance(value, list):
        return [_as_pairs(v) for v in value]
    return value


def _schema_walk(value: Any, node: Node | None, path: str, out: list[str], meta: list[str]) -> None:
    if node is None:
        return
    if isinstance(value, Mapping):
        props = node.properties
        if (
            props is None
            and node.additional is None
            and (node.preserve_unknown or node.type is None)
        ):
            return
        for key, child in value.items():
            where = _child(path, key)
            if node.root_like and key in ("apiVersion", "kind"):
                continue
            if node.root_like and key == "metadata":
                meta += typed_unknown_fields(child, _OBJECT_META, where)
                continue
            sub = props.get(key) if props is not None else None
            if sub is not None:
                _schema_walk(child, sub, where, out, meta)
            elif node.additional is not None:
                _schema_walk(child, node.additional, f"{path}[{key}]", out, meta)
            elif not (node.preserve_unknown or node.additional_any):
                out.append(where)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _schema_walk(item, node.items, f"{path}[{i}]", out, meta)


def schema_unknown_fields(obj: Mapping[str, Any], schema: CompiledSchema) -> list[str]:
    """A custom resource's unknown fields: its metadata's, then what pruning would drop
    (sorted), then embedded resources' metadata."""
    pruned: list[str] = []
    meta: list[str] = []
    _schema_walk(obj, schema.root, "", pruned, meta)
    top = [m for m in meta if m.startswith("metadata.")]
    embedded = [m for m in meta if not m.startswith("metadata.")]
    return top + sorted(pruned) + embedded
