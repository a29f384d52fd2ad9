"""kubectl's `-o jsonpath=TEMPLATE`: the template language of client-go's `util/jsonpath`.

Not RFC 9535 JSONPath (which jsonpath-ng and friends implement): kubectl's is a *template*,
text with `{...}` actions, and users paste kubectl one-liners into our commands. So this is
a small implementation of the part of client-go's grammar kubectl users write:

* text outside braces is printed as is; `{"\\n"}` / `{'\\t'}` print a quoted literal;
* paths: `.field`, `['field.with.dots']`, `$` (the root), `@` (the current object),
  `[n]` (negative from the end), `[start:end:step]`, `[*]` and `.*`, `..field` (recursive),
  `['a','b']` / `[0,2]` (unions), `[?(@.path OP literal)]` with `==, !=, <, <=, >, >=`, and
  `[?(@.path)]` (the field exists);
* `{range PATH}...{end}`: the enclosed template once per result, relative to it;
* several results of one action are joined by a space (`{.items[*].metadata.name}` gives
  `a b c`); strings print raw, numbers and booleans as JSON, maps and lists as compact JSON
  with sorted keys (Go's encoding of unstructured objects);
* a missing field gives nothing (kubectl enables `AllowMissingKeys`), an index out of range
  is an error as in kubectl.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["JsonPathError", "Template", "render"]


class JsonPathError(ValueError):
    """A template that does not parse, or an index out of range while executing it."""


_MISSING = object()


# ------------------------------------------------------------------------------ path steps


@dataclass(frozen=True)
class _Field:
    name: str  # "*": every value of a map


@dataclass(frozen=True)
class _Recursive:
    name: str  # "*": every value at any depth


@dataclass(frozen=True)
class _Index:
    index: int


@dataclass(frozen=True)
class _Slice:
    start: int | None
    stop: int | None
    step: int | None


@dataclass(frozen=True)
class _Union:
    keys: tuple[str | int, ...]


@dataclass(frozen=True)
class _Filter:
    left: tuple[Any, ...]  # a path relative to @
    op: str  # "" : existence
    right: Any  # a literal, or a tuple path relative to @ (marked by _Path)


@dataclass(frozen=True)
class _Path:
    steps: tuple[Any, ...]


_NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?")


def _unquote(text: str) -> str:
    """A quoted literal: escapes as Go's strconv.Unquote (\\n, \\t, \\", \\\\, \\uXXXX)."""
    body = text[1:-1]
    if text[0] == "'":
        body = body.replace("\\'", "'").replace('"', '\\"')
    try:
        value: str = json.loads(f'"{body}"')
    except json.JSONDecodeError as exc:
        raise JsonPathError(f"invalid string literal {text}") from exc
    return value


