"""The operators mutmut lacks: mistakes a student makes that single-token mutation does not.

mutmut turns ``"x"`` into ``"XXxXX"``, which fails loudly; a student writes ``"y"``. These
operators make the plausible versions, each a single-site change of one answer cell:

* ``swap_literal``: a string literal that is one of the values a ``Literal[...]`` choice type
  of the notebook allows becomes each other value of that type (``"x"`` -> ``"y"``,
  ``"forward"`` -> ``"central"``), defaults in signatures included;
* ``swap_exception``: ``TypeError`` and ``ValueError`` trade places in a ``raise`` or an
  ``except`` clause;
* ``unwrap_call``: a call that only converts, copies or checks its one argument is replaced
  by the argument (``operator.index(x)``, ``np.asarray(x)``, ``float(x)``,
  ``copy.deepcopy(x)`` -> ``x``; ``x.copy()`` -> ``x``);
* ``delete_statement``: a simple statement (an assignment, an augmented assignment, a call,
  a ``return``, a ``continue`` or ``break``) becomes ``pass``;
* ``remove_raise``: a ``raise`` statement becomes ``pass``.

Left alone, as mutmut leaves them: docstrings, annotations, ``assert`` statements (internal
checks; mutmut's ``swap_op`` and ``string`` already change them), ``import`` and ``pass``.

Each operator is a function ``(module, positions, mutable_lines, choices)`` yielding
``(original node, replacement node)`` pairs; :func:`mutations` applies them one at a time.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

__all__ = ["OPERATORS", "Mutation", "choice_groups", "mutations"]

#: Calls that convert, copy or check their one argument and hand it back: the last part of the callee's name.
WRAPPERS = frozenset({
    "index", "asarray", "asanyarray", "ascontiguousarray", "array", "float", "int", "float32", "float64", "int64",
    "int32", "list", "tuple", "deepcopy", "copy",
})
#: Exception classes a contract tells apart, swapped with each other.
EXCEPTION_SWAPS = {"TypeError": "ValueError", "ValueError": "TypeError"}

Positions = Mapping[cst.CSTNode, CodeRange]
Pairs = Iterator[tuple[cst.CSTNode, cst.CSTNode]]


@dataclass(frozen=True)
class Mutation:
    """One mutant's source: the operator that made it and the 1-based line of the change."""

    operator: str
    line: int
    source: str


def choice_groups(sources: Sequence[str]) -> tuple[tuple[str, ...], ...]:
    """The string values of every ``Literal[...]`` with two or more strings in ``sources``, in order, deduplicated.

    A source that does not parse (a notebook cell with magics) is skipped.
    """
    groups: list[tuple[str, ...]] = []
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Subscript) and _name_of(node.value) == "Literal"):
                continue
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            values = tuple(i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str))
            if len(values) >= 2 and len(values) == len(items) and values not in groups:
                groups.append(values)
    return tuple(groups)


def _name_of(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


class _Collect(cst.CSTVisitor):
    """Every node of the given types, outside annotations and docstrings, in source order."""

    def __init__(self, types: tuple[type[cst.CSTNode], ...]) -> None:
        self.types = types
        self.found: list[cst.CSTNode] = []
        self._annotations = 0

    def visit_Annotation(self, node: cst.Annotation) -> None:
        self._annotations += 1

    def leave_Annotation(self, original_node: cst.Annotation) -> None:
        self._annotations -= 1

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, self.types) and not self._annotations:
            self.found.append(node)
        return super().on_visit(node)


def _nodes(module: cst.CSTNode, *types: type[cst.CSTNode]) -> list[cst.CSTNode]:
    collect = _Collect(types)
    module.visit(collect)
    return collect.found


def _docstrings(module: cst.Module) -> set[int]:
    """ids of the statement lines that are docstrings (a string expression first in a body)."""
    found: set[int] = set()
    for node in _nodes(module, cst.Module, cst.FunctionDef, cst.ClassDef):
        if isinstance(node, cst.Module):
            body: Sequence[cst.CSTNode] = node.body
        elif isinstance(node, cst.FunctionDef | cst.ClassDef):
            body = node.body.body
        else:
            continue
        if body and isinstance(body[0], cst.SimpleStatementLine):
            first = body[0].body
            if len(first) == 1 and isinstance(first[0], cst.Expr) and isinstance(first[0].value, cst.SimpleString):
                found.add(id(body[0]))
    return found


