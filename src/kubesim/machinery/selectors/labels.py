"""Label selectors, parsed the way kube-apiserver parses them from query strings.

The grammar and the messages follow `k8s.io/apimachinery/pkg/labels`: the same tokens, the
same operators (`=`, `==`, `!=`, `in`, `notin`, `exists`, `!`, and the numeric `>`/`<`), the
same label key and value validation and the same "unable to parse requirement: ..." wording.
A selector is parsed once per request or watch and compiled into flat tuples, so `matches()`
is a tight loop with no allocation.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubesim.machinery import field as fe
from kubesim.machinery.errors import bad_request
from kubeutil import names

__all__ = ["LabelSelector", "Requirement", "validate_label_key", "validate_label_value"]

# --------------------------------------------------------------------------------------------
# Label key / value validation (k8s.io/apimachinery/pkg/util/validation, in `kubeutil.names`),
# with the upstream wording so that errors read the same as from a real cluster.


def _invalid(path: str, value: str | list[str], detail: str) -> str:
    """`field.Invalid(path, value, detail).Error()`; a list prints as Go's `[]string{...}`."""
    if isinstance(value, str):
        return fe.error_text(fe.invalid(path, value, detail))
    shown = fe.Shown("[]string{" + ", ".join(fe.go_quote(v) for v in value) + "}")
    return fe.error_text(fe.invalid(path, shown, detail))


def validate_label_key(key: str, path: str = "<nil>") -> str | None:
    """Return the upstream error text for an invalid label key, or None if it is valid."""
    errs = names.is_qualified_name(key)
    return _invalid(path, key, "; ".join(errs)) if errs else None


def validate_label_value(key: str, value: str, path: str = "values[0]") -> str | None:
    """Return the upstream error text for an invalid label value, or None if it is valid."""
    errs = names.is_valid_label_value(value)
    return _invalid(f"{path}[{key}]", value, "; ".join(errs)) if errs else None


def _aggregate(errors: list[str]) -> str:
    """`utilerrors.NewAggregate(...).Error()`: one error as is, several in brackets."""
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


# --------------------------------------------------------------------------------------------
# Label selectors

# Operator codes, compared with `is`/`==` on small ints in the matching loop.
_EQ: Final = 0  # "=" and "=="
_NE: Final = 1
_IN: Final = 2
_NOTIN: Final = 3
_EXISTS: Final = 4
_NOT_EXISTS: Final = 5
_GT: Final = 6
_LT: Final = 7

_INT64_RE: Final = re.compile(r"[+-]?[0-9]+")
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1


def _parse_int64(s: str) -> int | None:
    """Go's `strconv.ParseInt(s, 10, 64)`; Python's int() is more lenient (spaces, '_')."""
    if not _INT64_RE.fullmatch(s):
        return None
    n = int(s)
    return n if _INT64_MIN <= n <= _INT64_MAX else None


@dataclass(frozen=True, slots=True)
class Requirement:
    """One clause of a label selector, e.g. `tier in (a,b)`.

    `operator` uses the upstream `selection.Operator` spellings: `=`, `==`, `!=`, `in`, `notin`,
    `exists`, `!`, `gt`, `lt`. `values` is sorted, as upstream does.
    """

    key: str
    operator: str
    values: tuple[str, ...]

    def __str__(self) -> str:
        op = self.operator
        if op == "exists":
            return self.key
        if op == "!":
            return "!" + self.key
        if op in ("in", "notin"):
            return f"{self.key} {op} ({','.join(self.values)})"
        sym = {"gt": ">", "lt": "<"}.get(op, op)
        return f"{self.key}{sym}{self.values[0] if self.values else ''}"


_OP_CODES: Final[dict[str, int]] = {
    "=": _EQ,
    "==": _EQ,
    "!=": _NE,
    "in": _IN,
    "notin": _NOTIN,
    "exists": _EXISTS,
    "!": _NOT_EXISTS,
    "gt": _GT,
    "lt": _LT,
}


