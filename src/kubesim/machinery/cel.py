"""CEL for CRD `x-kubernetes-validations`: cel-python plus what kube-apiserver adds on top of CEL.

kube-apiserver evaluates validation rules with cel-go and a set of Kubernetes extension
libraries. cel-python (`celpy`) parses and evaluates standard CEL, but it lacks those libraries
and differs from cel-go in a few semantics that CRD rules depend on. This module closes the gap
so that CRDs written for a real cluster (upstream JobSet's among them) behave the same here:

* Extension functions are implemented in Python and registered with celpy: the Kubernetes
  list library (`isSorted`, `sum`, `min`, `max`, `indexOf`, `lastIndexOf`), cel-go's string
  extensions (`charAt`, `indexOf`, `lastIndexOf`, `lowerAscii`, `upperAscii`, `replace`, `split`,
  `substring`, `trim`, `join`, `reverse`, `format`, `strings.quote`), cel-go's list extensions
  (`slice`, `flatten`, `distinct`, `reverse`, `sort`), the regex library (`find`, `findAll`),
  `sets.contains/equivalent/intersects`, `math.greatest/least/abs/ceil/floor/round/...`,
  optionals (`optional.none()`, `optional.of()`, `hasValue()`, `value()`, `orValue()`; needed
  for `optionalOldSelf`), named formats (`format.dns1123Label().validate(s)`, ...),
  `base64.encode/decode`, and smaller versions of the quantity, URL and IP/CIDR libraries.
* The interpreter (`_K8sEvaluator`) runs on celpy's parse trees, types and standard functions
  but handles the common node types itself: celpy's own evaluator was too slow for a server
  that validates every write (see the class docstring).
* Equality is heterogeneous as in cel-go (`1 == 1.0` is true, `1 == "1"` is false instead of an
  error), and comparisons between int, uint and double work (cel-go's cross-type numeric
  comparisons, which Kubernetes enables).
* Lists with `x-kubernetes-list-type: set` or `map` compare equal regardless of order, and `+`
  on them is a union, as Kubernetes specifies (see `SetList` and `MapList`).
* `has(a.b.c)` fails when `a.b` itself does not exist (celpy would answer false); that is what
  makes a rule such as `!has(t.metadata.namespace)` an error when `metadata` is absent.
* celpy has no type checker, so a light static check (`compile_expression`) rejects references
  to unknown variables or functions at CRD creation time, as cel-go's checker would.

Not supported: the optional-field syntax `a.?b` / `a[?b]` (celpy's grammar cannot parse it),
static type checking beyond unknown names (a rule that is not a bool, or mixes types, fails at
evaluation instead of at CRD creation), cost estimation and cost limits, `cel.bind`, and the
semver, authorizer and jsonpatch libraries.
"""

from __future__ import annotations

import base64
import datetime
import importlib
import ipaddress
import itertools
import json
import math
import operator
import re
import sys
import threading
import urllib.parse
from collections.abc import Callable, Iterable
from decimal import Decimal, InvalidOperation
from typing import Any, cast

import celpy
import lark
from celpy import celtypes
from celpy.celparser import CELParseError
from celpy.evaluation import Activation, CELEvalError, Evaluator, base_functions

from kubesim.machinery.field import go_float
from kubeutil import names

__all__ = [
    "CelError",
    "CelProgram",
    "MapList",
    "Optional",
    "SetList",
    "compile_expression",
    "equals",
    "go_float",
    "re2_compile",
]

# google-re2 is what celpy itself uses for `matches`; RE2 is the regex dialect of cel-go.
_re2: Any = importlib.import_module("re2")
_RE2_OPTIONS: Any = _re2.Options()
_RE2_OPTIONS.log_errors = False  # RE2 would print parse errors to stderr; callers report them


class CelError(Exception):
    """A rule could not be evaluated; the message is worded like cel-go's.

    `overload` marks "no such overload" failures, which kube-apiserver reports with its own
    longer explanation.
    """

    def __init__(self, message: str, *, overload: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.overload = overload


# --------------------------------------------------------------------------------------------
# Values


def _err(message: str) -> CELEvalError:
    """An error *value*: celpy propagates returned CELEvalError objects like cel-go errors."""
    return CELEvalError(message)


_BOOL = (bool, celtypes.BoolType)


def _is_bool(v: Any) -> bool:
    return isinstance(v, _BOOL)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, _BOOL)


class SetList(celtypes.ListType):
    """A list with `x-kubernetes-list-type: set`: order does not matter for `==`, `+` is a union."""

    def __eq__(self, other: Any) -> bool:
        return bool(equals(self, other))

    def __ne__(self, other: Any) -> bool:
        return not equals(self, other)

    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other: Any) -> SetList:  # type: ignore[override]
        out = SetList(self)
        for item in other:
            if not any(equals(item, mine) for mine in out):
                out.append(item)
        return out


class MapList(celtypes.ListType):
    """A list with `x-kubernetes-list-type: map`: elements are identified by their key fields.

    `==` ignores order; `a + b` keeps `a`'s order and lets `b`'s elements replace those of `a`
    with the same key, appending the rest (the semantics Kubernetes gives to map lists).
    """

    keys: tuple[str, ...] = ()

    def __init__(self, items: Iterable[Any] = (), keys: tuple[str, ...] = ()) -> None:
        super().__init__(items)
        self.keys = keys

    def key_of(self, item: Any) -> tuple[Any, ...]:
        if not isinstance(item, dict):
            return (id(item),)
        return tuple(item.get(k) for k in self.keys)

    def __eq__(self, other: Any) -> bool:
        return bool(equals(self, other))

    def __ne__(self, other: Any) -> bool:
        return not equals(self, other)

    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other: Any) -> MapList:  # type: ignore[override]
        out = MapList(self, self.keys)
        index = {out.key_of(item): i for i, item in enumerate(out)}
        for item in other:
            key = out.key_of(item)
            if key in index:
                out[index[key]] = item
            else:
                index[key] = len(out)
                out.append(item)
        return out


class Optional:
    """CEL `optional_type`: what `oldSelf` is bound to for rules with `optionalOldSelf: true`."""

    __slots__ = ("_has", "_value")

    def __init__(self, value: Any = None, has: bool = False) -> None:
        self._value = value
        self._has = has

    @classmethod
    def none(cls) -> Optional:
        return cls()

    @classmethod
    def of(cls, value: Any) -> Optional:
        return cls(value, True)

    @property
    def has_value(self) -> bool:
        return self._has

    @property
    def value(self) -> Any:
        return self._value

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, Optional):
            return False
        if not self._has or not other._has:
            return self._has == other._has
        return bool(equals(self._value, other._value))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"optional.of({self._value!r})" if self._has else "optional.none()"


class _Namespace:
    """The receiver of namespaced calls such as `sets.contains(a, b)` or `optional.none()`.

    celpy parses `sets.contains(a, b)` as a method call on a variable `sets`, so each namespace
    is bound as a variable holding one of these markers and the functions dispatch on it.
    """

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


_NAMESPACES = {
    name: _Namespace(name) for name in ("optional", "sets", "strings", "math", "format", "base64")
}


def equals(a: Any, b: Any) -> Any:
    """Heterogeneous CEL equality (cel-go semantics): values of different types are unequal.

    Returns a BoolType, or the first argument that is an error value.
    """
    if isinstance(a, CELEvalError):
        return a
    if isinstance(b, CELEvalError):
        return b
    return celtypes.BoolType(_eq(a, b))