def swap_literal(module: cst.Module, positions: Positions, lines: Collection[int],
                 choices: Sequence[tuple[str, ...]]) -> Pairs:
    docs = {id(n) for s in _nodes(module, cst.SimpleStatementLine) if id(s) in _docstrings(module)
            for n in _nodes(s, cst.SimpleString)}
    for node in _nodes(module, cst.SimpleString):
        assert isinstance(node, cst.SimpleString)
        if id(node) in docs or positions[node].start.line not in lines or node.prefix.strip("\"'"):
            continue
        value = node.evaluated_value
        for group in choices:
            if value in group:
                quote = node.quote
                for other in group:
                    if other != value:
                        yield node, node.with_changes(value=f"{quote}{other}{quote}")


def swap_exception(module: cst.Module, positions: Positions, lines: Collection[int],
                   choices: Sequence[tuple[str, ...]]) -> Pairs:
    targets: list[cst.BaseExpression] = []
    for node in _nodes(module, cst.Raise, cst.ExceptHandler):
        if isinstance(node, cst.Raise) and node.exc is not None:
            targets.append(node.exc.func if isinstance(node.exc, cst.Call) else node.exc)
        elif isinstance(node, cst.ExceptHandler) and isinstance(node.type, cst.Tuple):
            targets.extend(e.value for e in node.type.elements)
        elif isinstance(node, cst.ExceptHandler) and node.type is not None:
            targets.append(node.type)
    for target in targets:
        if isinstance(target, cst.Name) and target.value in EXCEPTION_SWAPS and positions[target].start.line in lines:
            yield target, target.with_changes(value=EXCEPTION_SWAPS[target.value])


def _callee(call: cst.Call) -> str:
    func = call.func
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return ""


def unwrap_call(module: cst.Module, positions: Positions, lines: Collection[int],
                choices: Sequence[tuple[str, ...]]) -> Pairs:
    for node in _nodes(module, cst.Call):
        assert isinstance(node, cst.Call)
        if positions[node].start.line not in lines or _callee(node) not in WRAPPERS:
            continue
        positional = [a for a in node.args if a.keyword is None and not a.star]
        if len(positional) == 1 and node.args[0] is positional[0]:
            yield node, _parenthesized(positional[0].value)
        elif not node.args and _callee(node) == "copy" and isinstance(node.func, cst.Attribute):
            yield node, _parenthesized(node.func.value)  # x.copy() -> x


def _parenthesized(node: cst.BaseExpression) -> cst.BaseExpression:
    # Parentheses keep the argument's precedence where the call stood (float(a + b) * c -> (a + b) * c).
    if isinstance(node, cst.Name | cst.Attribute | cst.Call | cst.Subscript | cst.SimpleString | cst.Integer):
        return node
    return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


_DELETABLE = (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Expr, cst.Return, cst.Continue, cst.Break)
_PASS = cst.SimpleStatementLine(body=[cst.Pass()])


def delete_statement(module: cst.Module, positions: Positions, lines: Collection[int],
                     choices: Sequence[tuple[str, ...]]) -> Pairs:
    docs = _docstrings(module)
    for node in _nodes(module, cst.SimpleStatementLine):
        assert isinstance(node, cst.SimpleStatementLine)
        if id(node) in docs or positions[node].start.line not in lines:
            continue
        if len(node.body) == 1 and isinstance(node.body[0], _DELETABLE):
            yield node, _PASS.with_changes(leading_lines=node.leading_lines)


def remove_raise(module: cst.Module, positions: Positions, lines: Collection[int],
                 choices: Sequence[tuple[str, ...]]) -> Pairs:
    for node in _nodes(module, cst.SimpleStatementLine):
        assert isinstance(node, cst.SimpleStatementLine)
        if positions[node].start.line in lines and len(node.body) == 1 and isinstance(node.body[0], cst.Raise):
            yield node, _PASS.with_changes(leading_lines=node.leading_lines)


Operator = Callable[[cst.Module, Positions, Collection[int], Sequence[tuple[str, ...]]], Pairs]
#: name -> operator, in the order mutants are made.
OPERATORS: dict[str, Operator] = {
    "swap_literal": swap_literal,
    "swap_exception": swap_exception,
    "unwrap_call": unwrap_call,
    "delete_statement": delete_statement,
    "remove_raise": remove_raise,
}


def mutations(code: str, operator: str, lines: Collection[int], choices: Sequence[tuple[str, ...]] = ()
              ) -> Iterator[Mutation]:
    """Every mutant ``operator`` makes of ``code`` at ``lines`` (1-based), in source order.

    ``choices`` are the groups of interchangeable literals (:func:`choice_groups`).
    """
    wrapper = MetadataWrapper(cst.parse_module(code))
    positions = wrapper.resolve(PositionProvider)
    module = wrapper.module
    for original, replacement in OPERATORS[operator](module, positions, lines, choices):
        mutated = module.deep_replace(original, replacement)
        assert isinstance(mutated, cst.Module)
        yield Mutation(operator, positions[original].start.line, mutated.code)
