"""Exercise 1's witnesses: for every clause of :data:`CONTRACT`, answers that break it alone.

See ``exercises/witness.py``. The notebook provides ``_finite_float`` (the input check), the
layout constants and ``TapeNode``; a hand-written tape reuses them and changes one thing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ch11_solutions import ex1_fanout as ref

from ...api.contract import Clause
from ..witness import Family, Witness, Witnesses, by_hand, clause_lookup, converted, other_exception, refused, wrapper
from .contract import CONTRACT, CONTRIBUTIONS_CELL, GRADIENT_CELL, TAPE_CELL

__all__ = ["WITNESSES"]

_FUNCTIONS: dict[str, tuple[Callable[..., Any], str]] = {
    "extended_tape": (ref.extended_tape, TAPE_CELL),
    "contributions_into_a": (ref.contributions_into_a, CONTRIBUTIONS_CELL),
    "input_gradient": (ref.input_gradient, GRADIENT_CELL),
}


_clause = clause_lookup(CONTRACT)


def _tape(name: str, clause: Clause, *, convert: str = "float({v})", c: str = "a * y",
          d_parents: str = "((2, 2.0 * a),)", tail: str = "[TapeNode(b * c + d, ((3, c), (4, b), (5, 1.0)))]",
          result: str = "tape") -> Witness:
    """extended_tape as the reference records it, with one piece replaced (source expressions)."""
    return by_hand(clause, name, TAPE_CELL, f"""
        def extended_tape(x, y):
            _finite_float("x", x)
            _finite_float("y", y)
            x, y = {convert.format(v="x")}, {convert.format(v="y")}
            a = x * y
            b = a + x
            c = {c}
            d = a * a
            tape = [
                TapeNode(x),
                TapeNode(y),
                TapeNode(a, ((0, y), (1, x))),
                TapeNode(b, ((2, 1.0), (0, 1.0))),
                TapeNode(c, ((2, y), (1, a))),
                TapeNode(d, {d_parents}),
            ] + {tail}
            return {result}
        """)


def _shared(function: str) -> list[Witness]:
    """Witnesses of the clauses all three functions share: accepted numbers, Raises, purity."""
    reference, cell = _FUNCTIONS[function]
    out: list[Witness] = []
    for argument in ("x", "y"):
        accepts = _clause(function, "accepts", argument=argument)
        out += refused(accepts, reference, cell, [Family("float32", f"isinstance({argument}, np.float32)"),
                                                  Family("numpy_integers", f"isinstance({argument}, np.integer)")])
        out.append(converted(accepts, reference, cell, "to_float32_precision",
                             f"isinstance({argument}, float) and math.isfinite({argument})",
                             f"float(np.float32({argument}))"))
        out += other_exception(_clause(function, "raises", argument=argument, raises="TypeError"), reference, cell, [
            Family("bool", f"isinstance({argument}, (bool, np.bool_))"),
            Family("str", f"isinstance({argument}, str)"),
            Family("none_or_list", f"{argument} is None or isinstance({argument}, list)"),
        ])
        out += other_exception(_clause(function, "raises", argument=argument, raises="ValueError"), reference, cell, [
            Family("nan", f"isinstance({argument}, (float, np.floating)) and math.isnan({argument})"),
            Family("inf", f"isinstance({argument}, (float, np.floating)) and math.isinf({argument})"),
        ])
    # A memo keyed by the arguments as given: True == 1, so a bool right after its number is answered.
    purity = _clause(function, "purity")
    out.append(by_hand(purity, f"{function}_remembers_by_value", cell, wrapper(
        reference, "if (x, y) in _memo:\n    return _memo[(x, y)]", result="_memo.setdefault((x, y), result)",
        prelude="_memo = {}")))
    return out


_TAPE: list[Witness] = [
    _tape("tape_c_is_a_times_x", _clause("extended_tape", "behaviour", "a = xy"), c="a * x"),
    _tape("tape_float32_values", _clause("extended_tape", "tolerance"), convert="float(np.float32({v}))"),
    _tape("tape_keeps_float32_inputs", _clause("extended_tape", "returns", "each value"),
          convert="({v} if isinstance({v}, np.floating) else float({v}))"),
    _tape("tape_keeps_int_inputs", _clause("extended_tape", "returns", "each value"),
          convert="({v} if isinstance({v}, int) else float({v}))"),
    _tape("tape_numpy_float32_scalars", _clause("extended_tape", "returns", "each value"),
          convert="np.float32({v})"),
    _tape("tape_L_as_two_nodes", _clause("extended_tape", "returns", "a list of exactly 7"),
          tail="[TapeNode(b * c, ((3, c), (4, b))), TapeNode(b * c + d, ((6, 1.0), (5, 1.0)))]"),
    _tape("tape_d_derivative_a", _clause("extended_tape", "behaviour", "local derivatives"),
          d_parents="((2, a),)"),
    *_shared("extended_tape"),
]

_CONTRIBUTIONS: list[Witness] = [
    by_hand(_clause("contributions_into_a", "returns"), "contributions_as_a_list", CONTRIBUTIONS_CELL,
            wrapper(ref.contributions_into_a, result="result.tolist()")),
    by_hand(_clause("contributions_into_a", "returns"), "contributions_float32", CONTRIBUTIONS_CELL,
            wrapper(ref.contributions_into_a, result="result.astype(np.float32)")),
    by_hand(_clause("contributions_into_a", "behaviour", "[b_bar"), "contributions_reversed", CONTRIBUTIONS_CELL,
            wrapper(ref.contributions_into_a, result="result[::-1].copy()")),
    # d_bar * a instead of d_bar * 2a: the d-term halved, and with it the sum.
    by_hand(_clause("contributions_into_a", "behaviour", "their sum"), "contributions_d_term_halved",
            CONTRIBUTIONS_CELL, wrapper(ref.contributions_into_a, result="result * np.array([1.0, 1.0, 0.5])")),
    by_hand(_clause("contributions_into_a", "tolerance"), "contributions_float32_precision", CONTRIBUTIONS_CELL,
            wrapper(ref.contributions_into_a, result="result.astype(np.float32).astype(np.float64)")),
    *_shared("contributions_into_a"),
]

_GRADIENT: list[Witness] = [
    by_hand(_clause("input_gradient", "returns"), "gradient_as_a_tuple", GRADIENT_CELL,
            wrapper(ref.input_gradient, result="tuple(result.tolist())")),
    by_hand(_clause("input_gradient", "returns"), "gradient_float32", GRADIENT_CELL,
            wrapper(ref.input_gradient, result="result.astype(np.float32)")),
    by_hand(_clause("input_gradient", "behaviour"), "gradient_swapped", GRADIENT_CELL,
            wrapper(ref.input_gradient, result="result[::-1].copy()")),
    by_hand(_clause("input_gradient", "tolerance"), "gradient_float32_precision", GRADIENT_CELL,
            wrapper(ref.input_gradient, result="result.astype(np.float32).astype(np.float64)")),
    *_shared("input_gradient"),
]

#: The readings the docstring settles: a parent index is an int, and a numpy integer is one.
_READINGS = [
    by_hand(_clause("extended_tape", "returns", "a list of exactly 7"), "tape_numpy_parent_indices", TAPE_CELL,
            wrapper(ref.extended_tape, result="[TapeNode(node.value, tuple((np.int64(p), d) for p, d in node.parents)) "
                    "for node in result]")),
]

WITNESSES = Witnesses(CONTRACT, (*_TAPE, *_CONTRIBUTIONS, *_GRADIENT), tuple(_READINGS))
