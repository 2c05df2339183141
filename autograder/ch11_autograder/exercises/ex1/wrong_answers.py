"""Named wrong answers of Exercise 1 (a third child d = a**2, L = b*c + d).

Each entry is what a student could write in one answer cell of
``ex1_fanout.ipynb``. The bodies use only names the notebook provides (its
imports, the tape layout ``_X ... _L`` and ``_CHILDREN_OF_A``, the input check
``_finite_float``, and ``extended_tape`` from the Task 2 cell), imported here
from the same places so that each entry also runs in the trusted process.

Where each entry is invisible (so that suites and tests probe elsewhere), with
``a = xy``, ``b = a + x``, ``c = ay``:

* last writer wins, c last: drops ``c + 2a = xy(y + 2)``; zero at x = 0, y = 0, y = -2;
* last writer wins, b last: drops ``by + 2a = xy(y + 3)``; zero at x = 0, y = 0, y = -3;
* d's local derivative a: drops ``a``; d path missing: drops ``2a``; zero at x = 0 or y = 0;
* factors of bc swapped: wrong when ``b != c``, i.e. ``x(1 + y - y**2) != 0``;
* y-bar without the direct edge y -> c: drops ``b * a = x**2 y (y + 1)``; zero at y = -1;
* unit cotangent: right via d (d-bar is 1 anyway), wrong via b and c unless c = 1 and b = 1;
* child cotangent only: wrong via c unless y = 1, via d unless a = 1/2;
* assignment everywhere: returns ``(c y, c x)``.

The last four entries compute every value right on Python floats and break another clause of
the contract: numpy numbers refused (accepted types), a numpy bool accepted (Raises), tapes
cached by value (no dependence on earlier calls), a gradient whose dtype follows int or float32
inputs (return type). They are invisible at every point of the value properties.
"""

from __future__ import annotations

import math

import numpy as np
from ch11_solutions.ex1_fanout import (
    _A,
    _B,
    _C,
    _CHILDREN_OF_A,
    _D,
    _L,
    _X,
    _Y,
    _finite_float,
    extended_tape,
)
from trainable_harness import TapeNode, reverse_accumulate

from ..catalogue import wrong_answer
from .contract import CONTRIBUTIONS_CELL, CONTRIBUTIONS_TESTS, GRADIENT_CELL, GRADIENT_TESTS, TAPE_CELL, TAPE_TESTS

__all__: list[str] = []

# contributions_into_a and input_gradient read the student's own tape, so a wrong
# tape costs points in all three autograded cells.
EVERY_TAPE_CELL = (TAPE_TESTS, CONTRIBUTIONS_TESTS, GRADIENT_TESTS)


# ---- Task 2: the tape ------------------------------------------------------------------------


@wrong_answer(
    exercise="ex1",
    name="d_local_derivative_a",
    title="d = a² recorded with local derivative a instead of 2a",
    advice=(
        "The edge a -> d carries dd/da = 2a. Writing a drops half of the contribution via d, "
        "and every cotangent computed from the tape inherits the error."
    ),
    answer_cell=TAPE_CELL,
    replaces="extended_tape",
    loses=EVERY_TAPE_CELL,
)
def d_local_derivative_a(x: float, y: float) -> list[TapeNode]:
    """Tape of L = b*c + d with the edge a -> d labelled a."""
    x = _finite_float("x", x)
    y = _finite_float("y", y)
    a = x * y
    b = a + x
    c = a * y
    d = a * a
    return [
        TapeNode(x),
        TapeNode(y),
        TapeNode(a, ((0, y), (1, x))),
        TapeNode(b, ((2, 1.0), (0, 1.0))),
        TapeNode(c, ((2, y), (1, a))),
        TapeNode(d, ((2, a),)),
        TapeNode(b * c + d, ((3, c), (4, b), (5, 1.0))),
    ]


@wrong_answer(
    exercise="ex1",
    name="d_path_not_wired",
    title="d is recorded but L does not list it as a parent",
    advice=(
        "L = bc + d has three parents. Without the edge d -> L (local derivative 1) the sweep "
        "never reaches d, so the third contribution into a-bar is lost."
    ),
    answer_cell=TAPE_CELL,
    replaces="extended_tape",
    loses=EVERY_TAPE_CELL,
)
def d_path_not_wired(x: float, y: float) -> list[TapeNode]:
    """The opening tape with a d node appended, but L still wired as b*c only."""
    x = _finite_float("x", x)
    y = _finite_float("y", y)
    a = x * y
    b = a + x
    c = a * y
    d = a * a
    return [
        TapeNode(x),
        TapeNode(y),
        TapeNode(a, ((0, y), (1, x))),
        TapeNode(b, ((2, 1.0), (0, 1.0))),
        TapeNode(c, ((2, y), (1, a))),
        TapeNode(d, ((2, 2.0 * a),)),
        TapeNode(b * c + d, ((3, c), (4, b))),
    ]


