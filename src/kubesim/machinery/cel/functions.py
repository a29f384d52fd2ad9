"""The function table: every library's functions by CEL name, and the names the static check knows.

Each library module declares its own `FUNCTIONS`; celpy's standard functions fill in the rest
(`size`, `matches`, `startsWith`, arithmetic, ...). Macros (`all`, `exists`, `map`, ...) expand
in the evaluator; `min` is also one of celpy's macros (`list.min()`), with cel-go's meaning.
"""

from __future__ import annotations

from typing import Any

from celpy.evaluation import Activation, base_functions

from kubesim.machinery.cel import (
    formats,
    lists,
    mathlib,
    network,
    optionals,
    quantity,
    regex,
    standard,
    strings,
)

_LIBRARIES = (standard, strings, lists, regex, mathlib, optionals, formats, quantity, network)

FUNCTIONS: dict[str, Any] = {name: f for lib in _LIBRARIES for name, f in lib.FUNCTIONS.items()}
assert len(FUNCTIONS) == sum(len(lib.FUNCTIONS) for lib in _LIBRARIES), "a CEL name defined twice"

ALL_FUNCTIONS: dict[str, Any] = {**base_functions, **FUNCTIONS}
ACTIVATION = Activation(functions=FUNCTIONS)  # only for the node types celpy evaluates

MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})
KNOWN_FUNCTIONS = frozenset(FUNCTIONS) | frozenset(base_functions)
# Names that are values without being variables: type names used in `type(x) == string`.
TYPE_NAMES = frozenset(
    {"int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type"}
)
