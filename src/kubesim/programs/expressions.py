"""The shell's expressions: `test` / `[ ]` / `[[ ]]` and arithmetic `$(( ))`."""

from __future__ import annotations

import ast
import fnmatch
import re
from collections.abc import Callable, Mapping
from typing import Final

from kubesim.programs.common import Unsupported
from kubesim.programs.shellstate import ShellState

# ---------------------------------------------------------------------------------------------
# test / [ ] / [[ ]]


class TestError(Exception):
    pass


_UNARY: Final = frozenset(
    {"-z", "-n", "-e", "-f", "-d", "-r", "-w", "-x", "-s", "-L", "-h", "-v", "-p", "-S", "-t"}
)


_BINARY: Final = frozenset(
    {"=", "==", "!=", "<", ">", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "=~", "-nt", "-ot"}
)


class TestEval:
    """Recursive descent over test arguments; `-a`/`-o` for `[`, `&&`/`||` for `[[`."""

    def __init__(self, args: list[tuple[str, bool]], double: bool, shell: ShellState) -> None:
        self.args = args
        self.double = double
        self.shell = shell
        self.pos = 0

    def evaluate(self) -> bool:
        if not self.args:
            return False
        result = self.parse_or()
        if self.pos != len(self.args):
            raise TestError(f"{self.args[self.pos][0]}: unexpected argument")
        return result

    def _peek(self) -> str | None:
        return self.args[self.pos][0] if self.pos < len(self.args) else None

    def parse_or(self) -> bool:
        value = self.parse_and()
        while self._peek() in (("||",) if self.double else ("-o",)):
            self.pos += 1
            rhs = self.parse_and()
            value = value or rhs
        return value

    def parse_and(self) -> bool:
        value = self.parse_not()
        while self._peek() in (("&&",) if self.double else ("-a",)):
            self.pos += 1
            rhs = self.parse_not()
            value = value and rhs
        return value

    def parse_not(self) -> bool:
        if self._peek() == "!" and self.pos + 1 < len(self.args):
            self.pos += 1
            return not self.parse_not()
        return self.parse_primary()

    def parse_primary(self) -> bool:
        tok = self._peek()
        if tok is None:
            raise TestError("argument expected")
        if tok == "(":
            self.pos += 1
            value = self.parse_or()
            if self._peek() != ")":
                raise TestError("`)' expected")
            self.pos += 1
            return value
        if self.pos + 2 < len(self.args) and self.args[self.pos + 1][0] in _BINARY:
            lhs = tok
            op = self.args[self.pos + 1][0]
            rhs, pattern = self.args[self.pos + 2]
            self.pos += 3
            return self.binary(lhs, op, rhs, pattern)
        if tok in _UNARY and self.pos + 1 < len(self.args):
            arg = self.args[self.pos + 1][0]
            self.pos += 2
            if tok == "-z":
                return arg == ""
            if tok == "-n":
                return arg != ""
            if tok == "-v":
                return arg in self.shell.vars
            return self._file_test(tok, arg)
        self.pos += 1
        return tok != ""

    def _file_test(self, op: str, path: str) -> bool:
        """File tests see the files of mounted emptyDir volumes; nothing else exists."""
        sh = self.shell
        files = sh.files
        if op == "-d":
            return sh.is_dir(path)
        if op in ("-e", "-r", "-w"):
            return path in files or sh.is_dir(path)
        if op == "-f":
            return path in files
        if op == "-s":
            return bool(files.get(path))
        return False

    def _int(self, text: str) -> int:
        try:
            return int(text.strip())
        except ValueError:
            if self.double:
                return eval_arith(text, self.shell.vars)
            raise TestError(f"{text}: integer expression expected") from None

    def binary(self, lhs: str, op: str, rhs: str, pattern: bool) -> bool:
        if op in ("=", "=="):
            return fnmatch.fnmatchcase(lhs, rhs) if self.double and pattern else lhs == rhs
        if op == "!=":
            return not fnmatch.fnmatchcase(lhs, rhs) if self.double and pattern else lhs != rhs
        if op == "<":
            return lhs < rhs
        if op == ">":
            return lhs > rhs
        if op == "=~":
            try:
                return re.search(rhs, lhs) is not None
            except re.error:
                raise TestError(f"invalid regex {rhs}") from None
        if op in ("-nt", "-ot"):
            return False
        a, b = self._int(lhs), self._int(rhs)
        return {
            "-eq": a == b,
            "-ne": a != b,
            "-lt": a < b,
            "-le": a <= b,
            "-gt": a > b,
            "-ge": a >= b,
        }[op]


