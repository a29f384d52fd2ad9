"""`compile_expression` and `CelProgram`: parse with celpy's environment, check statically, evaluate.

celpy has no type checker, so a light static check rejects references to unknown variables or
functions at CRD creation time, as cel-go's checker would.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable
from typing import Any

import celpy
import lark
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError

from kubesim.machinery.cel.cost import CostLimitExceeded, CostTracker
from kubesim.machinery.cel.evaluator import K8sEvaluator
from kubesim.machinery.cel.functions import KNOWN_FUNCTIONS, MACROS, TYPE_NAMES
from kubesim.machinery.cel.values import NAMESPACES, CelError


def _translate(ex: CELEvalError) -> CelError:
    """An error value as a CelError; `K8sEvaluator` already words errors like cel-go."""
    text = str(ex.args[0]) if ex.args else "evaluation error"
    if "no such overload" in text or "no matching overload" in text:
        return CelError("no such overload", overload=True)
    return CelError(text)


class CelProgram:
    """A compiled CEL expression, ready to be evaluated many times."""

    __slots__ = ("_ast", "_namespaces", "fields_read", "source", "uses_old_self")

    def __init__(self, source: str, ast: lark.Tree[Any], uses_old_self: bool, namespaces: set[str]):
        self.source = source
        self._ast = ast
        self.uses_old_self = uses_old_self
        self._namespaces = {name: NAMESPACES[name] for name in namespaces}
        # Per variable (`self`, `oldSelf`): the fields the expression selects from it, or
        # None when it uses the variable otherwise (see `fields_selected`).
        self.fields_read: dict[str, frozenset[str] | None] = {
            name: fields_selected(ast, name) for name in ("self", "oldSelf")
        }

    def evaluate(self, variables: dict[str, Any], tracker: CostTracker | None = None) -> Any:
        """Evaluate with `variables` (CEL values); raise CelError on an evaluation error, and
        with `cost_limit` set when the evaluation passed the per-call limit (`tracker.limit`,
        `PER_CALL_LIMIT` without one). `tracker.cost` is then what the evaluation cost."""
        if self._namespaces:
            variables = variables.copy()  # a LazyVariables stays lazy
            variables.update(self._namespaces)
        evaluator = K8sEvaluator(self._ast, variables, tracker)
        try:
            result = evaluator.visit(self._ast)
        except CostLimitExceeded as ex:
            raise CelError(str(ex), cost_limit=True) from None
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
    return lark.Tree(node.data, new_children, node._meta)  # private-ok: lark's own state


def _static_check(ast: lark.Tree[Any], variables: frozenset[str]) -> tuple[bool, set[str]]:
    """Reject unknown identifiers and functions, as cel-go's checker would at CRD creation.

    Returns whether `oldSelf` is referenced, and which namespaces (`sets`, `optional`, ...).
    """
    macro_vars: set[str] = set()
    for node in ast.iter_subtrees():
        if node.data == "member_dot_arg" and str(node.children[1]) in MACROS:
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
            if name in NAMESPACES:
                namespaces.add(name)
            elif name not in variables and name not in macro_vars and name not in TYPE_NAMES:
                raise ValueError(f"undeclared reference to '{name}'")
        elif node.data == "ident_arg":
            name = str(node.children[0])
            if name not in ("has", "dyn") and name not in KNOWN_FUNCTIONS:
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
            if name not in MACROS and name not in KNOWN_FUNCTIONS:
                raise ValueError(f"undeclared reference to '{name}'")
        elif node.data in ("dot_ident", "dot_ident_arg"):
            raise ValueError("leading '.' identifiers are not supported")
    return uses_old_self, namespaces


def fields_selected(ast: lark.Tree[Any], variable: str) -> frozenset[str] | None:
    """The field names an expression selects from `variable` (`variable.name`), when that
    is the only way it uses it; None when it uses it otherwise (`self == oldSelf`,
    `size(self)`, `self["k"]`, `self.all(...)`, a macro variable of that name).

    Schema validation converts a value to CEL before evaluating its rules; a rule on a large
    object that reads two of its fields then needs only those two converted (the
    StartupPolicy/DependsOn rule on a JobSet's `spec` reads `startupPolicy` and
    `replicatedJobs`, not 3,000 failure-policy rules).
    """
    fields: set[str] = set()
    selected = uses = 0
    for node in ast.iter_subtrees():
        if node.data == "ident":
            uses += _is_ident(node, variable)
        elif node.data == "member_dot" and _is_ident(node.children[0], variable):
            fields.add(str(node.children[1]))
            selected += 1
        elif node.data == "member_dot_arg" and str(node.children[1]) in MACROS:
            args = node.children[2] if len(node.children) > 2 else None
            first = args.children[0] if isinstance(args, lark.Tree) and args.children else None
            if _is_ident(first, variable):
                return None  # the macro binds a variable of that name
    return frozenset(fields) if uses == selected else None


def _is_ident(node: Any, name: str) -> bool:
    """Whether `node` is the identifier `name` (alone, or as a `primary`)."""
    if isinstance(node, lark.Tree) and node.data == "primary" and len(node.children) == 1:
        node = node.children[0]
    return (
        isinstance(node, lark.Tree)
        and node.data == "ident"
        and len(node.children) == 1
        and str(node.children[0]) == name
    )


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