def _new_requirement(
    key: str, op: str, values: list[str], path: str | None = None
) -> Requirement | list[str]:
    """Upstream `labels.NewRequirement`: validate, and return the requirement or the errors.

    `path` is the field path prefix used in messages (None renders as upstream's nil path).
    """
    errs: list[str] = []
    key_path = f"{path}.key" if path else "key"
    values_path = f"{path}.values" if path else "values"
    key_err = validate_label_key(key, key_path)
    if key_err:
        errs.append(key_err)
    if op in ("in", "notin"):
        if not values:
            errs.append(
                _invalid(
                    values_path, values, "for 'in', 'notin' operators, values set can't be empty"
                )
            )
    elif op in ("=", "==", "!="):
        if len(values) != 1:
            errs.append(
                _invalid(values_path, values, "exact-match compatibility requires one single value")
            )
    elif op in ("exists", "!"):
        if values:
            errs.append(
                _invalid(
                    values_path, values, "values set must be empty for exists and does not exist"
                )
            )
    elif op in ("gt", "lt"):
        if len(values) != 1:
            errs.append(
                _invalid(
                    values_path, values, "for 'Gt', 'Lt' operators, exactly one value is required"
                )
            )
        for i, v in enumerate(values):
            if _parse_int64(v) is None:
                errs.append(
                    _invalid(
                        f"{values_path}[{i}]",
                        v,
                        "for 'Gt', 'Lt' operators, the value must be an integer",
                    )
                )
    else:
        supported = ("in", "notin", "=", "==", "!=", "gt", "lt", "exists", "!")
        operator_path = f"{path}.operator" if path else "operator"
        errs.append(fe.error_text(fe.not_supported(operator_path, op, supported)))
    for i, v in enumerate(values):
        value_err = validate_label_value(key, v, f"{values_path}[{i}]")
        if value_err:
            errs.append(value_err)
    if errs:
        return errs
    return Requirement(key, op, tuple(sorted(set(values))))


# Lexer tokens.
_T_ID: Final = "identifier"
_T_END: Final = "end"
_T_NOT: Final = "!"
_T_NE: Final = "!="
_T_LPAREN: Final = "("
_T_RPAREN: Final = ")"
_T_COMMA: Final = ","
_T_EQ: Final = "="
_T_EQEQ: Final = "=="
_T_GT: Final = ">"
_T_LT: Final = "<"
_T_IN: Final = "in"
_T_NOTIN: Final = "notin"

_SPECIAL: Final = frozenset("=!(),><")
_WHITESPACE: Final = frozenset(" \t\r\n")
_SYMBOL_TOKENS: Final = frozenset({"!", "!=", "(", ")", ",", "=", "==", ">", "<"})
_BINARY_OPERATORS: Final = "in, notin, =, ==, !=, gt, lt"


def _lex(s: str) -> list[tuple[str, str]]:
    """Tokenise like upstream's lexer: identifiers run until whitespace or a special symbol;
    special symbols are matched greedily up to the longest known token."""
    out: list[tuple[str, str]] = []
    i, n = 0, len(s)
    while True:
        while i < n and s[i] in _WHITESPACE:
            i += 1
        if i >= n:
            out.append((_T_END, ""))
            return out
        ch = s[i]
        if ch in _SPECIAL:
            j = i + 1
            if j < n and s[i : j + 1] in _SYMBOL_TOKENS:
                j += 1
            lit = s[i:j]
            out.append((lit, lit))
            i = j
        else:
            j = i
            while j < n and s[j] not in _SPECIAL and s[j] not in _WHITESPACE:
                j += 1
            lit = s[i:j]
            out.append((lit if lit in (_T_IN, _T_NOTIN) else _T_ID, lit))
            i = j


class _ParseError(Exception):
    """A syntax error with upstream's message; turned into a 400 at the API boundary."""