@wrong_answer(
    exercise="ex1",
    name="product_factors_swapped",
    title="The local derivatives of b·c are swapped (dL/db recorded as b)",
    advice=(
        "For a product, the derivative with respect to one factor is the other factor: "
        "dL/db = c and dL/dc = b."
    ),
    answer_cell=TAPE_CELL,
    replaces="extended_tape",
    loses=EVERY_TAPE_CELL,
)
def product_factors_swapped(x: float, y: float) -> list[TapeNode]:
    """Tape of L = b*c + d with the edges b -> L and c -> L labelled by their own factor."""
    x = _finite_float("x", x)
    y = _finite_float("y", y)
    a = x * y
    b = a + x
    c = a * y
    d = a * a
    return [
        TapeNode(x),
        TapeNode(y),
        TapeNode(a, ((_X, y), (_Y, x))),
        TapeNode(b, ((_A, 1.0), (_X, 1.0))),
        TapeNode(c, ((_A, y), (_Y, a))),
        TapeNode(d, ((_A, 2.0 * a),)),
        TapeNode(b * c + d, ((_B, b), (_C, c), (_D, 1.0))),
    ]


@wrong_answer(
    exercise="ex1",
    name="numpy_numbers_refused",
    title="x and y checked as int or float, so numpy numbers are refused",
    advice=(
        "A real number is any int, float or numpy integer or floating scalar (np.float32, np.int64 ...); "
        "only bools are excluded. Test with numbers.Real (as the notebook's input check does), not "
        "(int, float), and compute with float(x)."
    ),
    answer_cell=TAPE_CELL,
    replaces="extended_tape",
    loses=EVERY_TAPE_CELL,
)
def numpy_numbers_refused(x: float, y: float) -> list[TapeNode]:
    """The contract's tape, behind a type check that knows only Python's int and float."""
    for name, value in (("x", x), ("y", y)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{name} must be an int or a float, got {type(value).__name__}")
        if not math.isfinite(value):
            raise ValueError(f"{name} must be finite, got {name}={value!r}")
    x, y = float(x), float(y)
    a = x * y
    b = a + x
    c = a * y
    d = a * a
    return [
        TapeNode(x),
        TapeNode(y),
        TapeNode(a, ((_X, y), (_Y, x))),
        TapeNode(b, ((_A, 1.0), (_X, 1.0))),
        TapeNode(c, ((_A, y), (_Y, a))),
        TapeNode(d, ((_A, 2.0 * a),)),
        TapeNode(b * c + d, ((_B, c), (_C, b), (_D, 1.0))),
    ]


@wrong_answer(
    exercise="ex1",
    name="numpy_bool_accepted",
    title="Only Python's bool is refused; a numpy bool is taken for the number 1 or 0",
    advice=(
        "np.True_ is a bool too, and math.isfinite accepts it. Refuse everything that is not a real "
        "number (isinstance(v, numbers.Real), which numpy bools are not) as well as bool."
    ),
    answer_cell=TAPE_CELL,
    replaces="extended_tape",
    loses=EVERY_TAPE_CELL,
)
def numpy_bool_accepted(x: float, y: float) -> list[TapeNode]:
    """The contract's tape; strings and None are left to math.isfinite's own TypeError."""
    for name, value in (("x", x), ("y", y)):
        if isinstance(value, bool):
            raise TypeError(f"{name} must be a real number, not a bool")
        if not math.isfinite(value):
            raise ValueError(f"{name} must be finite, got {name}={value!r}")
    x, y = float(x), float(y)
    a = x * y
    b = a + x
    c = a * y
    d = a * a
    return [
        TapeNode(x),
        TapeNode(y),
        TapeNode(a, ((_X, y), (_Y, x))),
        TapeNode(b, ((_A, 1.0), (_X, 1.0))),
        TapeNode(c, ((_A, y), (_Y, a))),
        TapeNode(d, ((_A, 2.0 * a),)),
        TapeNode(b * c + d, ((_B, c), (_C, b), (_D, 1.0))),
    ]


@wrong_answer(
    exercise="ex1",
    name="tape_memoized_by_value",
    title="Tapes cached by the value of (x, y), so True gets the tape of 1.0",
    advice=(
        "A cache keyed by (x, y) answers every call equal to an earlier one: True == 1.0 and False == 0.0 "
        "hash alike, so a bool that must raise TypeError gets the number's tape. Record the tape afresh "
        "on every call (it is cheap), or check the inputs before looking anything up."
    ),
    answer_cell=TAPE_CELL,
    replaces="extended_tape",
    loses=EVERY_TAPE_CELL,
)
def tape_memoized_by_value(x: float, y: float, _recorded: dict = {}) -> list[TapeNode]:  # noqa: B006
    """The contract's tape, recorded once per point and reused by contributions_into_a and input_gradient."""
    if (x, y) in _recorded:
        return _recorded[(x, y)]
    fx = _finite_float("x", x)
    fy = _finite_float("y", y)
    a = fx * fy
    b = a + fx
    c = a * fy
    d = a * a
    tape = [
        TapeNode(fx),
        TapeNode(fy),
        TapeNode(a, ((_X, fy), (_Y, fx))),
        TapeNode(b, ((_A, 1.0), (_X, 1.0))),
        TapeNode(c, ((_A, fy), (_Y, a))),
        TapeNode(d, ((_A, 2.0 * a),)),
        TapeNode(b * c + d, ((_B, c), (_C, b), (_D, 1.0))),
    ]
    _recorded[(x, y)] = tape
    return tape


# ---- Task 3: the contributions into a-bar ----------------------------------------------------


@wrong_answer(
    exercise="ex1",
    name="contributions_with_unit_cotangent",
    title="Contributions weighted by L-bar = 1 instead of the child's cotangent",
    advice=(
        "A contribution is (cotangent of the child) × (local derivative). The seed L-bar = 1 is the "
        "cotangent of L only; b-bar = c and c-bar = b, so the local derivatives alone are not the "
        "contributions."
    ),
    answer_cell=CONTRIBUTIONS_CELL,
    replaces="contributions_into_a",
    loses=(CONTRIBUTIONS_TESTS,),
)
def contributions_with_unit_cotangent(x: float, y: float) -> np.ndarray:
    """Local derivatives of b, c, d with respect to a, each times the output seed."""
    tape = extended_tape(x, y)
    cotangents = reverse_accumulate(tape)
    contributions = np.zeros(3, dtype=np.float64)
    for slot, child in enumerate(_CHILDREN_OF_A):
        for parent, local in tape[child].parents:
            if parent == _A:
                contributions[slot] += cotangents[_L] * local
    return contributions


@wrong_answer(
    exercise="ex1",
    name="contributions_without_local_derivative",
    title="Contributions read as the children's cotangents, without the local derivative",
    advice=(
        "b-bar, c-bar and d-bar are what is owed to b, c and d. What a receives from each is that "
        "cotangent times the local derivative on the edge into a (1, y and 2a)."
    ),
    answer_cell=CONTRIBUTIONS_CELL,
    replaces="contributions_into_a",
    loses=(CONTRIBUTIONS_TESTS,),
)
def contributions_without_local_derivative(x: float, y: float) -> np.ndarray:
    """The cotangents of b, c and d."""
    cotangents = reverse_accumulate(extended_tape(x, y))
    return np.array([cotangents[_B], cotangents[_C], cotangents[_D]], dtype=np.float64)


@wrong_answer(
    exercise="ex1",
    name="contributions_as_running_total",
    title="a-bar's running total reported instead of each contribution",
    advice=(
        "Report each term of the sum separately. Reading a-bar after each child is processed gives "
        "partial sums, which depend on the order in which the sweep visits the children."
    ),
    answer_cell=CONTRIBUTIONS_CELL,
    replaces="contributions_into_a",
    loses=(CONTRIBUTIONS_TESTS,),
)
def contributions_as_running_total(x: float, y: float) -> np.ndarray:
    """The value of a-bar right after the sweep has processed b, c and d (in reverse tape order)."""
    tape = extended_tape(x, y)
    cotangents = np.zeros(len(tape), dtype=np.float64)
    cotangents[-1] = 1.0
    after = {}
    for index in range(len(tape) - 1, -1, -1):
        for parent, local in tape[index].parents:
            cotangents[parent] += cotangents[index] * local
        after[index] = cotangents[_A]
    return np.array([after[_B], after[_C], after[_D]], dtype=np.float64)


# ---- Task 4: the input gradient --------------------------------------------------------------


@wrong_answer(
    exercise="ex1",
    name="last_writer_wins",
    title="Last writer wins at the shared node a",
    advice=(
        "At a fan-out node the graph chain rule is a sum: every child's contribution must be added "
        "into a-bar, not assigned. With assignment only the child visited last survives."
    ),
    answer_cell=GRADIENT_CELL,
    replaces="input_gradient",
    loses=(GRADIENT_TESTS,),
)
def last_writer_wins(x: float, y: float) -> np.ndarray:
    """Reverse sweep that assigns into a-bar, visiting the children d, b, c (c writes last)."""
    tape = extended_tape(x, y)
    cotangents = np.zeros(len(tape), dtype=np.float64)
    cotangents[-1] = 1.0
    for index in (_L, _D, _B, _C, _A, _Y, _X):
        for parent, local in tape[index].parents:
            if parent == _A:
                cotangents[parent] = cotangents[index] * local
            else:
                cotangents[parent] += cotangents[index] * local
    return cotangents[[_X, _Y]]


@wrong_answer(
    exercise="ex1",
    name="last_writer_wins_c_before_b",
    title="Last writer wins at a, with c visited before b",
    advice=(
        "Assigning into a-bar makes the result depend on which child is visited last: here b wins. "
        "A correct sweep adds, and then the order of incomparable siblings does not matter."
    ),
    answer_cell=GRADIENT_CELL,
    replaces="input_gradient",
    loses=(GRADIENT_TESTS,),
)
def last_writer_wins_c_before_b(x: float, y: float) -> np.ndarray:
    """Reverse sweep in plain reverse tape order that assigns into a-bar (b writes last)."""
    tape = extended_tape(x, y)
    cotangents = np.zeros(len(tape), dtype=np.float64)
    cotangents[-1] = 1.0
    for index in range(len(tape) - 1, -1, -1):
        for parent, local in tape[index].parents:
            if parent == 2:
                cotangents[parent] = cotangents[index] * local
            else:
                cotangents[parent] += cotangents[index] * local
    return cotangents[[0, 1]]


@wrong_answer(
    exercise="ex1",
    name="assignment_everywhere",
    title="Every cotangent update is an assignment",
    advice=(
        "x, y and a all have more than one child here. Assignment is valid only for a node with one "
        "downstream path; the reverse rule adds every contribution into the parent's cotangent."
    ),
    answer_cell=GRADIENT_CELL,
    replaces="input_gradient",
    loses=(GRADIENT_TESTS,),
)
def assignment_everywhere(x: float, y: float) -> np.ndarray:
    """Reverse sweep that overwrites the parent's cotangent on every edge."""
    tape = extended_tape(x, y)
    cotangents = np.zeros(len(tape), dtype=np.float64)
    cotangents[-1] = 1.0
    for index in range(len(tape) - 1, -1, -1):
        for parent, local in tape[index].parents:
            cotangents[parent] = cotangents[index] * local
    return cotangents[[_X, _Y]]


@wrong_answer(
    exercise="ex1",
    name="y_bar_without_direct_edge",
    title="y-bar misses the direct edge y -> c (the term c-bar · a)",
    advice=(
        "y has two children, a and c, so y-bar = a-bar · x + c-bar · a. Only the path through a was "
        "counted. (x-bar likewise needs both a-bar · y and b-bar · 1.)"
    ),
    answer_cell=GRADIENT_CELL,
    replaces="input_gradient",
    loses=(GRADIENT_TESTS,),
)
def y_bar_without_direct_edge(x: float, y: float) -> np.ndarray:
    """The gradient from hand formulas, with y-bar taken through a only."""
    x = _finite_float("x", x)
    y = _finite_float("y", y)
    a = x * y
    b = a + x
    c = a * y
    b_bar, c_bar, d_bar = c, b, 1.0
    a_bar = b_bar * 1.0 + c_bar * y + d_bar * 2.0 * a
    x_bar = a_bar * y + b_bar
    y_bar = a_bar * x
    return np.array([x_bar, y_bar], dtype=np.float64)


@wrong_answer(
    exercise="ex1",
    name="gradient_dtype_follows_inputs",
    title="The gradient computed from x and y as given, so its dtype follows theirs",
    advice=(
        "With int inputs the hand formulas give an int64 array, with np.float32 ones a float32 array "
        "(rounded in single precision). Compute with float(x) and float(y), or read the sweep's float64 "
        "cotangents, so the result is always float64."
    ),
    answer_cell=GRADIENT_CELL,
    replaces="input_gradient",
    loses=(GRADIENT_TESTS,),
)
def gradient_dtype_follows_inputs(x: float, y: float) -> np.ndarray:
    """The gradient from hand formulas (L = x**2 y**3 + 2 x**2 y**2), after the contract's input checks."""
    extended_tape(x, y)  # raises the contract's TypeError / ValueError
    return np.array([2 * x * y**3 + 4 * x * y * y, x * x * (3 * y * y + 4 * y)])