def _eq(a: Any, b: Any) -> bool:
    if callable(a) or callable(b):  # type values: `type(x) == string`
        return _TYPE_ALIASES.get(a, a) is _TYPE_ALIASES.get(b, b)
    if isinstance(a, _BOOL) or isinstance(b, _BOOL):
        return isinstance(a, _BOOL) and isinstance(b, _BOOL) and bool(a) == bool(b)
    if _is_number(a) and _is_number(b):
        return float(a) == float(b) if isinstance(a, float) or isinstance(b, float) else a == b
    if isinstance(a, str) and isinstance(b, str):
        return str.__eq__(a, b)
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return False
        if isinstance(a, MapList) or isinstance(b, MapList):
            ml = a if isinstance(a, MapList) else cast(MapList, b)
            other = {ml.key_of(x): x for x in b}
            if len(other) != len(b):
                return all(_eq(x, y) for x, y in zip(a, b, strict=True))
            for x in a:
                y = other.get(ml.key_of(x), _MISSING)
                if y is _MISSING or not _eq(x, y):
                    return False
            return True
        if isinstance(a, SetList) or isinstance(b, SetList):
            return all(any(_eq(x, y) for y in b) for x in a) and all(
                any(_eq(y, x) for x in a) for y in b
            )
        return all(_eq(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        if len(a) != len(b):
            return False
        for k, v in a.items():
            if k not in b or not _eq(v, b[k]):
                return False
        return True
    a_null = a is None or isinstance(a, celtypes.NullType)
    b_null = b is None or isinstance(b, celtypes.NullType)
    if a_null or b_null:
        return a_null and b_null
    if isinstance(a, Optional) or isinstance(b, Optional):
        return bool(a == b)
    if type(a) is not type(b) and not (isinstance(a, type(b)) or isinstance(b, type(a))):
        return False
    try:
        return bool(a == b)
    except TypeError:
        return False


_MISSING: Any = object()


def _not_equals(a: Any, b: Any) -> Any:
    result = equals(a, b)
    return result if isinstance(result, CELEvalError) else celtypes.BoolType(not result)


def _plain(v: Any) -> Any:
    """A CEL number as a plain Python number, so that mixed int/double comparisons are exact."""
    return int(v) if isinstance(v, int) else float(v)


def _ordered(op: Callable[[Any, Any], bool]) -> Callable[[Any, Any], Any]:
    """A relational operator: same-type operands, plus cel-go's cross-type numeric comparisons."""

    def compare(a: Any, b: Any) -> Any:
        if isinstance(a, CELEvalError):
            return a
        if isinstance(b, CELEvalError):
            return b
        if _is_number(a) and _is_number(b):
            return celtypes.BoolType(op(_plain(a), _plain(b)))
        if _is_bool(a) and _is_bool(b):
            return celtypes.BoolType(op(bool(a), bool(b)))
        if isinstance(a, str) and isinstance(b, str):
            return celtypes.BoolType(op(str(a), str(b)))
        if isinstance(a, bytes) and isinstance(b, bytes):
            return celtypes.BoolType(op(bytes(a), bytes(b)))
        for kind in (celtypes.TimestampType, celtypes.DurationType):
            if isinstance(a, kind) and isinstance(b, kind):
                return celtypes.BoolType(op(a, b))
        raise TypeError("no such overload")

    return compare


_less = _ordered(operator.lt)
_less_equal = _ordered(operator.le)
_greater = _ordered(operator.gt)
_greater_equal = _ordered(operator.ge)


def _add(a: Any, b: Any) -> Any:
    """`+`, keeping CEL types: Python's str and list concatenation return plain str / list."""
    result = operator.add(a, b)
    if type(result) is str:
        return celtypes.StringType(result)
    if type(result) is list:
        return celtypes.ListType(result)
    return result


def _in(item: Any, container: Any) -> Any:
    """`x in list` / `k in map` with heterogeneous equality."""
    if isinstance(item, CELEvalError):
        return item
    if isinstance(container, CELEvalError):
        return container
    if isinstance(container, list):
        return celtypes.BoolType(any(_eq(x, item) for x in container))
    if isinstance(container, dict):
        try:
            return celtypes.BoolType(item in container)
        except TypeError:
            return celtypes.BoolType(False)
    raise TypeError("no such overload")


# --------------------------------------------------------------------------------------------
# Extension functions. Each takes celpy values; an error is returned as a CELEvalError value.


def _check_str(*values: Any) -> None:
    for v in values:
        if not isinstance(v, str):
            raise TypeError("no such overload")


def _check_int(*values: Any) -> None:
    for v in values:
        if not isinstance(v, int) or isinstance(v, _BOOL):
            raise TypeError("no such overload")


def _char_at(s: Any, i: Any) -> Any:
    _check_str(s)
    _check_int(i)
    if i < 0 or i > len(s):
        return _err(f"index out of range: {i}")
    return celtypes.StringType(s[i] if i < len(s) else "")


def _index_of(target: Any, item: Any, offset: Any = None) -> Any:
    if isinstance(target, list):
        if offset is not None:
            raise TypeError("no such overload")
        for i, v in enumerate(target):
            if _eq(v, item):
                return celtypes.IntType(i)
        return celtypes.IntType(-1)
    _check_str(target, item)
    start = 0
    if offset is not None:
        _check_int(offset)
        start = int(offset)
        if start < 0 or start > len(target):
            return _err(f"index out of range: {start}")
    return celtypes.IntType(target.find(item, start))


def _last_index_of(target: Any, item: Any, offset: Any = None) -> Any:
    if isinstance(target, list):
        if offset is not None:
            raise TypeError("no such overload")
        for i in range(len(target) - 1, -1, -1):
            if _eq(target[i], item):
                return celtypes.IntType(i)
        return celtypes.IntType(-1)
    _check_str(target, item)
    if offset is None:
        return celtypes.IntType(target.rfind(item))
    _check_int(offset)
    if offset < 0 or offset >= max(len(target), 1):
        return _err(f"index out of range: {offset}")
    return celtypes.IntType(target.rfind(item, 0, int(offset) + len(item)))


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_ASCII_UPPER = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _lower_ascii(s: Any) -> Any:
    _check_str(s)
    return celtypes.StringType(s.translate(_ASCII_LOWER))


def _upper_ascii(s: Any) -> Any:
    _check_str(s)
    return celtypes.StringType(s.translate(_ASCII_UPPER))


def _replace(s: Any, old: Any, new: Any, n: Any = None) -> Any:
    _check_str(s, old, new)
    count = -1
    if n is not None:
        _check_int(n)
        count = int(n)
    return celtypes.StringType(s.replace(old, new, count if count >= 0 else -1))


def _split(s: Any, sep: Any, n: Any = None) -> Any:
    """Go's strings.SplitN: n == 0 gives no pieces, n < 0 all of them, "" splits runes."""
    _check_str(s, sep)
    limit = -1
    if n is not None:
        _check_int(n)
        limit = int(n)
    if limit == 0:
        return celtypes.ListType()
    if sep == "":
        chars = list(s)
        if 0 < limit < len(chars):
            chars = [*chars[: limit - 1], "".join(chars[limit - 1 :])]
        return celtypes.ListType(celtypes.StringType(c) for c in chars)
    parts = s.split(sep, limit - 1) if limit > 0 else s.split(sep)
    return celtypes.ListType(celtypes.StringType(p) for p in parts)


def _substring(s: Any, start: Any, end: Any = None) -> Any:
    _check_str(s)
    _check_int(start)
    stop = len(s) if end is None else end
    _check_int(stop)
    if start < 0 or start > len(s):
        return _err(f"index out of range: {start}")
    if stop < 0 or stop > len(s):
        return _err(f"index out of range: {stop}")
    if start > stop:
        return _err(f"invalid substring range. start: {start}, end: {stop}")
    return celtypes.StringType(s[start:stop])


def _trim(s: Any) -> Any:
    _check_str(s)
    return celtypes.StringType(s.strip())


def _join(items: Any, sep: Any = "") -> Any:
    if not isinstance(items, list):
        raise TypeError("no such overload")
    _check_str(sep, *items)
    return celtypes.StringType(sep.join(items))


def _reverse(target: Any) -> Any:
    if isinstance(target, str):
        return celtypes.StringType(target[::-1])
    if isinstance(target, list):
        return celtypes.ListType(reversed(target))
    raise TypeError("no such overload")


def _quote(ns: Any, s: Any) -> Any:
    if not (isinstance(ns, _Namespace) and ns.name == "strings"):
        raise TypeError("no such overload")
    _check_str(s)
    return celtypes.StringType(json.dumps(str(s), ensure_ascii=False))


def _to_display(v: Any) -> str:
    """How `%s` prints a value in cel-go's `format`."""
    if isinstance(v, _BOOL):
        return "true" if v else "false"
    if v is None or isinstance(v, celtypes.NullType):
        return "null"
    if isinstance(v, str):
        return str(v)
    if isinstance(v, float):
        return go_float(float(v))
    if isinstance(v, list):
        return "[" + ", ".join(_to_display(x) for x in v) + "]"
    if isinstance(v, dict):
        items = sorted((_to_display(k), _to_display(x)) for k, x in v.items())
        return "{" + ", ".join(f"{k}: {x}" for k, x in items) + "}"
    if isinstance(v, celtypes.DurationType):
        return go_float(v.total_seconds()) + "s"
    if isinstance(v, celtypes.TimestampType):
        return v.strftime("%Y-%m-%dT%H:%M:%SZ")
    return str(v)


def re2_compile(pattern: str) -> Any:
    """Compile with RE2 (the regex dialect of Go and cel-go); ValueError if it is invalid."""
    try:
        return _re2.compile(pattern, _RE2_OPTIONS)
    except _re2.error as ex:
        raise ValueError(str(ex)) from None


_FORMAT_RE = re.compile(r"%(?:\.(\d+))?([sdfeExXobc%])")


def _format(template: Any, args: Any) -> Any:
    """cel-go's `string.format(list)`: %s %d %f %e %x %X %o %b and %%, with `.N` precision."""
    _check_str(template)
    if not isinstance(args, list):
        raise TypeError("no such overload")
    out: list[str] = []
    pos = 0
    arg_i = 0
    for m in _FORMAT_RE.finditer(template):
        out.append(template[pos : m.start()])
        pos = m.end()
        precision, verb = m.group(1), m.group(2)
        if verb == "%":
            out.append("%")
            continue
        if arg_i >= len(args):
            return _err(f"index {arg_i} out of range")
        arg = args[arg_i]
        arg_i += 1
        try:
            if verb == "s":
                out.append(_to_display(arg))
            elif verb == "d":
                _check_int(arg)
                out.append(str(int(arg)))
            elif verb in "fe":
                if not _is_number(arg):
                    raise TypeError("no such overload")
                p = 6 if precision is None else int(precision)
                out.append(format(float(arg), f".{p}{verb}"))
            elif verb in "xX":
                if isinstance(arg, str):
                    text = arg.encode().hex()
                elif isinstance(arg, bytes):
                    text = arg.hex()
                else:
                    _check_int(arg)
                    text = format(int(arg), "x")
                out.append(text.upper() if verb == "X" else text)
            elif verb == "o":
                _check_int(arg)
                out.append(format(int(arg), "o"))
            elif verb == "b":
                if isinstance(arg, _BOOL):
                    out.append("1" if arg else "0")
                else:
                    _check_int(arg)
                    out.append(format(int(arg), "b"))
            else:
                return _err(f"unrecognized formatting clause: %{verb}")
        except TypeError:
            return _err(f"error during formatting: invalid argument for %{verb}: {arg!r}")
    out.append(template[pos:])
    return celtypes.StringType("".join(out))


def _is_sorted(items: Any) -> Any:
    if not isinstance(items, list):
        raise TypeError("no such overload")
    for x, y in itertools.pairwise(items):
        res = _less_equal(x, y)
        if isinstance(res, CELEvalError):
            return res
        if not res:
            return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _sum(items: Any) -> Any:
    if not isinstance(items, list):
        raise TypeError("no such overload")
    if not items:
        return celtypes.IntType(0)
    total = items[0]
    for v in items[1:]:
        total = total + v
    return total


def _extreme(items: Any, pick_max: bool) -> Any:
    if not isinstance(items, list):
        raise TypeError("no such overload")
    if not items:
        return _err(f"{'max' if pick_max else 'min'} called on empty list")
    best = items[0]
    better = _greater if pick_max else _less
    for v in items[1:]:
        if better(v, best):
            best = v
    return best


def _max(target: Any, *rest: Any) -> Any:
    if isinstance(target, _Namespace):
        return _math_extreme(target, True, rest)
    return _extreme(target, True)


def _min(target: Any, *rest: Any) -> Any:
    if isinstance(target, _Namespace):
        return _math_extreme(target, False, rest)
    return _extreme(target, False)


def _slice(items: Any, start: Any, end: Any) -> Any:
    if not isinstance(items, list):
        raise TypeError("no such overload")
    _check_int(start, end)
    if start < 0 or end < 0 or start > end or end > len(items):
        return _err(f"cannot slice({start}, {end}) a list of size {len(items)}")
    return celtypes.ListType(items[start:end])


def _flatten(items: Any, depth: Any = 1) -> Any:
    if not isinstance(items, list):
        raise TypeError("no such overload")
    _check_int(depth)
    if depth < 0:
        return _err("level must be non-negative")
    out: list[Any] = []

    def walk(xs: list[Any], level: int) -> None:
        for x in xs:
            if isinstance(x, list) and level > 0:
                walk(x, level - 1)
            else:
                out.append(x)

    walk(items, int(depth))
    return celtypes.ListType(out)


def _distinct(items: Any) -> Any:
    if not isinstance(items, list):
        raise TypeError("no such overload")
    out: list[Any] = []
    for x in items:
        if not any(_eq(x, y) for y in out):
            out.append(x)
    return celtypes.ListType(out)


def _sort(items: Any) -> Any:
    if not isinstance(items, list):
        raise TypeError("no such overload")
    return celtypes.ListType(sorted(items))


def _find(s: Any, pattern: Any) -> Any:
    _check_str(s, pattern)
    try:
        m = _re2.search(pattern, s)
    except _re2.error as ex:
        return _err(f"error parsing regexp: {ex}")
    return celtypes.StringType(m.group(0) if m else "")


def _find_all(s: Any, pattern: Any, limit: Any = -1) -> Any:
    _check_str(s, pattern)
    _check_int(limit)
    if limit == 0:
        return celtypes.ListType()
    try:
        compiled = _re2.compile(pattern)
    except _re2.error as ex:
        return _err(f"error parsing regexp: {ex}")
    out: list[Any] = []
    for m in compiled.finditer(s):
        out.append(celtypes.StringType(m.group(0)))
        if 0 < limit <= len(out):
            break
    return celtypes.ListType(out)


def _contains(target: Any, *args: Any) -> Any:
    if isinstance(target, _Namespace):
        if target.name != "sets" or len(args) != 2:
            raise TypeError("no such overload")
        a, b = args
        return celtypes.BoolType(all(any(_eq(x, y) for y in a) for x in b))
    (item,) = args
    if isinstance(target, str):
        _check_str(item)
        return celtypes.BoolType(item in target)
    if isinstance(target, list):
        return celtypes.BoolType(any(_eq(x, item) for x in target))
    if isinstance(target, dict):
        return celtypes.BoolType(item in target)
    raise TypeError("no such overload")


def _sets_only(ns: Any) -> None:
    if not (isinstance(ns, _Namespace) and ns.name == "sets"):
        raise TypeError("no such overload")


def _sets_equivalent(ns: Any, a: Any, b: Any) -> Any:
    _sets_only(ns)
    return celtypes.BoolType(
        all(any(_eq(x, y) for y in b) for x in a) and all(any(_eq(x, y) for y in a) for x in b)
    )


def _sets_intersects(ns: Any, a: Any, b: Any) -> Any:
    _sets_only(ns)
    return celtypes.BoolType(any(any(_eq(x, y) for y in b) for x in a))


def _math_extreme(ns: Any, pick_max: bool, args: tuple[Any, ...]) -> Any:
    if ns.name != "math" or not args:
        raise TypeError("no such overload")
    values = list(args[0]) if len(args) == 1 and isinstance(args[0], list) else list(args)
    if not values:
        return _err(f"math.{'greatest' if pick_max else 'least'}() requires at least one argument")
    for v in values:
        if not _is_number(v):
            raise TypeError("no such overload")
    return max(values, key=float) if pick_max else min(values, key=float)


def _greatest(ns: Any, *args: Any) -> Any:
    return _math_extreme(ns, True, args)


def _least(ns: Any, *args: Any) -> Any:
    return _math_extreme(ns, False, args)


# Optionals ------------------------------------------------------------------------------------


def _optional_ns(ns: Any) -> None:
    if not (isinstance(ns, _Namespace) and ns.name == "optional"):
        raise TypeError("no such overload")


def _opt_none(ns: Any) -> Any:
    _optional_ns(ns)
    return Optional.none()


def _opt_of(ns: Any, value: Any) -> Any:
    _optional_ns(ns)
    return Optional.of(value)


def _opt_of_non_zero(ns: Any, value: Any) -> Any:
    _optional_ns(ns)
    zero = value is None or (not isinstance(value, Optional) and not value)
    return Optional.none() if zero else Optional.of(value)


def _has_value(opt: Any) -> Any:
    if not isinstance(opt, Optional):
        raise TypeError("no such overload")
    return celtypes.BoolType(opt.has_value)


def _value(opt: Any) -> Any:
    if not isinstance(opt, Optional):
        raise TypeError("no such overload")
    if not opt.has_value:
        return _err("optional.none() dereference")
    return opt.value


def _or_value(opt: Any, default: Any) -> Any:
    if not isinstance(opt, Optional):
        raise TypeError("no such overload")
    return opt.value if opt.has_value else default


# Named formats (Kubernetes' `format` library) ---------------------------------------------------

_UUID_RE = re.compile(
    r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
)
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATETIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def _format_errors(name: str, s: str) -> list[str]:
    if name.endswith("Prefix"):  # a generateName prefix: may end in '-'
        s = s[:-1] if s.endswith("-") else s
        name = name.removesuffix("Prefix")
    # The same checks as kube-apiserver's CEL format library: apimachinery's validation.
    checks = {
        "dns1123Label": names.is_dns1123_label,
        "dns1123Subdomain": names.is_dns1123_subdomain,
        "dns1035Label": names.is_dns1035_label,
        "qualifiedName": names.is_qualified_name,
        "labelValue": names.is_valid_label_value,
    }
    if name in checks:
        return checks[name](s)
    if name == "uri":
        parsed = _parse_url(s)
        return [] if parsed is not None and parsed.parts.scheme else ["invalid URI"]
    if name == "uuid":
        return [] if _UUID_RE.match(s) else ["does not match the UUID format"]
    if name == "byte":
        try:
            base64.b64decode(s, validate=True)
        except ValueError:
            return ["invalid base64"]
        return []
    if name == "date":
        return [] if _DATE_RE.match(s) else ["invalid date"]
    if name == "datetime":
        return [] if _DATETIME_RE.match(s) else ["invalid datetime"]
    return [f"unknown format: {name}"]


_FORMAT_NAMES = (
    "dns1123Label",
    "dns1123Subdomain",
    "dns1035Label",
    "qualifiedName",
    "dns1123LabelPrefix",
    "dns1123SubdomainPrefix",
    "dns1035LabelPrefix",
    "labelValue",
    "uri",
    "uuid",
    "byte",
    "date",
    "datetime",
)


class _Format:
    """A named format from `format.<name>()`; `validate(s)` returns optional error messages."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, _Format) and other.name == self.name

    __hash__ = None  # type: ignore[assignment]


def _format_ctor(name: str) -> Callable[[Any], Any]:
    def make(ns: Any) -> Any:
        if not (isinstance(ns, _Namespace) and ns.name == "format"):
            raise TypeError("no such overload")
        return _Format(name)

    return make


def _format_named(ns: Any, name: Any) -> Any:
    if not (isinstance(ns, _Namespace) and ns.name == "format"):
        raise TypeError("no such overload")
    _check_str(name)
    return Optional.of(_Format(name)) if name in _FORMAT_NAMES else Optional.none()


def _format_validate(fmt: Any, s: Any) -> Any:
    if not isinstance(fmt, _Format):
        raise TypeError("no such overload")
    _check_str(s)
    errors = _format_errors(fmt.name, str(s))
    if not errors:
        return Optional.none()
    return Optional.of(celtypes.ListType(celtypes.StringType(e) for e in errors))


# base64 and math ---------------------------------------------------------------------------------


def _b64_encode(ns: Any, data: Any) -> Any:
    if not (isinstance(ns, _Namespace) and ns.name == "base64") or not isinstance(data, bytes):
        raise TypeError("no such overload")
    return celtypes.StringType(base64.b64encode(data).decode())


def _b64_decode(ns: Any, text: Any) -> Any:
    if not (isinstance(ns, _Namespace) and ns.name == "base64"):
        raise TypeError("no such overload")
    _check_str(text)
    try:
        padded = text + "=" * (-len(text) % 4)
        return celtypes.BytesType(base64.b64decode(padded, validate=True))
    except ValueError:
        return _err("illegal base64 data")


def _math_unary(name: str) -> Callable[..., Any]:
    def apply(ns: Any, x: Any) -> Any:
        if not (isinstance(ns, _Namespace) and ns.name == "math") or not _is_number(x):
            raise TypeError("no such overload")
        if name in ("isNaN", "isInf", "isFinite"):
            f = float(x)
            result = {"isNaN": f != f, "isInf": f in (math.inf, -math.inf)}.get(
                name, f == f and f not in (math.inf, -math.inf)
            )
            return celtypes.BoolType(result)
        if name == "abs":
            if isinstance(x, celtypes.IntType) and x == -(2**63):
                return _err("integer overflow")
            return type(x)(abs(x))
        if name == "sign":
            return type(x)((x > 0) - (x < 0))
        f = float(x)
        if not isinstance(x, float):
            raise TypeError("no such overload")
        if name == "ceil":
            return celtypes.DoubleType(math.ceil(f) if math.isfinite(f) else f)
        if name == "floor":
            return celtypes.DoubleType(math.floor(f) if math.isfinite(f) else f)
        if name == "trunc":
            return celtypes.DoubleType(math.trunc(f) if math.isfinite(f) else f)
        # round: half away from zero, like Go's math.Round
        if not math.isfinite(f):
            return celtypes.DoubleType(f)
        return celtypes.DoubleType(math.copysign(math.floor(abs(f) + 0.5), f))

    return apply


# Quantities (k8s.io/apimachinery resource.Quantity) --------------------------------------------

_QUANTITY_RE = re.compile(
    r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))((?:[KMGTPE]i)|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)
_SUFFIX = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50,
    "Ei": Decimal(2) ** 60,
}


class _Quantity:
    """A Kubernetes resource quantity such as `500m` or `1Gi`, compared by value."""

    __slots__ = ("text", "value")

    def __init__(self, text: str, value: Decimal) -> None:
        self.text = text
        self.value = value

    @classmethod
    def parse(cls, text: str) -> _Quantity | None:
        m = _QUANTITY_RE.match(text)
        if not m:
            return None
        number, suffix = m.group(1), m.group(2) or ""
        try:
            if suffix[:1] in ("e", "E"):
                value = Decimal(number) * (Decimal(10) ** int(suffix[1:]))
            else:
                value = Decimal(number) * _SUFFIX[suffix]
        except (InvalidOperation, KeyError):
            return None
        return cls(text, value)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, _Quantity) and self.value == other.value

    __hash__ = None  # type: ignore[assignment]

    def __str__(self) -> str:
        return self.text


def _quantity(s: Any) -> Any:
    _check_str(s)
    q = _Quantity.parse(s)
    return q if q is not None else _err(f"quantities must match the regular expression: {s}")


def _is_quantity(s: Any) -> Any:
    _check_str(s)
    return celtypes.BoolType(_Quantity.parse(s) is not None)


def _as_quantity(v: Any) -> _Quantity:
    if isinstance(v, _Quantity):
        return v
    if isinstance(v, int) and not isinstance(v, _BOOL):
        return _Quantity(str(v), Decimal(int(v)))
    raise TypeError("no such overload")


def _q_is_integer(q: Any) -> Any:
    q = _as_quantity(q)
    return celtypes.BoolType(q.value == q.value.to_integral_value())


def _q_as_integer(q: Any) -> Any:
    q = _as_quantity(q)
    if q.value != q.value.to_integral_value() or not -(2**63) <= q.value < 2**63:
        return _err("cannot convert value to integer")
    return celtypes.IntType(int(q.value))


def _q_as_float(q: Any) -> Any:
    return celtypes.DoubleType(float(_as_quantity(q).value))


def _sign(q: Any) -> Any:
    value = _as_quantity(q).value
    return celtypes.IntType((value > 0) - (value < 0))


def _sign_dispatch(target: Any, *args: Any) -> Any:
    if isinstance(target, _Namespace):
        return _math_unary("sign")(target, *args)
    return _sign(target)


def _q_add(q: Any, other: Any) -> Any:
    a, b = _as_quantity(q), _as_quantity(other)
    return _Quantity(str(a.value + b.value), a.value + b.value)


def _q_sub(q: Any, other: Any) -> Any:
    a, b = _as_quantity(q), _as_quantity(other)
    return _Quantity(str(a.value - b.value), a.value - b.value)


def _compare_to(q: Any, other: Any) -> Any:
    a, b = _as_quantity(q).value, _as_quantity(other).value
    return celtypes.IntType((a > b) - (a < b))


def _is_greater(q: Any, other: Any) -> Any:
    return celtypes.BoolType(_as_quantity(q).value > _as_quantity(other).value)


def _is_less(q: Any, other: Any) -> Any:
    return celtypes.BoolType(_as_quantity(q).value < _as_quantity(other).value)


# URLs ------------------------------------------------------------------------------------------


class _URL:
    __slots__ = ("parts", "text")

    def __init__(self, text: str, parts: urllib.parse.SplitResult) -> None:
        self.text = text
        self.parts = parts

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, _URL) and self.text == other.text

    __hash__ = None  # type: ignore[assignment]


def _parse_url(s: str) -> _URL | None:
    try:
        parts = urllib.parse.urlsplit(s)
        _ = parts.port
    except ValueError:
        return None
    if not (parts.scheme or s.startswith("/")) or any(c.isspace() for c in s):
        return None
    return _URL(s, parts)


def _url(s: Any) -> Any:
    _check_str(s)
    u = _parse_url(s)
    return u if u is not None else _err(f"URL parse error during conversion from string: {s}")


def _is_url(s: Any) -> Any:
    _check_str(s)
    return celtypes.BoolType(_parse_url(s) is not None)


def _url_part(name: str) -> Callable[[Any], Any]:
    def get(u: Any) -> Any:
        if not isinstance(u, _URL):
            raise TypeError("no such overload")
        p = u.parts
        if name == "scheme":
            return celtypes.StringType(p.scheme)
        if name == "host":
            return celtypes.StringType(p.netloc.rsplit("@", 1)[-1])
        if name == "hostname":
            return celtypes.StringType(p.hostname or "")
        if name == "port":
            return celtypes.StringType("" if p.port is None else str(p.port))
        if name == "path":
            return celtypes.StringType(p.path)
        query: dict[Any, Any] = {}
        for k, v in urllib.parse.parse_qs(p.query, keep_blank_values=True).items():
            query[celtypes.StringType(k)] = celtypes.ListType(celtypes.StringType(x) for x in v)
        return celtypes.MapType(query)

    return get


# IP addresses and CIDRs ------------------------------------------------------------------------

_IPAddr = ipaddress.IPv4Address | ipaddress.IPv6Address
_IPNet = ipaddress.IPv4Network | ipaddress.IPv6Network


class _IP:
    __slots__ = ("addr",)

    def __init__(self, addr: _IPAddr) -> None:
        self.addr = addr

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, _IP) and self.addr == other.addr

    __hash__ = None  # type: ignore[assignment]

    def __str__(self) -> str:
        return str(self.addr)


class _CIDR:
    __slots__ = ("addr", "net")

    def __init__(self, addr: _IPAddr, net: _IPNet) -> None:
        self.addr = addr
        self.net = net

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, _CIDR) and (self.addr, self.net) == (other.addr, other.net)

    __hash__ = None  # type: ignore[assignment]

    def __str__(self) -> str:
        return f"{self.addr}/{self.net.prefixlen}"


def _parse_ip(s: str) -> _IP | None:
    if "%" in s:  # zones are rejected by Kubernetes' ip library
        return None
    try:
        addr = ipaddress.ip_address(s)
    except ValueError:
        return None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return None
    return _IP(addr)


def _parse_cidr(s: str) -> _CIDR | None:
    if "/" not in s:
        return None
    ip_text, _, _ = s.partition("/")
    ip = _parse_ip(ip_text)
    if ip is None:
        return None
    try:
        net = ipaddress.ip_network(s, strict=False)
    except ValueError:
        return None
    return _CIDR(ip.addr, net)


def _ip(v: Any) -> Any:
    if isinstance(v, _CIDR):
        return _IP(v.addr)
    _check_str(v)
    ip = _parse_ip(v)
    return ip if ip is not None else _err(f"IP Address {v!r} parse error during conversion")


def _is_ip(s: Any) -> Any:
    _check_str(s)
    return celtypes.BoolType(_parse_ip(s) is not None)


def _cidr(s: Any) -> Any:
    _check_str(s)
    c = _parse_cidr(s)
    return c if c is not None else _err(f"network address parse error during conversion: {s}")


def _is_cidr(s: Any) -> Any:
    _check_str(s)
    return celtypes.BoolType(_parse_cidr(s) is not None)


def _ip_prop(name: str) -> Callable[[Any], Any]:
    def get(ip: Any) -> Any:
        if not isinstance(ip, _IP):
            raise TypeError("no such overload")
        a = ip.addr
        if name == "family":
            return celtypes.IntType(a.version)
        if name == "isUnspecified":
            return celtypes.BoolType(a.is_unspecified)
        if name == "isLoopback":
            return celtypes.BoolType(a.is_loopback)
        if name == "isLinkLocalMulticast":
            net = "224.0.0.0/24" if a.version == 4 else "ff02::/16"
            return celtypes.BoolType(a in ipaddress.ip_network(net))
        if name == "isLinkLocalUnicast":
            return celtypes.BoolType(a.is_link_local and not a.is_multicast)
        # isGlobalUnicast, with Go's meaning: not any of the special ranges above
        return celtypes.BoolType(
            not (a.is_unspecified or a.is_loopback or a.is_multicast or a.is_link_local)
            and a != ipaddress.IPv4Address("255.255.255.255")
        )

    return get


def _contains_ip(c: Any, other: Any) -> Any:
    if not isinstance(c, _CIDR):
        raise TypeError("no such overload")
    ip = _parse_ip(other) if isinstance(other, str) else other
    if not isinstance(ip, _IP):
        return _err(f"IP Address {other!r} parse error")
    return celtypes.BoolType(ip.addr.version == c.net.version and ip.addr in c.net)


def _contains_cidr(c: Any, other: Any) -> Any:
    if not isinstance(c, _CIDR):
        raise TypeError("no such overload")
    sub = _parse_cidr(other) if isinstance(other, str) else other
    if not isinstance(sub, _CIDR):
        return _err(f"network address {other!r} parse error")
    if sub.net.version != c.net.version:
        return celtypes.BoolType(False)
    return celtypes.BoolType(sub.net.subnet_of(c.net))  # type: ignore[arg-type]


def _prefix_length(c: Any) -> Any:
    if not isinstance(c, _CIDR):
        raise TypeError("no such overload")
    return celtypes.IntType(c.net.prefixlen)


def _masked(c: Any) -> Any:
    if not isinstance(c, _CIDR):
        raise TypeError("no such overload")
    return _CIDR(c.net.network_address, c.net)


# Conversions that celpy gets wrong for cel-go ---------------------------------------------------


def _string(v: Any) -> Any:
    if isinstance(v, _BOOL):
        return celtypes.StringType("true" if v else "false")
    if isinstance(v, bytes):
        try:
            return celtypes.StringType(v.decode("utf-8"))
        except UnicodeDecodeError:
            return _err("invalid UTF-8 in bytes, cannot convert to string")
    if isinstance(v, float):
        return celtypes.StringType(go_float(float(v)))
    if isinstance(v, _Quantity | _URL | _IP | _CIDR):
        return celtypes.StringType(v.text if isinstance(v, _Quantity | _URL) else str(v))
    if isinstance(v, celtypes.TimestampType):
        return celtypes.StringType(_to_display(v))
    if isinstance(v, list | dict):
        raise TypeError("no such overload")
    return celtypes.StringType(v)


def _bool(v: Any) -> Any:
    if isinstance(v, _BOOL):
        return celtypes.BoolType(v)
    if isinstance(v, str):
        if v in ("1", "t", "T", "true", "TRUE", "True"):
            return celtypes.BoolType(True)
        if v in ("0", "f", "F", "false", "FALSE", "False"):
            return celtypes.BoolType(False)
        return _err(f"type conversion error from 'string' to 'bool': {v!r}")
    raise TypeError("no such overload")


def _int(v: Any) -> Any:
    if isinstance(v, _BOOL):
        raise TypeError("no such overload")
    if isinstance(v, str):
        try:
            value = int(v, 10)
        except ValueError:
            return _err(f"type conversion error from 'string' to 'int': {v!r}")
    elif isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            return _err("integer overflow")
        value = int(v)
    elif isinstance(v, celtypes.TimestampType):
        value = int(v.timestamp())
    elif isinstance(v, int):
        value = int(v)
    else:
        raise TypeError("no such overload")
    if not -(2**63) <= value < 2**63:
        return _err("integer overflow")
    return celtypes.IntType(value)


def _duration(v: Any) -> Any:
    if isinstance(v, celtypes.DurationType):
        return v
    _check_str(v)
    try:
        return celtypes.DurationType(str(v))
    except (ValueError, TypeError, OverflowError):
        return _err("type conversion error from 'string' to 'google.protobuf.Duration'")


def _timestamp(v: Any) -> Any:
    if isinstance(v, celtypes.TimestampType):
        return v
    if isinstance(v, int) and not isinstance(v, _BOOL):
        return celtypes.TimestampType(datetime.datetime.fromtimestamp(int(v), datetime.UTC))
    _check_str(v)
    if not _RFC3339.match(v):
        return _err("type conversion error from 'string' to 'google.protobuf.Timestamp'")
    try:
        return celtypes.TimestampType(str(v))
    except (ValueError, TypeError, OverflowError):
        return _err("type conversion error from 'string' to 'google.protobuf.Timestamp'")


_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def _bytes(v: Any) -> Any:
    if isinstance(v, bytes):
        return celtypes.BytesType(v)
    _check_str(v)
    return celtypes.BytesType(str(v).encode())


def _logical_or(x: Any, y: Any) -> Any:
    """`||` with cel-go's error absorption: `true || error` is true, `error || error` the first."""
    if _is_bool(x) and x:
        return x
    if _is_bool(y) and y:
        return y
    if isinstance(x, CELEvalError):
        return x
    if isinstance(y, CELEvalError):
        return y
    if _is_bool(x) and _is_bool(y):
        return celtypes.BoolType(False)
    return _err("no such overload")


def _logical_and(x: Any, y: Any) -> Any:
    """`&&` with error absorption: `false && error` is false, `error && error` the first."""
    if _is_bool(x) and not x:
        return x
    if _is_bool(y) and not y:
        return y
    if isinstance(x, CELEvalError):
        return x
    if isinstance(y, CELEvalError):
        return y
    if _is_bool(x) and _is_bool(y):
        return celtypes.BoolType(True)
    return _err("no such overload")


def _index(container: Any, index: Any) -> Any:
    """`a[i]` with cel-go's error texts."""
    if isinstance(container, CELEvalError):
        return container
    if isinstance(index, CELEvalError):
        return index
    if isinstance(container, list):
        if isinstance(index, float) and index.is_integer():
            index = int(index)
        _check_int(index)
        if not 0 <= index < len(container):
            return _err(f"index out of bounds: {index}")
        return container[index]
    if isinstance(container, dict):
        try:
            return container[index]
        except KeyError:
            return _err(f"no such key: {index}")
    raise TypeError("no such overload")


# `string`, `int`, ... name both a conversion function and a type; `type(x)` returns the type.
_TYPE_ALIASES: dict[Any, Any] = {
    _string: celtypes.StringType,
    _bool: celtypes.BoolType,
    _int: celtypes.IntType,
    _bytes: celtypes.BytesType,
}

# The function table ---------------------------------------------------------------------------

_FUNCTIONS: dict[str, Any] = {
    "_==_": equals,
    "_||_": _logical_or,
    "_&&_": _logical_and,
    "_[_]": _index,
    "_!=_": _not_equals,
    "_<_": _less,
    "_<=_": _less_equal,
    "_>_": _greater,
    "_>=_": _greater_equal,
    "_in_": _in,
    "_+_": _add,
    "string": _string,
    "bool": _bool,
    "int": _int,
    "bytes": _bytes,
    "duration": _duration,
    "timestamp": _timestamp,
    "contains": _contains,
    # strings
    "charAt": _char_at,
    "indexOf": _index_of,
    "lastIndexOf": _last_index_of,
    "lowerAscii": _lower_ascii,
    "upperAscii": _upper_ascii,
    "replace": _replace,
    "split": _split,
    "substring": _substring,
    "trim": _trim,
    "join": _join,
    "reverse": _reverse,
    "format": _format,
    "quote": _quote,
    # lists
    "isSorted": _is_sorted,
    "sum": _sum,
    "max": _max,
    "min": _min,
    "slice": _slice,
    "flatten": _flatten,
    "distinct": _distinct,
    "sort": _sort,
    # regex
    "find": _find,
    "findAll": _find_all,
    # sets / math
    "equivalent": _sets_equivalent,
    "intersects": _sets_intersects,
    "greatest": _greatest,
    "least": _least,
    # optionals
    "none": _opt_none,
    "of": _opt_of,
    "ofNonZeroValue": _opt_of_non_zero,
    "hasValue": _has_value,
    "value": _value,
    "orValue": _or_value,
    # named formats, base64, math
    **{name: _format_ctor(name) for name in _FORMAT_NAMES},
    "named": _format_named,
    "validate": _format_validate,
    "encode": _b64_encode,
    "decode": _b64_decode,
    **{
        name: _math_unary(name)
        for name in ("abs", "ceil", "floor", "round", "trunc", "isNaN", "isInf", "isFinite")
    },
    # quantity
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "isInteger": _q_is_integer,
    "asInteger": _q_as_integer,
    "asApproximateFloat": _q_as_float,
    "sign": _sign_dispatch,
    "add": _q_add,
    "sub": _q_sub,
    "compareTo": _compare_to,
    "isGreaterThan": _is_greater,
    "isLessThan": _is_less,
    # URLs
    "url": _url,
    "isURL": _is_url,
    "getScheme": _url_part("scheme"),
    "getHost": _url_part("host"),
    "getHostname": _url_part("hostname"),
    "getPort": _url_part("port"),
    "getEscapedPath": _url_part("path"),
    "getQuery": _url_part("query"),
    # IPs and CIDRs
    "ip": _ip,
    "isIP": _is_ip,
    "cidr": _cidr,
    "isCIDR": _is_cidr,
    "family": _ip_prop("family"),
    "isUnspecified": _ip_prop("isUnspecified"),
    "isLoopback": _ip_prop("isLoopback"),
    "isLinkLocalMulticast": _ip_prop("isLinkLocalMulticast"),
    "isLinkLocalUnicast": _ip_prop("isLinkLocalUnicast"),
    "isGlobalUnicast": _ip_prop("isGlobalUnicast"),
    "containsIP": _contains_ip,
    "containsCIDR": _contains_cidr,
    "prefixLength": _prefix_length,
    "masked": _masked,
}

# Macros expand in the evaluator; `min` is one of celpy's (`list.min()`), with cel-go's meaning.
_ALL_FUNCTIONS: dict[str, Any] = {**base_functions, **_FUNCTIONS}
_ACTIVATION = Activation(functions=_FUNCTIONS)  # only for the node types celpy evaluates

_MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})
_KNOWN_FUNCTIONS = frozenset(_FUNCTIONS) | frozenset(base_functions)
# Names that are values without being variables: type names used in `type(x) == string`.
_TYPE_NAMES = frozenset(
    {"int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type"}
)