class _Parser:
    """Recursive-descent parser mirroring upstream `labels.Parser` so errors are identical."""

    def __init__(self, s: str) -> None:
        self.items = _lex(s)
        self.pos = 0

    def lookahead(self, values: bool) -> tuple[str, str]:
        tok, lit = self.items[self.pos]
        # In a "values" context the keywords in/notin are ordinary identifiers.
        if values and tok in (_T_IN, _T_NOTIN):
            tok = _T_ID
        return tok, lit

    def consume(self, values: bool) -> tuple[str, str]:
        tok, lit = self.lookahead(values)
        if self.pos < len(self.items) - 1:
            self.pos += 1
        return tok, lit

    def parse(self) -> list[Requirement]:
        reqs: list[Requirement] = []
        while True:
            tok, lit = self.lookahead(True)
            if tok in (_T_ID, _T_NOT):
                try:
                    reqs.append(self.parse_requirement())
                except _ParseError as e:
                    raise _ParseError(f"unable to parse requirement: {e}") from None
                tok, lit = self.consume(True)
                if tok == _T_END:
                    return reqs
                if tok == _T_COMMA:
                    tok2, lit2 = self.lookahead(True)
                    if tok2 not in (_T_ID, _T_NOT):
                        raise _ParseError(f"found '{lit2}', expected: identifier after ','")
                else:
                    raise _ParseError(f"found '{lit}', expected: ',' or 'end of string'")
            elif tok == _T_END:
                return reqs
            else:
                raise _ParseError(f"found '{lit}', expected: !, identifier, or 'end of string'")

    def parse_requirement(self) -> Requirement:
        key, op = self.parse_key_and_infer_operator()
        values: list[str] = []
        if op not in ("exists", "!"):
            op = self.parse_operator()
            if op in ("in", "notin"):
                values = self.parse_values()
            else:
                values = self.parse_exact_value()
        result = _new_requirement(key, op, values)
        if isinstance(result, list):
            raise _ParseError(_aggregate(result))
        return result

    def parse_key_and_infer_operator(self) -> tuple[str, str]:
        op = ""
        tok, lit = self.consume(True)
        if tok == _T_NOT:
            op = "!"
            tok, lit = self.consume(True)
        if tok != _T_ID:
            raise _ParseError(f"found '{lit}', expected: identifier")
        err = validate_label_key(lit)
        if err:
            raise _ParseError(err)
        nxt, _ = self.lookahead(True)
        if nxt in (_T_END, _T_COMMA) and op != "!":
            op = "exists"
        return lit, op

    def parse_operator(self) -> str:
        tok, lit = self.consume(False)
        ops = {
            _T_IN: "in",
            _T_NOTIN: "notin",
            _T_EQ: "=",
            _T_EQEQ: "==",
            _T_NE: "!=",
            _T_GT: "gt",
            _T_LT: "lt",
        }
        op = ops.get(tok)
        if op is None:
            raise _ParseError(f"found '{lit}', expected: {_BINARY_OPERATORS}")
        return op

    def parse_values(self) -> list[str]:
        tok, lit = self.consume(True)
        if tok != _T_LPAREN:
            raise _ParseError(f"found '{lit}' expected: '('")
        tok, lit = self.lookahead(True)
        if tok in (_T_ID, _T_COMMA):
            values = self.parse_identifiers_list()
            tok2, _ = self.consume(True)
            if tok2 != _T_RPAREN:
                raise _ParseError(f"found '{lit}', expected: ')'")
            return values
        if tok == _T_RPAREN:
            self.consume(True)
            return [""]
        raise _ParseError(f"found '{lit}', expected: ',', ')' or identifier")

    def parse_identifiers_list(self) -> list[str]:
        values: set[str] = set()
        while True:
            tok, lit = self.consume(True)
            if tok == _T_ID:
                values.add(lit)
                tok2, lit2 = self.lookahead(True)
                if tok2 == _T_COMMA:
                    continue
                if tok2 == _T_RPAREN:
                    return sorted(values)
                raise _ParseError(f"found '{lit2}', expected: ',' or ')'")
            if tok == _T_COMMA:
                # Empty entries, as in "(,a)" or "(a,,b)" or "(a,)", stand for the empty value.
                if not values:
                    values.add("")
                tok2, _ = self.lookahead(True)
                if tok2 == _T_RPAREN:
                    values.add("")
                    return sorted(values)
                if tok2 == _T_COMMA:
                    self.consume(True)
                    values.add("")
                continue
            raise _ParseError(f"found '{lit}', expected: ',', or identifier")

    def parse_exact_value(self) -> list[str]:
        tok, _ = self.lookahead(True)
        if tok in (_T_END, _T_COMMA):
            return [""]
        tok, lit = self.consume(True)
        if tok == _T_ID:
            return [lit]
        raise _ParseError(f"found '{lit}', expected: identifier")


_EMPTY_LABELS: Final[Mapping[str, str]] = {}

# A compiled requirement: (key, op code, single value, value set, integer bound).
_Compiled = tuple[str, int, str, frozenset[str], int]