# ---------------------------------------------------------------------------------------------
# Arithmetic $(( ))


def eval_arith(expr: str, variables: dict[str, str]) -> int:
    """Evaluate shell arithmetic: integers, variables, + - * / % ** << >> & | ^ ~ ! comparisons,
    && ||, and the assignments =, +=, -=, *=, /=, %=, ++, -- on plain names."""
    expr = expr.strip()
    if not expr:
        return 0
    if ";" in expr or "," in expr:
        value = 0
        for piece in re.split(r"[;,]", expr):
            value = eval_arith(piece, variables)
        return value
    m = re.fullmatch(r"(\+\+|--)\s*([A-Za-z_]\w*)|([A-Za-z_]\w*)\s*(\+\+|--)", expr)
    if m:
        name = m.group(2) or m.group(3)
        op = m.group(1) or m.group(4)
        old = _arith_var(variables, name)
        new = old + (1 if op == "++" else -1)
        variables[name] = str(new)
        return new if m.group(1) else old
    m = re.fullmatch(r"([A-Za-z_]\w*)\s*([-+*/%]?)=(?!=)\s*(.+)", expr, re.S)
    if m:
        name, op, rhs = m.group(1), m.group(2), m.group(3)
        value = eval_arith(rhs, variables)
        if op:
            value = _arith_binop(op, _arith_var(variables, name), value)
        variables[name] = str(value)
        return value
    text = expr.replace("&&", " and ").replace("||", " or ")
    text = re.sub(r"!(?!=)", " not ", text)
    text = re.sub(r"\$\{?([A-Za-z_]\w*)\}?", r"\1", text)
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise Unsupported(f"arithmetic {expr!r}") from None
    return _arith_eval(tree.body, variables)


def _arith_var(variables: Mapping[str, str], name: str) -> int:
    raw = variables.get(name, "").strip()
    if not raw:
        return 0
    try:
        return int(raw, 0) if not re.fullmatch(r"0\d+", raw) else int(raw, 8)
    except ValueError:
        return 0


def _arith_binop(op: str, a: int, b: int) -> int:
    if op in ("/", "%") and b == 0:
        raise Unsupported("division by zero")
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    return a - b * _arith_binop("/", a, b)  # "%": remainder with the sign of a, as in C


_AST_BINOPS: Final[dict[type[ast.operator], Callable[[int, int], int]]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: _arith_binop("/", a, b),
    ast.FloorDiv: lambda a, b: _arith_binop("/", a, b),
    ast.Mod: lambda a, b: _arith_binop("%", a, b),
    ast.Pow: lambda a, b: a**b if 0 <= b < 4096 else 0,
    ast.LShift: lambda a, b: a << b if 0 <= b < 4096 else 0,
    ast.RShift: lambda a, b: a >> b if b >= 0 else 0,
    ast.BitAnd: lambda a, b: a & b,
    ast.BitOr: lambda a, b: a | b,
    ast.BitXor: lambda a, b: a ^ b,
}


_AST_CMPS: Final[dict[type[ast.cmpop], Callable[[int, int], bool]]] = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
}


def _arith_eval(node: ast.expr, variables: Mapping[str, str]) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return int(node.value)
    if isinstance(node, ast.Name):
        return _arith_var(variables, node.id)
    if isinstance(node, ast.BinOp) and type(node.op) in _AST_BINOPS:
        a = _arith_eval(node.left, variables)
        b = _arith_eval(node.right, variables)
        return _AST_BINOPS[type(node.op)](a, b)
    if isinstance(node, ast.UnaryOp):
        v = _arith_eval(node.operand, variables)
        if isinstance(node.op, ast.USub):
            return -v
        if isinstance(node.op, ast.UAdd):
            return v
        if isinstance(node.op, ast.Not):
            return int(not v)
        if isinstance(node.op, ast.Invert):
            return ~v
    if isinstance(node, ast.BoolOp):
        values = [_arith_eval(v, variables) for v in node.values]
        return int(all(values) if isinstance(node.op, ast.And) else any(values))
    if isinstance(node, ast.Compare):
        left = _arith_eval(node.left, variables)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = _arith_eval(right_node, variables)
            check = _AST_CMPS.get(type(op))
            if check is None or not check(left, right):
                return 0
            left = right
        return 1
    raise Unsupported("arithmetic expression")