# --------------------------------------------------------------------------------------------
# Evaluation


def _cel_type_name(v: Any) -> str:
    """The CEL name of a value's type, for error messages."""
    if _is_bool(v):
        return "bool"
    if isinstance(v, celtypes.UintType):
        return "uint"
    for kind, name in (
        (int, "int"),
        (float, "double"),
        (str, "string"),
        (bytes, "bytes"),
        (list, "list"),
        (dict, "map"),
        (celtypes.TimestampType, "google.protobuf.Timestamp"),
        (celtypes.DurationType, "google.protobuf.Duration"),
        (Optional, "optional_type"),
    ):
        if isinstance(v, kind):
            return name
    return "null_type" if v is None else type(v).__name__


_REL_OPS = {
    "relation_lt": "_<_",
    "relation_le": "_<=_",
    "relation_gt": "_>_",
    "relation_ge": "_>=_",
    "relation_eq": "_==_",
    "relation_ne": "_!=_",
    "relation_in": "_in_",
}
_ARITH_OPS = {
    "addition_add": "_+_",
    "addition_sub": "_-_",
    "multiplication_mul": "_*_",
    "multiplication_div": "_/_",
    "multiplication_mod": "_%_",
}
_literal_cache: dict[tuple[str, str], Any] = {}


class _K8sEvaluator(Evaluator):
    """A faster interpreter for celpy's parse trees, with cel-go's semantics where they differ.

    celpy's own `Evaluator` spends most of its time in `typing.cast(Tuple[...], ...)` calls
    (each builds and hashes a generic alias) and in cloning activations for every macro
    element; a JobSet rule took half a millisecond. This subclass handles the hot node types
    itself, keeps variables in a plain dict, and defers to celpy for the rest (list and map
    literals, message construction) and for literal parsing, types and standard functions.
    It also implements cel-go's `has()` (only the last field is tested; `has(a.b.c)` fails
    when `a.b` is absent) and error-absorbing `&&`, `||`, `all()` and `exists()`.
    """

    def __init__(self, ast: lark.Tree[Any], scope: dict[str, Any]):
        super().__init__(ast, _ACTIVATION)
        self.scope = scope
        self.functions = _ALL_FUNCTIONS

    def evaluate(self, context: Any = None) -> Any:
        return self.visit(self.ast)

    def sub_evaluator(self, ast: lark.Tree[Any]) -> Evaluator:
        return _K8sEvaluator(ast, self.scope)

    def _call(self, name: str, args: list[Any]) -> Any:
        for a in args:
            if isinstance(a, CELEvalError):
                return a
        func = self.functions.get(name)
        if func is None:
            return _err(f"undeclared reference to '{name}'")
        try:
            return func(*args)
        except TypeError:
            return _err("no such overload")
        except ZeroDivisionError:
            return _err("modulus by zero" if name == "_%_" else "division by zero")
        except ValueError as ex:
            if "overflow" in str(ex):
                return _err("integer overflow")
            return _err(f"type conversion error: {ex}")

    def expr(self, tree: lark.Tree[Any]) -> Any:
        children = tree.children
        if len(children) == 1:
            return self.visit(children[0])
        cond = self.visit(children[0])
        if isinstance(cond, CELEvalError):
            return cond
        if not _is_bool(cond):
            return _err("no such overload")
        return self.visit(children[1] if cond else children[2])

    def conditionalor(self, tree: lark.Tree[Any]) -> Any:
        children = tree.children
        if len(children) == 1:
            return self.visit(children[0])
        left = self.visit(children[0])
        if _is_bool(left) and left:
            return left
        return _logical_or(left, self.visit(children[1]))

    def conditionaland(self, tree: lark.Tree[Any]) -> Any:
        children = tree.children
        if len(children) == 1:
            return self.visit(children[0])
        left = self.visit(children[0])
        if _is_bool(left) and not left:
            return left
        return _logical_and(left, self.visit(children[1]))

    def relation(self, tree: lark.Tree[Any]) -> Any:
        children = tree.children
        if len(children) == 1:
            return self.visit(children[0])
        op_tree, right_tree = children
        left = self.visit(op_tree.children[0])
        right = self.visit(right_tree)
        return self._call(_REL_OPS[op_tree.data], [left, right])

    def addition(self, tree: lark.Tree[Any]) -> Any:
        children = tree.children
        if len(children) == 1:
            return self.visit(children[0])
        op_tree, right_tree = children
        left = self.visit(op_tree.children[0])
        right = self.visit(right_tree)
        return self._call(_ARITH_OPS[op_tree.data], [left, right])

    multiplication = addition

    def unary(self, tree: lark.Tree[Any]) -> Any:
        children = tree.children
        if len(children) == 1:
            return self.visit(children[0])
        op_tree, operand = children
        value = self.visit(operand)
        if isinstance(value, CELEvalError):
            return value
        if op_tree.data == "unary_not":
            return celtypes.BoolType(not value) if _is_bool(value) else _err("no such overload")
        return self._call("-_", [value])

    def member(self, tree: lark.Tree[Any]) -> Any:
        return self.visit(tree.children[0])

    def member_dot(self, tree: lark.Tree[Any]) -> Any:
        children: Any = tree.children
        member_tree, name_token = children
        target = self.visit(member_tree)
        if isinstance(target, CELEvalError):
            return target
        if isinstance(target, dict):
            value = target.get(name_token.value, _MISSING)
            if value is _MISSING:
                return _err(f"no such key: {name_token.value}")
            return value
        return _err(f"type '{_cel_type_name(target)}' does not support field selection")

    def member_index(self, tree: lark.Tree[Any]) -> Any:
        member_tree, index_tree = tree.children
        target = self.visit(member_tree)
        index = self.visit(index_tree)
        return self._call("_[_]", [target, index])

    def member_dot_arg(self, tree: lark.Tree[Any]) -> Any:
        children: Any = tree.children
        method = children[1].value
        if method in _MACROS:
            return self._macro(method, tree)
        target = self.visit(children[0])
        if method == "min" and len(children) == 2:  # celpy's list.min() macro, cel-go's min()
            return self._call("min", [target])
        args = [self.visit(c) for c in children[2].children] if len(children) > 2 else []
        return self._call(method, [target, *args])

    def _macro(self, method: str, tree: lark.Tree[Any]) -> Any:
        target = self.visit(tree.children[0])
        if isinstance(target, CELEvalError):
            return target
        if not isinstance(target, list | dict):
            return _err("no such overload")
        args: Any = tree.children[2]
        var_tree, body = args.children
        ident: Any = next(var_tree.find_data("ident"))
        var_name = ident.children[0].value
        scope = dict(self.scope)
        body_eval = _K8sEvaluator(body, scope)

        def run(item: Any) -> Any:
            scope[var_name] = item
            return body_eval.visit(body)

        if method in ("all", "exists"):
            is_all = method == "all"
            fold = _logical_and if is_all else _logical_or
            result: Any = celtypes.BoolType(is_all)
            for item in target:
                result = fold(result, run(item))
                if _is_bool(result) and bool(result) != is_all:
                    return result  # a false decides all(), a true decides exists()
            return result
        if method == "exists_one":
            count = 0
            for item in target:
                value = run(item)
                if isinstance(value, CELEvalError):
                    return value
                if not _is_bool(value):
                    return _err("no such overload")
                count += bool(value)
            return celtypes.BoolType(count == 1)
        out: list[Any] = []
        for item in target:
            value = run(item)
            if isinstance(value, CELEvalError):
                return value
            if method == "map":
                out.append(value)
            elif not _is_bool(value):
                return _err("no such overload")
            elif value:
                out.append(item)
        return celtypes.ListType(out)

    def primary(self, tree: lark.Tree[Any]) -> Any:
        child: Any = tree.children[0]
        kind = child.data
        if kind == "ident":
            name = child.children[0].value
            value = self.scope.get(name, _MISSING)
            if value is not _MISSING:
                return value
            func = self.functions.get(name)  # type names: `int`, `string`, `map`, ...
            return func if func is not None else _err(f"undeclared reference to '{name}'")
        if kind == "literal":
            return self.literal(child)
        if kind == "paren_expr":
            return self.visit(child.children[0])
        if kind == "ident_arg":
            name = child.children[0].value
            exprlist = child.children[1] if len(child.children) > 1 else None
            if name == "has":
                return self.macro_has_eval(exprlist)
            args = [self.visit(c) for c in exprlist.children] if exprlist is not None else []
            if name == "dyn" and len(args) == 1:
                return args[0]
            return self._call(name, args)
        return super().primary(tree)

    def literal(self, tree: lark.Tree[Any]) -> Any:
        token: Any = tree.children[0]
        key = (token.type, token.value)
        value = _literal_cache.get(key, _MISSING)
        if value is _MISSING:
            value = super().literal(tree)
            if not isinstance(value, CELEvalError) and len(_literal_cache) < 10_000:
                _literal_cache[key] = value
        return value

    def macro_has_eval(self, exprlist: lark.Tree[Any] | None) -> Any:
        node: Any = exprlist.children[0] if exprlist is not None and exprlist.children else None
        if not isinstance(node, lark.Tree) or node.data != "member_dot":
            return _err("invalid argument to has() macro")
        member_tree, field_token = cast(list[Any], node.children)
        target = self.visit(member_tree)
        if isinstance(target, CELEvalError):
            return target
        if isinstance(target, dict):
            return celtypes.BoolType(field_token.value in target)
        return _err(f"invalid type for field selection: {field_token}")


