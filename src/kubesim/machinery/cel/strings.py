"""cel-go's string extensions: `charAt`, `indexOf`, `lastIndexOf`, `lowerAscii`, `upperAscii`,
`replace`, `split`, `substring`, `trim`, `join`, `reverse`, `format` and `strings.quote`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from celpy import celtypes

from kubesim.machinery.cel.standard import eq
from kubesim.machinery.cel.values import (
    BOOL,
    Namespace,
    check_int,
    check_str,
    error_value,
    is_number,
    to_display,
)


def _char_at(s: Any, i: Any) -> Any:
    check_str(s)
    check_int(i)
    if i < 0 or i > len(s):
        return error_value(f"index out of range: {i}")
    return celtypes.StringType(s[i] if i < len(s) else "")


def _index_of(target: Any, item: Any, offset: Any = None) -> Any:
    if isinstance(target, list):
        if offset is not None:
            raise TypeError("no such overload")
        for i, v in enumerate(target):
            if eq(v, item):
                return celtypes.IntType(i)
        return celtypes.IntType(-1)
    check_str(target, item)
    start = 0
    if offset is not None:
        check_int(offset)
        start = int(offset)
        if start < 0 or start > len(target):
            return error_value(f"index out of range: {start}")
    return celtypes.IntType(target.find(item, start))


def _last_index_of(target: Any, item: Any, offset: Any = None) -> Any:
    if isinstance(target, list):
        if offset is not None:
            raise TypeError("no such overload")
        for i in range(len(target) - 1, -1, -1):
            if eq(target[i], item):
                return celtypes.IntType(i)
        return celtypes.IntType(-1)
    check_str(target, item)
    if offset is None:
        return celtypes.IntType(target.rfind(item))
    check_int(offset)
    if offset < 0 or offset >= max(len(target), 1):
        return error_value(f"index out of range: {offset}")
    return celtypes.IntType(target.rfind(item, 0, int(offset) + len(item)))


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


_ASCII_UPPER = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _lower_ascii(s: Any) -> Any:
    check_str(s)
    return celtypes.StringType(s.translate(_ASCII_LOWER))


def _upper_ascii(s: Any) -> Any:
    check_str(s)
    return celtypes.StringType(s.translate(_ASCII_UPPER))


def _replace(s: Any, old: Any, new: Any, n: Any = None) -> Any:
    check_str(s, old, new)
    count = -1
    if n is not None:
        check_int(n)
        count = int(n)
    return celtypes.StringType(s.replace(old, new, count if count >= 0 else -1))


def _split(s: Any, sep: Any, n: Any = None) -> Any:
    """Go's strings.SplitN: n == 0 gives no pieces, n < 0 all of them, "" splits runes."""
    check_str(s, sep)
    limit = -1
    if n is not None:
        check_int(n)
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
    check_str(s)
    check_int(start)
    stop = len(s) if end is None else end
    check_int(stop)
    if start < 0 or start > len(s):
        return error_value(f"index out of range: {start}")
    if stop < 0 or stop > len(s):
        return error_value(f"index out of range: {stop}")
    if start > stop:
        return error_value(f"invalid substring range. start: {start}, end: {stop}")
    return celtypes.StringType(s[start:stop])


def _trim(s: Any) -> Any:
    check_str(s)
    return celtypes.StringType(s.strip())


def _join(items: Any, sep: Any = "") -> Any:
    if not isinstance(items, list):
        raise TypeError("no such overload")
    check_str(sep, *items)
    return celtypes.StringType(sep.join(items))


def _reverse(target: Any) -> Any:
    if isinstance(target, str):
        return celtypes.StringType(target[::-1])
    if isinstance(target, list):
        return celtypes.ListType(reversed(target))
    raise TypeError("no such overload")


def _quote(ns: Any, s: Any) -> Any:
    if not (isinstance(ns, Namespace) and ns.name == "strings"):
        raise TypeError("no such overload")
    check_str(s)
    return celtypes.StringType(json.dumps(str(s), ensure_ascii=False))


_FORMAT_RE = re.compile(r"%(?:\.(\d+))?([sdfeExXobc%])")


def _format(template: Any, args: Any) -> Any:
    """cel-go's `string.format(list)`: %s %d %f %e %x %X %o %b and %%, with `.N` precision."""
    check_str(template)
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
            return error_value(f"index {arg_i} out of range")
        arg = args[arg_i]
        arg_i += 1
        try:
            if verb == "s":
                out.append(to_display(arg))
            elif verb == "d":
                check_int(arg)
                out.append(str(int(arg)))
            elif verb in "fe":
                if not is_number(arg):
                    raise TypeError("no such overload")
                p = 6 if precision is None else int(precision)
                out.append(format(float(arg), f".{p}{verb}"))
            elif verb in "xX":
                if isinstance(arg, str):
                    text = arg.encode().hex()
                elif isinstance(arg, bytes):
                    text = arg.hex()
                else:
                    check_int(arg)
                    text = format(int(arg), "x")
                out.append(text.upper() if verb == "X" else text)
            elif verb == "o":
                check_int(arg)
                out.append(format(int(arg), "o"))
            elif verb == "b":
                if isinstance(arg, BOOL):
                    out.append("1" if arg else "0")
                else:
                    check_int(arg)
                    out.append(format(int(arg), "b"))
            else:
                return error_value(f"unrecognized formatting clause: %{verb}")
        except TypeError:
            return error_value(f"error during formatting: invalid argument for %{verb}: {arg!r}")
    out.append(template[pos:])
    return celtypes.StringType("".join(out))


FUNCTIONS: dict[str, Any] = {
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
}
