"""Host expressions (Nutch's JEXL expressions over a HostDatum, in a small safe form): `numFailures > 5`,
`fetched > 100 and gone * 2 > fetched`, `10 if fetched > 1000 else 2`.

Python's expression syntax is parsed with `ast` and only this is evaluated: numbers, strings, True/False, the
host's field names, `+ - * / // %`, comparisons, `and or not`, `x if c else y`; JEXL's `&&`, `||` and `!` are
accepted too. Nothing else runs (no calls, attributes, subscripts): an expression cannot reach Python.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from nutch2.errors import ConfigError

_BIN: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod}
_CMP: dict[type, Callable[[Any, Any], Any]] = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Eq: operator.eq,
    ast.NotEq: operator.ne}
_UNARY: dict[type, Callable[[Any], Any]] = {ast.Not: operator.not_, ast.USub: operator.neg, ast.UAdd: operator.pos}
_JEXL = ((re.compile(r"&&"), " and "), (re.compile(r"\|\|"), " or "), (re.compile(r"!(?!=)"), " not "))


class HostExpr:
    """One compiled expression; `where` names it in errors (a property, or a flag such as -expr)."""

    def __init__(self, text: str, names: Iterable[str], where: str) -> None:
        self.text = text
        self.where = where
        source = text
        for pattern, repl in _JEXL:
            source = pattern.sub(repl, source)
        try:
            tree = ast.parse(source.strip(), mode="eval")
        except SyntaxError as e:
            raise self._error(f"it does not parse ({e.msg})") from None
        except (RecursionError, MemoryError):  # the parser's own stack: thousands of operators in a row
            raise self._error(f"it nests deeper than {MAX_DEPTH} levels") from None
        if _depth(tree) > MAX_DEPTH:  # evaluating it would exhaust Python's stack
            raise self._error(f"it nests deeper than {MAX_DEPTH} levels")
        known = set(names)
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id not in known and node.id not in ("true", "false"):
                raise self._error(f"{node.id!r} is not a host field (use {', '.join(sorted(known))})")
            if not isinstance(node, _ALLOWED):
                raise self._error(f"{type(node).__name__.lower()} is not allowed (only fields, numbers, "
                                  "strings, arithmetic, comparisons, and/or/not and 'x if c else y')")
            if isinstance(node, ast.Constant) and not isinstance(node.value, int | float | str):
                raise self._error(f"the constant {node.value!r} is not a number or a string")
        self._tree = tree.body

    def _error(self, cause: str) -> ConfigError:
        return ConfigError(f"{self.where}={self.text!r}: {cause}; write e.g. 'numFailures > 5'")

    def evaluate(self, values: Mapping[str, Any]) -> Any:
        """The expression's value for one host's fields; a type error (a string compared to a number...) is a
        ConfigError naming the expression."""
        try:
            return _eval(self._tree, values)
        except (TypeError, ZeroDivisionError) as e:
            raise self._error(f"it fails on a host ({e})") from None

    def holds(self, values: Mapping[str, Any]) -> bool:
        return bool(self.evaluate(values))

    def number(self, values: Mapping[str, Any]) -> float:
        value = self.evaluate(values)
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise self._error(f"it gives {value!r}, not a finite number")
        return value


MAX_DEPTH = 100  # levels of operators an expression may nest (evaluation recurses once a level)


def _depth(tree: ast.AST) -> int:
    """How deep the tree nests, counted without recursion."""
    deepest, todo = 0, [(tree, 1)]
    while todo:
        node, depth = todo.pop()
        deepest = max(deepest, depth)
        todo.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


_ALLOWED = (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.BinOp, ast.Compare, ast.Name, ast.Load,
            ast.Constant, ast.IfExp, *_BIN, *_CMP, *_UNARY)


def _eval(node: ast.AST, values: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return {"true": True, "false": False}[node.id] if node.id in ("true", "false") else values[node.id]
    if isinstance(node, ast.BoolOp):
        if isinstance(node.op, ast.And):
            return all(_eval(v, values) for v in node.values)
        return any(_eval(v, values) for v in node.values)
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_eval(node.operand, values))
    if isinstance(node, ast.BinOp):  # numbers only: 'host * 10**9' would build a string of gigabytes
        left, right = _eval(node.left, values), _eval(node.right, values)
        if not (isinstance(left, int | float) and isinstance(right, int | float)):
            raise TypeError(f"arithmetic on {type(left).__name__} and {type(right).__name__}, not numbers")
        return _BIN[type(node.op)](left, right)
    if isinstance(node, ast.Compare):
        left = _eval(node.left, values)
        for op, comp in zip(node.ops, node.comparators, strict=True):
            right = _eval(comp, values)
            if not _CMP[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return _eval(node.body, values) if _eval(node.test, values) else _eval(node.orelse, values)
    raise TypeError(f"{type(node).__name__} is not evaluated")