def _translate(ex: CELEvalError) -> CelError:
    """An error value as a CelError; the evaluator above already words errors like cel-go."""
    text = str(ex.args[0]) if ex.args else "evaluation error"
    if "no such overload" in text or "no matching overload" in text:
        return CelError("no such overload", overload=True)
    return CelError(text)


class CelProgram:
    """A compiled CEL expression, ready to be evaluated many times."""

    __slots__ = ("_ast", "_namespaces", "source", "uses_old_self")

    def __init__(self, source: str, ast: lark.Tree[Any], uses_old_self: bool, namespaces: set[str]):
        self.source = source
        self._ast = ast
        self.uses_old_self = uses_old_self
        self._namespaces = {name: _NAMESPACES[name] for name in namespaces}

    def evaluate(self, variables: dict[str, Any]) -> Any:
        """Evaluate with `variables` (CEL values); raise CelError on an evaluation error."""
        if self._namespaces:
            variables = {**variables, **self._namespaces}
        evaluator = _K8sEvaluator(self._ast, variables)
        try:
            result = evaluator.visit(self._ast)
        except CELEvalError as ex:
            raise _translate(ex) from None
        except RecursionError:
            raise CelError("max recursion depth exceeded") from None
        except (TypeError, ValueError, KeyError, AttributeError, IndexError, ArithmeticError) as ex:
            raise CelError(f"no such overload: {ex}", overload=True) from None
        if isinstance(result, CELEvalError):
            raise _translate(result)
        return result