class _PathParser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def error(self, what: str) -> JsonPathError:
        return JsonPathError(f"{what} at position {self.pos} of {self.text!r}")

    def peek(self, n: int = 1) -> str:
        return self.text[self.pos : self.pos + n]

    def skip_spaces(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] == " ":
            self.pos += 1

    def ident(self) -> str:
        start = self.pos
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            if ch == "\\" and self.pos + 1 < len(self.text):
                self.pos += 2  # `\.` keeps a dot inside a key
                continue
            if ch in ".[] ,()=!<>'\"" or ch == "}":
                break
            self.pos += 1
        raw = self.text[start : self.pos]
        return re.sub(r"\\(.)", r"\1", raw)

    def steps(self, stop: str = "") -> tuple[Any, ...]:
        """Steps until the end of text (or a char of `stop` at bracket depth 0)."""
        out: list[Any] = []
        if self.peek() in ("$", "@"):
            self.pos += 1
        while self.pos < len(self.text):
            ch = self.peek()
            if stop and ch in stop:
                break
            if self.peek(2) == "..":
                self.pos += 2
                if self.peek() == "[":
                    raise self.error("recursive descent with brackets is not supported")
                name = "*" if self.peek() == "*" else self.ident()
                if name == "*" and self.peek() == "*":
                    self.pos += 1
                if not name:
                    raise self.error("expected a field name after '..'")
                out.append(_Recursive(name))
            elif ch == ".":
                self.pos += 1
                if self.peek() == "*":
                    self.pos += 1
                    out.append(_Field("*"))
                    continue
                name = self.ident()
                if name:
                    out.append(_Field(name))
            elif ch == "[":
                out.append(self.bracket())
            elif ch == " ":
                break
            else:
                name = self.ident()  # a bare `items[*]` as kubectl's relaxed form
                if not name:
                    raise self.error(f"unexpected {ch!r}")
                out.append(_Field(name))
        return tuple(out)

    def bracket(self) -> Any:
        close = self.text.find("]", self.pos)
        if close < 0:
            raise self.error("unterminated '['")
        self.pos += 1
        if self.peek(2) == "?(":
            self.pos += 2
            step = self.filter()
            if self.peek(2) != ")]":
                raise self.error("expected ')]'")
            self.pos += 2
            return step
        inner_end = self._bracket_end()
        inner = self.text[self.pos : inner_end].strip()
        self.pos = inner_end + 1
        if inner == "*":
            return _Field("*")
        parts = _split_union(inner)
        if len(parts) > 1:
            return _Union(tuple(_key(p) for p in parts))
        if inner.startswith(("'", '"')):
            return _Field(_unquote(inner))
        if ":" in inner:
            bounds = [b.strip() for b in inner.split(":")]
            if len(bounds) > 3:
                raise self.error(f"invalid slice [{inner}]")
            nums = [int(b) if b else None for b in bounds] + [None] * (3 - len(bounds))
            return _Slice(nums[0], nums[1], nums[2])
        try:
            return _Index(int(inner))
        except ValueError:
            raise self.error(f"invalid array index [{inner}]") from None

    def _bracket_end(self) -> int:
        quote = ""
        for i in range(self.pos, len(self.text)):
            ch = self.text[i]
            if quote:
                if ch == quote:
                    quote = ""
            elif ch in "'\"":
                quote = ch
            elif ch == "]":
                return i
        raise self.error("unterminated '['")

    def filter(self) -> _Filter:
        self.skip_spaces()
        left = self.steps(stop=" =!<>)")
        self.skip_spaces()
        op = ""
        for candidate in ("==", "!=", "<=", ">=", "<", ">"):
            if self.text.startswith(candidate, self.pos):
                op = candidate
                self.pos += len(candidate)
                break
        right: Any = None
        if op:
            self.skip_spaces()
            right = self.literal_or_path()
            self.skip_spaces()
        return _Filter(left, op, right)

    def literal_or_path(self) -> Any:
        ch = self.peek()
        if ch in ("'", '"'):
            end = self.text.find(ch, self.pos + 1)
            if end < 0:
                raise self.error("unterminated string")
            value = _unquote(self.text[self.pos : end + 1])
            self.pos = end + 1
            return value
        if ch in ("@", "$", "."):
            return _Path(self.steps(stop=" )"))
        m = _NUMBER.match(self.text, self.pos)
        if m:
            self.pos = m.end()
            return float(m.group()) if (m.group(1) or m.group(2)) else int(m.group())
        words: tuple[tuple[str, Any], ...] = (("true", True), ("false", False), ("null", None))
        for word, constant in words:
            if self.text.startswith(word, self.pos):
                self.pos += len(word)
                return constant
        raise self.error("expected a literal")


def _split_union(inner: str) -> list[str]:
    parts, quote, start = [], "", 0
    for i, ch in enumerate(inner):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == ",":
            parts.append(inner[start:i].strip())
            start = i + 1
    parts.append(inner[start:].strip())
    return parts


def _key(part: str) -> str | int:
    if part.startswith(("'", '"')):
        return _unquote(part)
    try:
        return int(part)
    except ValueError:
        return part


# ------------------------------------------------------------------------------ evaluation


