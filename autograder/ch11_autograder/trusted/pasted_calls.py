"""What a failure's statements to paste are made of: the calls of the student's functions, and what is read back.

A check that fails only after earlier calls (or on what a call left in its arguments) shows the statements that
reproduce it from a fresh kernel (:attr:`.mismatch.Mismatch.calls`). Those statements are of three kinds, as the
checks write them:

* a name set up: an assignment (``chain = make_chain(16, 5, width=3, seed=11)``, ``rng = np.random.default_rng(2)``,
  ``before = chain.forward_evaluations``), never a call of the student's code;
* a call of one of the student's functions: an expression statement whose value is that call, or read off it
  (``exact_gradient(True, 3.0)``, ``checkpointed_cotangents(chain, z0, 4, rng).cotangents``); the function is
  named by a bare name (a module's ``np.array(...)`` is no call of the student's);
* a read-back after the last call: an expression that calls nothing of the student's (``z0``,
  ``rng.bit_generator.state``, ``chain.forward_evaluations - before``): what the call left in an argument.

:func:`read_statements` sorts them; :meth:`PastedCalls.subject` words the failing call (the last call of the
student's code) for the page's first line, counting calls of the student's functions only, never statements.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["PastedCalls", "StudentCall", "ordinal", "read_statements"]

#: Longest call shown in a first line, in characters; a longer one has its long arguments elided.
MAX_CALL_CHARS = 100
#: Longest argument kept when a call is elided (shorter ones, such as ``4`` or ``rng``, say which call it is).
MAX_ARGUMENT_CHARS = 24


@dataclass(frozen=True)
class StudentCall:
    """One call of the student's code among the statements: the function's name and the statement as shown."""

    function: str
    statement: str


@dataclass(frozen=True)
class PastedCalls:
    """The statements of a failure, sorted (see the module docstring).

    Attributes:
        calls: the calls of the student's functions, in order; the last one is the call that goes wrong.
        read_back: the statements after the last call that read what it left (``("z0",)``); ``()`` when the
            failing call's own value is what is compared.
        readable: whether every statement parsed as Python; when not, :attr:`calls` may be incomplete and
            :meth:`subject` does not count.
    """

    calls: tuple[StudentCall, ...]
    read_back: tuple[str, ...]
    readable: bool = True

    def subject(self, task: str) -> str:
        """The failing call in a student's words: ``extended_tape(True, 0.75)`` alone; after earlier calls of
        the same function, ``the 2nd call of extended_tape in a sequence of 2 calls (extended_tape(True, 0.75))``;
        after calls of other functions, ``replay_report(chain, z0, 4, 2), after 1 call of store_all_cotangents``
        (the ordinal among the calls of that function, the others counted per function); ``what ... leaves in
        z0`` when a read-back is compared. Only calls of the student's functions are counted, never the
        statements that set up or read back names. ``task``: said instead when the calls cannot be told (a
        statement that does not parse, or no call of the student's)."""
        if not self.readable or not self.calls:
            return f"{task}, in the statements below"
        last = self.calls[-1]
        shown = short_call(last.statement)
        nth = sum(call.function == last.function for call in self.calls)
        others = Counter(call.function for call in self.calls if call.function != last.function)
        if nth > 1:
            sequence = "" if others else f" in a sequence of {nth} calls"
            shown = f"the {ordinal(nth)} call of {last.function}{sequence} ({shown})"
        if self.read_back:
            shown = f"what {shown} leaves in {' and '.join(self.read_back)}"
        # The other functions' calls before it, named: an ordinal alone would read as the sequence's.
        return f"{shown}, after {_counted(others)}" if others else shown


def _counted(calls: Counter[str]) -> str:
    """``1 call of f``; ``2 calls of f and 1 of g`` (in the order the functions are first called)."""
    (name, count), *rest = calls.items()
    return " and ".join([f"{count} call{'s' if count > 1 else ''} of {name}", *(f"{n} of {f}" for f, n in rest)])


def read_statements(statements: Sequence[str]) -> PastedCalls:
    """``statements`` sorted into the calls of the student's functions and the read-backs after the last one."""
    calls: list[StudentCall] = []
    after: list[str] = []
    readable = True
    for statement in statements:
        try:
            body = ast.parse(statement).body
        except SyntaxError:
            readable = False
            continue
        function = _called_function(body)
        if function:
            calls.append(StudentCall(function, statement))
            after = []
        elif len(body) == 1 and isinstance(body[0], ast.Expr):
            after.append(statement)
    return PastedCalls(tuple(calls), tuple(after) if calls else (), readable)


def _called_function(body: list[ast.stmt]) -> str:
    """The student's function a statement calls (see the module docstring), or ``""``."""
    if len(body) != 1 or not isinstance(body[0], ast.Expr):
        return ""
    root = _root(body[0].value)
    return root.func.id if isinstance(root, ast.Call) and isinstance(root.func, ast.Name) else ""


def _root(node: ast.expr) -> ast.expr:
    """The expression an attribute or item is read off (``f(x)`` of ``f(x).cotangents[0]``)."""
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node


def short_call(statement: str) -> str:
    """``statement`` as a first line shows it: whole up to :data:`MAX_CALL_CHARS` characters; longer, each
    argument over :data:`MAX_ARGUMENT_CHARS` characters written ``...`` (the statements to paste show it whole)."""
    if len(statement) <= MAX_CALL_CHARS:
        return statement
    try:
        (expr,) = ast.parse(statement).body
    except (SyntaxError, ValueError):
        return statement
    root = _root(expr.value) if isinstance(expr, ast.Expr) else None
    if not isinstance(root, ast.Call) or not isinstance(root.func, ast.Name):
        return statement
    parts = [_short(ast.get_source_segment(statement, arg) or "...") for arg in root.args]
    parts += [f"{k.arg}={_short(ast.get_source_segment(statement, k.value) or '...')}" if k.arg
              else _short(ast.get_source_segment(statement, k) or "...") for k in root.keywords]
    read_off = statement[len(ast.get_source_segment(statement, root) or statement):]  # ``.cotangents``, say
    return f"{root.func.id}({', '.join(parts)}){read_off}"


def _short(source: str) -> str:
    return source if len(source) <= MAX_ARGUMENT_CHARS else "..."


def ordinal(number: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th``, ``11th``, ``21st``, ..."""
    if number % 100 in (11, 12, 13):
        return f"{number}th"
    suffix = {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"