_env_lock = threading.Lock()
_env: celpy.Environment | None = None


def _environment() -> celpy.Environment:
    global _env
    with _env_lock:
        if _env is None:
            limit = sys.getrecursionlimit()
            _env = celpy.Environment()
            # celpy raises the interpreter's recursion limit as a side effect; keep the larger.
            sys.setrecursionlimit(max(limit, sys.getrecursionlimit()))
        return _env


# Grammar levels that, with a single child, only pass their child's value through.
_PASS_THROUGH = frozenset(
    {
        "expr",
        "conditionalor",
        "conditionaland",
        "relation",
        "addition",
        "multiplication",
        "unary",
        "member",
    }
)


def _collapse(tree: lark.Tree[Any]) -> lark.Tree[Any]:
    """Drop pass-through levels from celpy's parse tree.

    celpy's grammar nests every operand ten levels deep (expr > conditionalor > ... > member >
    primary) and its interpreter visits each level; removing the levels that merely forward a
    single child makes evaluation several times faster without changing any result.
    """
    node = tree
    while node.data in _PASS_THROUGH and len(node.children) == 1:
        child = node.children[0]
        if not isinstance(child, lark.Tree):
            break
        node = child
    new_children: list[Any] = [
        _collapse(c) if isinstance(c, lark.Tree) else c for c in node.children
    ]
    return lark.Tree(node.data, new_children, node._meta)


