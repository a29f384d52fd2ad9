"""The compiled form of a structural schema (`CompiledSchema`, a tree of `Node`s with their CEL
`Rule`s), `SchemaError`, and the JSON helpers the other modules share.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final

from kubesim.machinery.cel import (
    CelProgram,
)
from kubesim.machinery.errors import Cause

MISSING: Final[Any] = object()

TYPES = ("array", "boolean", "integer", "number", "object", "string")


# CEL keywords that kube-apiserver escapes as `__{keyword}__` when they are property names.
CEL_RESERVED = frozenset(
    {
        "true", "false", "null", "in", "as", "break", "const", "continue", "else", "for",
        "function", "if", "import", "let", "loop", "package", "namespace", "return", "var",
        "void", "while",
    }
)  # fmt: skip


class SchemaError(ValueError):
    """A schema the API server would refuse in a CRD; `causes` are ready for a 422 Status."""

    def __init__(self, causes: list[Cause]) -> None:
        self.causes = causes
        parts = [f"{c.field}: {c.message}" if c.field else c.message for c in causes]
        super().__init__(parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]")


# ------------------------------------------------------------------------------------------------
# Go-style rendering of values in messages


def json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        # beyond int64 kube-apiserver has decoded a float64
        return "integer" if -(2**63) <= v < 2**63 else "number"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return type(v).__name__


def same_json(a: Any, b: Any) -> bool:
    """JSON equality that does not confuse `true` with `1` at the top level."""
    return type(a) is type(b) and a == b


def copy_json(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: copy_json(x) for k, x in v.items()}
    if isinstance(v, list):
        return [copy_json(x) for x in v]
    return v


def join_path(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


# ------------------------------------------------------------------------------------------------
# Compiled form


class Rule:
    """One `x-kubernetes-validations` entry, compiled."""

    __slots__ = (
        "error_string",
        "field_suffix",
        "fields",
        "message",
        "message_program",
        "optional_old_self",
        "program",
        "reason",
        "self_eq_old",
        "transition",
    )

    def __init__(
        self,
        program: CelProgram,
        message: str,
        error_string: str,
        message_program: CelProgram | None,
        reason: str,
        field_suffix: str,
        optional_old_self: bool,
    ) -> None:
        self.program = program
        self.message = message
        self.error_string = error_string
        self.message_program = message_program
        self.reason = reason
        self.field_suffix = field_suffix
        self.transition = program.uses_old_self
        self.optional_old_self = optional_old_self and self.transition
        # The fields of `self` and `oldSelf` the rule (and its message expression) selects,
        # or None when it reads them otherwise: what their CEL values must hold.
        self.fields = _union(
            read
            for p in (program, message_program)
            if p is not None
            for read in p.fields_read.values()
        )
        compact = "".join(program.source.split())
        self.self_eq_old = compact in ("self==oldSelf", "oldSelf==self") and not optional_old_self


def _union(sets: Iterable[frozenset[str] | None]) -> frozenset[str] | None:
    """The union of `sets`, None if any is None (a value read whole)."""
    out: set[str] = set()
    for one in sets:
        if one is None:
            return None
        out |= one
    return frozenset(out)


def rule_fields(rules: Iterable[Rule]) -> frozenset[str] | None:
    """What a node's rules read of its value (`Node.rule_fields`)."""
    return _union(r.fields for r in rules)


class Node:
    """One schema node, with everything the walks need precomputed."""

    __slots__ = (
        "additional",
        "additional_any",
        "all_of",
        "any_of",
        "cel_keys",
        "default",
        "embedded",
        "enum",
        "exclusive_max",
        "exclusive_min",
        "format_check",
        "format_name",
        "int_or_string",
        "items",
        "list_type",
        "map_keys",
        "max_items",
        "max_length",
        "max_props",
        "maximum",
        "min_items",
        "min_length",
        "min_props",
        "minimum",
        "multiple_of",
        "not_",
        "nullable",
        "one_of",
        "pattern",
        "pattern_src",
        "preserve_unknown",
        "properties",
        "required",
        "root_like",
        "rule_fields",
        "rules",
        "transition_below",
        "type",
        "unique_items",
        "value_checks",
    )

    def __init__(self) -> None:
        self.type: str | None = None
        self.nullable = False
        self.int_or_string = False
        self.preserve_unknown = False
        self.embedded = False
        self.root_like = False
        self.properties: dict[str, Node] | None = None
        self.cel_keys: dict[str, str | None] = {}
        self.additional: Node | None = None
        self.additional_any = False
        self.items: Node | None = None
        self.required: tuple[str, ...] = ()
        self.enum: tuple[Any, ...] | None = None
        self.default: Any = MISSING
        self.maximum: int | float | None = None
        self.minimum: int | float | None = None
        self.exclusive_max = False
        self.exclusive_min = False
        self.multiple_of: int | float | None = None
        self.max_length: int | None = None
        self.min_length: int | None = None
        self.pattern: Callable[[str], Any] | None = None
        self.pattern_src = ""
        self.format_name = ""
        self.format_check: Callable[[str], bool] | None = None
        self.max_items: int | None = None
        self.min_items: int | None = None
        self.unique_items = False
        self.max_props: int | None = None
        self.min_props: int | None = None
        self.list_type: str | None = None
        self.map_keys: tuple[str, ...] = ()
        self.all_of: tuple[Node, ...] = ()
        self.any_of: tuple[Node, ...] = ()
        self.one_of: tuple[Node, ...] = ()
        self.not_: Node | None = None
        self.rules: tuple[Rule, ...] = ()
        # The fields of this node's value its rules select, or None when one reads the value
        # whole: validation converts only those to CEL (`_Run.rules`).
        self.rule_fields: frozenset[str] | None = frozenset()
        self.transition_below = False
        self.value_checks = False

    @property
    def type_name(self) -> str:
        """The schema type as kube-apiserver prints it in CEL errors (`Invalid value: "object"`)."""
        return self.type or ""


class CompiledSchema:
    """A CRD version's `openAPIV3Schema`, compiled once: node tree, regexes and CEL programs."""

    __slots__ = ("raw", "root")

    def __init__(self, raw: dict[str, Any], root: Node) -> None:
        self.raw = raw
        self.root = root
