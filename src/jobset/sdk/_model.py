"""The base of the SDK's typed models: dataclasses that round-trip the wire dict exactly.

A model that lost a field its class does not know, reordered keys, or turned an explicit
`null` into absence would corrupt what users read from the cluster and write back (and
`kubectl diff` would show noise). So each model remembers, besides its typed fields:

- the wire keys it was read with, in order (output keeps that order; new fields follow);
- which keys were explicitly null;
- unknown keys and values whose shape does not fit the declared type (a string where an int
  is declared, say), verbatim, in `extra`. Validation, not parsing, reports bad values.

Field declarations are ordinary dataclass fields with snake_case names defaulting to None
(absent); the wire name is the camelCase form unless `wire(...)` overrides it.
"""

from __future__ import annotations

import copy
import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, Self, dataclass_transform

__all__ = ["Model", "wire"]


def wire(name: str) -> Any:
    """A field whose wire name is not the camelCase of its attribute (`enableDNSHostnames`)."""
    return dataclasses.field(default=None, metadata={"wire": name})


def _camel(attr: str) -> str:
    head, *rest = attr.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


class _Mismatch(Exception):
    """A value whose shape does not fit the declared type: kept verbatim in `extra`."""


@dataclasses.dataclass(frozen=True)
class _Field:
    attr: str
    wire: str
    kind: str  # scalar | model | model_list | list | map | any
    scalar: tuple[type, ...] = ()
    model: type[Model] | None = None
    item: tuple[type, ...] = ()

    def decode(self, value: Any) -> Any:
        if self.kind == "any":
            return copy.deepcopy(value)
        if self.kind == "scalar":
            if not _is(value, self.scalar):
                raise _Mismatch
            return value
        if self.kind == "model":
            if not isinstance(value, Mapping) or self.model is None:
                raise _Mismatch
            return self.model.from_dict(value)
        if self.kind == "model_list":
            if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
                raise _Mismatch
            assert self.model is not None
            return [self.model.from_dict(v) for v in value]
        if self.kind == "list":
            if not isinstance(value, list) or not all(_is(v, self.item) for v in value):
                raise _Mismatch
            return copy.deepcopy(value)
        # map of str to item
        if not isinstance(value, Mapping) or not all(
            isinstance(k, str) and _is(v, self.item) for k, v in value.items()
        ):
            raise _Mismatch
        return copy.deepcopy(dict(value))

    def encode(self, value: Any) -> Any:
        if self.kind == "model":
            return value.to_dict()
        if self.kind == "model_list":
            return [v.to_dict() for v in value]
        return copy.deepcopy(value)


def _is(value: Any, allowed: tuple[type, ...]) -> bool:
    """isinstance, except that a bool is not an int (YAML `true` is no replica count)."""
    if not allowed:
        return True
    if isinstance(value, bool):
        return bool in allowed
    return isinstance(value, allowed)


def _strip_optional(tp: Any) -> Any:
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if typing.get_origin(tp) in (typing.Union, types.UnionType) and len(args) == 1:
        return args[0]
    return tp


def _item_types(tp: Any) -> tuple[type, ...]:
    if tp is Any:
        return ()
    origin = typing.get_origin(tp)
    return (origin,) if origin is not None else (tp,)


def _field_for(f: dataclasses.Field[Any], tp: Any) -> _Field:
    name = f.metadata.get("wire") or _camel(f.name)
    tp = _strip_optional(tp)
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return _Field(f.name, name, "any")
    if isinstance(tp, type) and issubclass(tp, Model):
        return _Field(f.name, name, "model", model=tp)
    if origin is list:
        (item,) = args
        if isinstance(item, type) and issubclass(item, Model):
            return _Field(f.name, name, "model_list", model=item)
        return _Field(f.name, name, "list", item=_item_types(item))
    if origin is dict:
        return _Field(f.name, name, "map", item=_item_types(args[1]))
    if tp in (str, int, bool, float):
        return _Field(f.name, name, "scalar", scalar=(tp,))
    raise TypeError(f"unsupported model field type {tp!r} of {f.name}")


@dataclass_transform(kw_only_default=True, field_specifiers=(dataclasses.field, wire))
class Model:
    """Base class of every SDK model: each subclass is made a keyword-only dataclass."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        dataclasses.dataclass(cls, kw_only=True, eq=False, repr=False)

    def __post_init__(self) -> None:
        self._extra: dict[str, Any] = {}
        self._keys: list[str] = []
        self._nulls: set[str] = set()

    # ------------------------------------------------------------------ schema

    @classmethod
    def _schema(cls) -> tuple[_Field, ...]:
        return _schema_of(cls)

    @classmethod
    def _by_wire(cls) -> dict[str, _Field]:
        return {f.wire: f for f in _schema_of(cls)}

    # ------------------------------------------------------------------ conversion

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """Read a wire dict; nothing in it is lost (see the module docstring)."""
        obj = cls()
        by_wire = cls._by_wire()
        for key, value in data.items():
            obj._keys.append(key)
            f = by_wire.get(key)
            if f is None:
                obj._extra[key] = copy.deepcopy(value)
            elif value is None:
                obj._nulls.add(key)
            else:
                try:
                    setattr(obj, f.attr, f.decode(value))
                except _Mismatch:
                    obj._extra[key] = copy.deepcopy(value)
        return obj

    def to_dict(self) -> dict[str, Any]:
        """The wire dict: keys in the order read, then fields set since, then new extras."""
        out: dict[str, Any] = {}
        by_wire = self._by_wire()
        for key in self._keys:
            self._emit(key, by_wire.get(key), out)
        for f in self._schema():
            if f.wire not in out:
                self._emit(f.wire, f, out)
        for key, value in self._extra.items():
            if key not in out:
                out[key] = copy.deepcopy(value)
        return out

    def _emit(self, key: str, f: _Field | None, out: dict[str, Any]) -> None:
        value = getattr(self, f.attr) if f is not None else None
        if value is not None:
            assert f is not None
            out[key] = f.encode(value)
        elif key in self._extra:
            out[key] = copy.deepcopy(self._extra[key])
        elif key in self._nulls and f is not None:
            out[key] = None

    def copy(self) -> Self:
        """A deep copy (through the wire form, so nothing is shared)."""
        return type(self).from_dict(self.to_dict())

    # ------------------------------------------------------------------ unknown fields

    @property
    def extra(self) -> dict[str, Any]:
        """Fields this model does not declare (or whose value did not fit), by wire name.

        Mutable: what is put here is written by `to_dict`.
        """
        return self._extra

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, Model)
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        """Only the fields that are set: a JobSet's full repr would be mostly `None`s."""
        parts = [
            f"{f.attr}={getattr(self, f.attr)!r}"
            for f in self._schema()
            if getattr(self, f.attr) is not None
        ]
        if self._extra:
            parts.append(f"extra={self._extra!r}")
        return f"{type(self).__name__}({', '.join(parts)})"


_SCHEMAS: dict[str, tuple[_Field, ...]] = {}


def _schema_of(cls: type[Model]) -> tuple[_Field, ...]:
    """The declared fields of `cls`, resolved once (annotations are strings until then)."""
    key = f"{cls.__module__}.{cls.__qualname__}"
    schema = _SCHEMAS.get(key)
    if schema is None:
        hints = typing.get_type_hints(cls)
        fields = dataclasses.fields(cls)  # type: ignore[arg-type]
        schema = _SCHEMAS[key] = tuple(_field_for(f, hints[f.name]) for f in fields)
    return schema