def _static_check(ast: lark.Tree[Any], variables: frozenset[str]) -> tuple[bool, set[str]]:
    """Reject unknown identifiers and functions, as cel-go's checker would at CRD creation.

    Returns whether `oldSelf` is referenced, and which namespaces (`sets`, `optional`, ...).
    """
    macro_vars: set[str] = set()
    for node in ast.iter_subtrees():
        if node.data == "member_dot_arg" and str(node.children[1]) in _MACROS:
            args = node.children[2] if len(node.children) > 2 else None
            first = args.children[0] if isinstance(args, lark.Tree) and args.children else None
            idents = list(first.find_data("ident")) if isinstance(first, lark.Tree) else []
            if len(idents) != 1 or len(args.children) != 2:  # type: ignore[union-attr]
                raise ValueError(f"{node.children[1]}() macro needs a variable and an expression")
            macro_vars.add(str(idents[0].children[0]))
    uses_old_self = False
    namespaces: set[str] = set()
    for node in ast.iter_subtrees():
        if node.data == "ident":
            name = str(node.children[0])
            if name == "oldSelf":
                uses_old_self = True
            if name in _NAMESPACES:
                namespaces.add(name)
            elif name not in variables and name not in macro_vars and name not in _TYPE_NAMES:
                raise ValueError(f"undeclared reference to '{name}'")
        elif node.data == "ident_arg":
            name = str(node.children[0])
            if name not in ("has", "dyn") and name not in _KNOWN_FUNCTIONS:
                raise ValueError(f"undeclared reference to '{name}'")
            if name == "has":
                exprlist = node.children[1] if len(node.children) > 1 else None
                inner: Any = exprlist.children[0] if isinstance(exprlist, lark.Tree) else None
                while isinstance(inner, lark.Tree) and inner.data != "member_dot":
                    if len(inner.children) != 1:
                        break
                    inner = inner.children[0]
                if not (isinstance(inner, lark.Tree) and inner.data == "member_dot"):
                    raise ValueError("invalid argument to has() macro")
        elif node.data == "member_dot_arg":
            name = str(node.children[1])
            if name not in _MACROS and name not in _KNOWN_FUNCTIONS:
                raise ValueError(f"undeclared reference to '{name}'")
        elif node.data in ("dot_ident", "dot_ident_arg"):
            raise ValueError("leading '.' identifiers are not supported")
    return uses_old_self, namespaces


def compile_expression(source: str, variables: Iterable[str] = ("self", "oldSelf")) -> CelProgram:
    """Parse and check a CEL expression; raise ValueError with the reason if it is not valid."""
    if not source or not source.strip():
        raise ValueError("rule is not specified")
    env = _environment()
    try:
        ast = env.compile(source)
    except CELParseError as ex:
        raise ValueError(f"compilation failed: {' '.join(str(ex).split())}") from None
    except (lark.exceptions.LarkError, RecursionError) as ex:
        raise ValueError(f"compilation failed: {ex}") from None
    uses_old_self, namespaces = _static_check(ast, frozenset(variables))
    return CelProgram(source, _collapse(ast), uses_old_self, namespaces)
