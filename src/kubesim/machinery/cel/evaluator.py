"""`K8sEvaluator`: the interpreter for celpy's parse trees, with cel-go's semantics where they differ."""

from __future__ import annotations

from typing import Any, cast

import lark
from celpy import celtypes
from celpy.evaluation import CELEvalError, Evaluator

from kubesim.machinery.cel.cost import (
    COST_LIMIT_MESSAGE,
    CostLimitExceeded,
    CostTracker,
    argument_cost,
)
from kubesim.machinery.cel.functions import ACTIVATION, ALL_FUNCTIONS, MACROS
from kubesim.machinery.cel.standard import Optional, logical_and, logical_or
from kubesim.machinery.cel.values import MISSING, error_value, is_bool
from kubesim.machinery.cel.variables import LazyVariables

# --------------------------------------------------------------------------------------------
# Evaluation


def _cel_type_name(v: Any) -> str:
    """The CEL name of a value's type, for error messages."""
    if is_bool(v):
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


class K8sEvaluator(Evaluator):
    """A faster interpreter for celpy's parse trees, with cel-go's semantics where they differ.

    celpy's own `Evaluator` spends most of its time in `typing.cast(Tuple[...], ...)` calls
    (each builds and hashes a generic alias) and in cloning activations for every macro
    element; a JobSet rule took half a millisecond. This subclass handles the hot node types
    itself, keeps variables in a plain dict, and defers to celpy for the rest (list and map
    literals, message construction) and for literal parsing, types and standard functions.
    It also implements cel-go's `has()` (only the last field is tested; `has(a.b.c)` fails
    when `a.b` is absent) and error-absorbing `&&`, `||`, `all()` and `exists()`.
    """

    def __init__(
        self, ast: lark.Tree[Any], scope: dict[str, Any], tracker: CostTracker | None = None
    ):
        super().__init__(ast, ACTIVATION)
        self.scope = scope
        self.functions = ALL_FUNCTIONS
        # Shared with the evaluators of macro bodies: one evaluation, one cost.
        self.tracker = tracker if tracker is not None else CostTracker()

    def evaluate(self, context: Any = None) -> Any:
        return self.visit(self.ast)

    def visit(self, tree: lark.Tree[Any]) -> Any:
        tracker = self.tracker  # a step: `tracker.add(1)`, inlined on this hot path
        tracker.cost += 1
        if tracker.cost > tracker.limit:
            raise CostLimitExceeded(COST_LIMIT_MESSAGE)
        return super().visit(tree)

    def sub_evaluator(self, ast: lark.Tree[Any]) -> Evaluator:
        return K8sEvaluator(ast, self.scope, self.tracker)

    def _call(self, name: str, args: list[Any]) -> Any:
        for a in args:
            if isinstance(a, CELEvalError):
                return a
        self.tracker.add(sum(argument_cost(a) for a in args))
        func = self.functions.get(name)
        if func is None:
            return error_value(f"undeclared reference to '{name}'")
        try:
            return func(*args)
        except TypeError:
            return error_value("no such overload")
        except ZeroDivisionError:
            return error_value("modulus by zero" if name == "_%_" else "division by zero")
        except ValueError as ex:
            if "overflow" in str(ex):
                return error_value("integer overflow")
            return error_value(f"type conversion error: {ex}")

    def expr(self, tree: lark.Tree[Any]) -> Any:
        children = tree.children
        if len(children) == 1:
            return self.visit(children[0])
        cond = self.visit(children[0])
        if isinstance(cond, CELEvalError):
            return cond
        if not is_bool(cond):
            return error_value("no such overload")
        return self.visit(children[1] if cond else children[2])

    def conditionalor(self, tree: lark.Tree[Any]) -> Any:
        children = tree.children
        if len(children) == 1:
            return self.visit(children[0])
        left = self.visit(children[0])
        if is_bool(left) and left:
            return left
        return logical_or(left, self.visit(children[1]))

    def conditionaland(self, tree: lark.Tree[Any]) -> Any:
        children = tree.children
        if len(children) == 1:
            return self.visit(children[0])
        left = self.visit(children[0])
        if is_bool(left) and not left:
            return left
        return logical_and(left, self.visit(children[1]))

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
            return (
                celtypes.BoolType(not value) if is_bool(value) else error_value("no such overload")
            )
        return self._call("-_", [value])

    def member(self, tree: lark.Tree[Any]) -> Any:
        return self.visit(tree.children[0])

    def member_dot(self, tree: lark.Tree[Any]) -> Any:
        children: Any = tree.children
        member_tree, name_token = children
        if isinstance(self.scope, LazyVariables):
            value = self._pending_path(tree, self.scope)
            if value is not MISSING:
                return value
        target = self.visit(member_tree)
        if isinstance(target, CELEvalError):
            return target
        if isinstance(target, dict):
            value = target.get(name_token.value, MISSING)
            if value is MISSING:
                return error_value(f"no such key: {name_token.value}")
            return value
        return error_value(f"type '{_cel_type_name(target)}' does not support field selection")

    @classmethod
    def _pending_path(cls, tree: lark.Tree[Any], scope: LazyVariables) -> Any:
        """`a.b.c` on a still unconverted variable `a`: only the value at the path is
        converted (`MISSING` when the path is not all present maps: the normal
        evaluation then reports what is missing, as it would have)."""
        raw = cls._pending_raw(tree, scope)
        return raw if raw is MISSING else scope.convert(raw)

    @staticmethod
    def _pending_raw(tree: lark.Tree[Any], scope: LazyVariables) -> Any:
        """The JSON value at `a.b.c` of a still unconverted variable `a`, unconverted
        (`MISSING` as for `_pending_path`)."""
        names: list[str] = []
        node: Any = tree
        while isinstance(node, lark.Tree) and node.data == "member_dot":
            field: Any = node.children[1]
            names.append(field.value)
            node = node.children[0]
        if not (isinstance(node, lark.Tree) and node.data == "primary"):
            return MISSING
        ident: Any = node.children[0]
        if not (isinstance(ident, lark.Tree) and ident.data == "ident"):
            return MISSING
        token: Any = ident.children[0]
        raw = scope.pending(token.value, MISSING)
        for name in reversed(names):
            if not isinstance(raw, dict) or name not in raw:
                return MISSING
            raw = raw[name]
        return raw

    def member_index(self, tree: lark.Tree[Any]) -> Any:
        member_tree, index_tree = tree.children
        target = self.visit(member_tree)
        index = self.visit(index_tree)
        return self._call("_[_]", [target, index])

    def member_dot_arg(self, tree: lark.Tree[Any]) -> Any:
        children: Any = tree.children
        method = children[1].value
        if method in MACROS:
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
            return error_value("no such overload")
        args: Any = tree.children[2]
        var_tree, body = args.children
        ident: Any = next(var_tree.find_data("ident"))
        var_name = ident.children[0].value
        scope = self.scope.copy()  # a LazyVariables stays lazy
        body_eval = K8sEvaluator(body, scope, self.tracker)

        def run(item: Any) -> Any:
            scope[var_name] = item
            return body_eval.visit(body)

        if method in ("all", "exists"):
            is_all = method == "all"
            fold = logical_and if is_all else logical_or
            result: Any = celtypes.BoolType(is_all)
            for item in target:
                result = fold(result, run(item))
                if is_bool(result) and bool(result) != is_all:
                    return result  # a false decides all(), a true decides exists()
            return result
        if method == "exists_one":
            count = 0
            for item in target:
                value = run(item)
                if isinstance(value, CELEvalError):
                    return value
                if not is_bool(value):
                    return error_value("no such overload")
                count += bool(value)
            return celtypes.BoolType(count == 1)
        out: list[Any] = []
        for item in target:
            value = run(item)
            if isinstance(value, CELEvalError):
                return value
            if method == "map":
                out.append(value)
            elif not is_bool(value):
                return error_value("no such overload")
            elif value:
                out.append(item)
        return celtypes.ListType(out)

    def primary(self, tree: lark.Tree[Any]) -> Any:
        child: Any = tree.children[0]
        kind = child.data
        if kind == "ident":
            name = child.children[0].value
            value = self.scope.get(name, MISSING)
            if value is not MISSING:
                return value
            func = self.functions.get(name)  # type names: `int`, `string`, `map`, ...
            return func if func is not None else error_value(f"undeclared reference to '{name}'")
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
        value = _literal_cache.get(key, MISSING)
        if value is MISSING:
            value = super().literal(tree)
            if not isinstance(value, CELEvalError) and len(_literal_cache) < 10_000:
                _literal_cache[key] = value
        return value

    def macro_has_eval(self, exprlist: lark.Tree[Any] | None) -> Any:
        node: Any = exprlist.children[0] if exprlist is not None and exprlist.children else None
        if not isinstance(node, lark.Tree) or node.data != "member_dot":
            return error_value("invalid argument to has() macro")
        member_tree, field_token = cast(list[Any], node.children)
        if isinstance(self.scope, LazyVariables):
            # has(a.b.c) on an unconverted `a` asks only whether a.b has the key: a.b is not
            # converted for it (a JSON map converts to a CEL map key for key).
            parent = self._pending_raw(member_tree, self.scope)
            if isinstance(parent, dict):
                return celtypes.BoolType(field_token.value in parent)
        target = self.visit(member_tree)
        if isinstance(target, CELEvalError):
            return target
        if isinstance(target, dict):
            return celtypes.BoolType(field_token.value in target)
        return error_value(f"invalid type for field selection: {field_token}")