class LabelSelector:
    """A parsed label selector; `matches()` is called once per object on list and watch paths."""

    __slots__ = ("_compiled", "_nothing", "_requirements")

    def __init__(self, requirements: Iterable[Requirement] = (), *, nothing: bool = False) -> None:
        reqs = tuple(sorted(requirements, key=lambda r: r.key))
        self._requirements = reqs
        self._nothing = nothing
        compiled: list[_Compiled] = []
        for r in reqs:
            code = _OP_CODES[r.operator]
            single = r.values[0] if r.values else ""
            bound = (_parse_int64(single) or 0) if code in (_GT, _LT) else 0
            compiled.append((r.key, code, single, frozenset(r.values), bound))
        self._compiled: tuple[_Compiled, ...] = tuple(compiled)

    @staticmethod
    def parse(s: str) -> LabelSelector:
        """Parse the `labelSelector` query parameter; 400 BadRequest with upstream's message."""
        if not s or not s.strip():
            return _EVERYTHING
        try:
            return LabelSelector(_Parser(s).parse())
        except _ParseError as e:
            raise bad_request(str(e)) from None

    @staticmethod
    def from_label_selector(sel: Mapping[str, Any] | None) -> LabelSelector:
        """Convert a `metav1.LabelSelector` object (`LabelSelectorAsSelector`).

        As upstream: None selects nothing, `{}` selects everything. Invalid content raises a
        400 with upstream's message; callers validating a stored object may re-wrap it as 422.
        """
        if sel is None:
            return _NOTHING
        if not isinstance(sel, Mapping):
            raise bad_request("label selector must be an object")
        match_labels = sel.get("matchLabels") or {}
        match_exprs = sel.get("matchExpressions") or []
        if not isinstance(match_labels, Mapping):
            raise bad_request("matchLabels must be a map of string to string")
        if not isinstance(match_exprs, list):
            raise bad_request("matchExpressions must be a list")
        if not match_labels and not match_exprs:
            return _EVERYTHING
        reqs: list[Requirement] = []
        for k, v in match_labels.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise bad_request("matchLabels must be a map of string to string")
            result = _new_requirement(k, "=", [v])
            if isinstance(result, list):
                raise bad_request(_aggregate(result))
            reqs.append(result)
        ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
        for expr in match_exprs:
            if not isinstance(expr, Mapping):
                raise bad_request("matchExpressions entries must be objects")
            operator = expr.get("operator")
            op = ops.get(operator) if isinstance(operator, str) else None
            if op is None:
                raise bad_request(
                    f"{fe.go_quote(str(operator))} is not a valid label selector operator"
                )
            key = expr.get("key")
            values = expr.get("values") or []
            if not isinstance(key, str):
                raise bad_request("matchExpressions key must be a string")
            if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
                raise bad_request("matchExpressions values must be a list of strings")
            result = _new_requirement(key, op, list(values))
            if isinstance(result, list):
                raise bad_request(_aggregate(result))
            reqs.append(result)
        return LabelSelector(reqs)

    @staticmethod
    def everything() -> LabelSelector:
        return _EVERYTHING

    @staticmethod
    def nothing() -> LabelSelector:
        return _NOTHING

    @property
    def requirements(self) -> tuple[Requirement, ...]:
        """The clauses, sorted by key: lets a store use an index for `key=value` terms."""
        return self._requirements

    def empty(self) -> bool:
        """True when the selector has no requirements and so matches every object."""
        return not self._compiled and not self._nothing

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self._nothing:
            return False
        if labels is None:
            labels = _EMPTY_LABELS
        for key, code, single, values, bound in self._compiled:
            if code == _EQ:
                if labels.get(key) != single:
                    return False
            elif code == _NE:
                if labels.get(key) == single:
                    return False
            elif code == _IN:
                v = labels.get(key)
                if v is None or v not in values:
                    return False
            elif code == _NOTIN:
                v = labels.get(key)
                if v is not None and v in values:
                    return False
            elif code == _EXISTS:
                if key not in labels:
                    return False
            elif code == _NOT_EXISTS:
                if key in labels:
                    return False
            else:
                v = labels.get(key)
                n = _parse_int64(v) if v is not None else None
                if n is None:
                    return False
                if code == _GT and not n > bound:
                    return False
                if code == _LT and not n < bound:
                    return False
        return True

    def __str__(self) -> str:
        return ",".join(str(r) for r in self._requirements)

    def __repr__(self) -> str:
        if self._nothing:
            return "LabelSelector(<nothing>)"
        return f"LabelSelector({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LabelSelector):
            return NotImplemented
        return self._requirements == other._requirements and self._nothing == other._nothing

    def __hash__(self) -> int:
        return hash((self._requirements, self._nothing))


_EVERYTHING: Final = LabelSelector()
_NOTHING: Final = LabelSelector(nothing=True)