def _children(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        yield from (value[k] for k in sorted(value))
    elif isinstance(value, list):
        yield from value


def _descend(value: Any, name: str) -> Iterator[Any]:
    if isinstance(value, dict):
        if name == "*":
            yield from _children(value)
        elif name in value:
            yield value[name]
    for child in _children(value):
        yield from _descend(child, name)


def _compare(left: Any, op: str, right: Any) -> bool:
    ops: dict[str, Callable[[Any, Any], bool]] = {
        "==": lambda a, b: bool(a == b),
        "!=": lambda a, b: bool(a != b),
        "<": lambda a, b: bool(a < b),
        "<=": lambda a, b: bool(a <= b),
        ">": lambda a, b: bool(a > b),
        ">=": lambda a, b: bool(a >= b),
    }
    try:
        return ops[op](left, right)
    except TypeError:
        return False


def _apply(values: list[Any], step: Any, root: Any) -> list[Any]:
    out: list[Any] = []
    for value in values:
        if isinstance(step, _Field):
            if isinstance(value, dict):
                if step.name == "*":
                    out.extend(_children(value))
                elif step.name in value:
                    out.append(value[step.name])
            elif isinstance(value, list) and step.name == "*":
                out.extend(value)
        elif isinstance(step, _Recursive):
            out.extend(_descend(value, step.name))
        elif isinstance(step, _Index):
            if not isinstance(value, list):
                continue
            i = step.index + len(value) if step.index < 0 else step.index
            if not 0 <= i < len(value):
                raise JsonPathError(
                    f"array index out of bounds: index {step.index}, length {len(value)}"
                )
            out.append(value[i])
        elif isinstance(step, _Slice):
            if isinstance(value, list):
                out.extend(value[step.start : step.stop : step.step])
        elif isinstance(step, _Union):
            for key in step.keys:
                if isinstance(key, int) and isinstance(value, list):
                    if -len(value) <= key < len(value):
                        out.append(value[key])
                elif isinstance(value, dict) and str(key) in value:
                    out.append(value[str(key)])
        elif isinstance(step, _Filter):
            items = value if isinstance(value, list) else [value]
            for item in items:
                found = _eval(step.left, item, root)
                if not step.op:
                    if found and found[0] is not None and found[0] is not False:
                        out.append(item)
                    continue
                if not found:
                    continue
                right = step.right
                if isinstance(right, _Path):
                    got = _eval(right.steps, item, root)
                    if not got:
                        continue
                    right = got[0]
                if _compare(found[0], step.op, right):
                    out.append(item)
    return out


def _eval(steps: Sequence[Any], current: Any, root: Any) -> list[Any]:
    values = [current]
    for step in steps:
        values = _apply(values, step, root)
    return values


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    return json.dumps(value)


# ------------------------------------------------------------------------------ template


@dataclass(frozen=True)
class _Text:
    text: str


@dataclass(frozen=True)
class _Action:
    absolute: bool  # `$...`: from the root even inside a range
    steps: tuple[Any, ...]


@dataclass(frozen=True)
class _Range:
    absolute: bool
    steps: tuple[Any, ...]
    body: tuple[Any, ...]


def _actions(template: str) -> list[tuple[str, str]]:
    """("text", ...) and ("action", ...) pieces; braces inside quotes do not count."""
    pieces: list[tuple[str, str]] = []
    i, start = 0, 0
    while i < len(template):
        if template[i] != "{":
            i += 1
            continue
        if i > start:
            pieces.append(("text", template[start:i]))
        j, quote, depth = i + 1, "", 1
        while j < len(template):
            ch = template[j]
            if quote:
                if ch == "\\":
                    j += 1
                elif ch == quote:
                    quote = ""
            elif ch in "'\"":
                quote = ch
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        if j >= len(template):
            raise JsonPathError(f"unclosed action in {template!r}")
        pieces.append(("action", template[i + 1 : j].strip()))
        i = start = j + 1
    if start < len(template):
        pieces.append(("text", template[start:]))
    return pieces


def _parse(pieces: list[tuple[str, str]], pos: int, in_range: bool) -> tuple[list[Any], int]:
    nodes: list[Any] = []
    while pos < len(pieces):
        kind, body = pieces[pos]
        pos += 1
        if kind == "text":
            nodes.append(_Text(body))
        elif body == "end":
            if not in_range:
                raise JsonPathError("{end} without {range}")
            return nodes, pos
        elif body.startswith("range ") or body.startswith("range\t"):
            expr = body[len("range") :].strip()
            inner, pos = _parse(pieces, pos, True)
            steps = _PathParser(expr).steps()
            nodes.append(_Range(expr.startswith("$"), steps, tuple(inner)))
        elif body.startswith(("'", '"')) and body.endswith(body[0]) and len(body) >= 2:
            nodes.append(_Text(_unquote(body)))
        elif not body:
            continue
        else:
            nodes.append(_Action(body.startswith("$"), _PathParser(body).steps()))
    if in_range:
        raise JsonPathError("{range} without {end}")
    return nodes, pos


class Template:
    """A parsed template; `render(obj)` executes it on a JSON-like object."""

    def __init__(self, template: str) -> None:
        self.source = template
        self.nodes, _ = _parse(_actions(template), 0, False)

    def render(self, obj: Any) -> str:
        out: list[str] = []
        self._run(self.nodes, obj, obj, out)
        return "".join(out)

    def _run(self, nodes: Sequence[Any], current: Any, root: Any, out: list[str]) -> None:
        for node in nodes:
            if isinstance(node, _Text):
                out.append(node.text)
            elif isinstance(node, _Range):
                base = root if node.absolute else current
                for item in _eval(node.steps, base, root):
                    self._run(node.body, item, root, out)
            else:
                base = root if node.absolute else current
                out.append(" ".join(_text(v) for v in _eval(node.steps, base, root)))


def render(template: str, obj: Any) -> str:
    """Execute `template` on `obj` (raises JsonPathError)."""
    return Template(template).render(obj)
