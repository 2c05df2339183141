"""Exercise 1's hidden suites, catalogue and notebook, graded through the real worker.

Unit tests check the suite's own parts (tape validation, the per-parent edge
comparison, the tolerance, the probe points, misconception matching), each next
to a deliberately wrong variant that the same check rejects. Worker tests
(marked slow) build submissions from the generated source notebook and grade
them with an unsandboxed, quiet worker: reference -> full marks; released stubs
-> zero; each catalogue entry -> loses points in exactly the cells it names and
is named there; answers that are right but written differently -> full marks;
hostile return values -> no marks and no internal error.
"""

from __future__ import annotations

import ast
import math

import numpy as np
import pytest
from ch11_autograder.exercises.catalogue import catalogue
from ch11_autograder.exercises.ex1.suite import (
    BAD_INPUTS,
    CALL_ROUNDS,
    FLOOR,
    NOT_FINITE,
    NOT_REAL,
    NUMBER_TYPES,
    PROBE_POINTS,
    RELATIVE,
    SUITES,
    _call_key,
    _close,
    _contributions_from_tape,
    _expected_error,
    _first_difference,
    _gradient_from_tape,
    _is_real,
    _outcome,
    _outcome_matches,
    _Raised,
    _replayed,
    _same_outcome,
    _same_tape,
    _same_vector,
    tape_problem,
    tapes_match,
    vectors_match,
)
from ch11_autograder.trusted.registry import get_suite
from ch11_autograder.trusted.roundtrip import roundtrip
from ch11_autograder.trusted.submission_cells import WorkerCells, autograded_test_cells
from ch11_autograder.trusted.verdicts import CellVerdict
from ch11_solutions import ex1_fanout as ref
from hypothesis import given, settings
from hypothesis import strategies as st
from support import exercise_grading
from trainable_harness import TapeNode

NOTEBOOK = "ex1_fanout"
ENTRIES = catalogue("ex1")
#: Entries right on every Python-float point, wrong only in another clause of the contract (accepted
#: types, Raises, purity, return type): the value properties cannot see them, by design.
CONTRACT_ONLY = (
    "numpy_numbers_refused",
    "numpy_bool_accepted",
    "tape_memoized_by_value",
    "gradient_dtype_follows_inputs",
)
VALUE_ENTRIES = tuple(e for e in ENTRIES if e.name not in CONTRACT_ONLY)
#: Name endings of the properties of the clauses other than the value (Raises, accepted types, purity).
CONTRACT_PROPERTIES = ("_bad_inputs", "_number_types", "_repeated_calls")
TEST_CELLS = ("ex1_extended_tape_tests", "ex1_contributions_into_a_tests", "ex1_input_gradient_tests")
ANSWER_CELLS = {
    "extended_tape": "ex1_extended_tape",
    "contributions_into_a": "ex1_contributions_into_a",
    "input_gradient": "ex1_input_gradient",
}
coordinates = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False, allow_infinity=False)
CHECKS = settings(max_examples=150, derandomize=True, database=None, deadline=None)


def _source_notebook():
    return exercise_grading.source_notebook("ex1")


# --------------------------------------------------------------------------- wiring


def test_suites_match_the_notebooks_autograded_cells():
    cells = autograded_test_cells(_source_notebook())
    assert [c.metadata.nbgrader.grade_id for _, c in cells] == list(TEST_CELLS) == list(SUITES)
    for _, cell in cells:
        grade_id = cell.metadata.nbgrader.grade_id
        assert get_suite(grade_id) is SUITES[grade_id]
        assert SUITES[grade_id].points == cell.metadata.nbgrader.points
    assert sum(s.points for s in SUITES.values()) == 8


def test_catalogue_entries_name_real_cells_and_functions():
    nb = _source_notebook()
    by_id = {c.id: c for c in nb.cells}
    assert len(ENTRIES) >= 5
    for entry in ENTRIES:
        assert ANSWER_CELLS[entry.replaces] == entry.answer_cell
        defined = {n.name for n in ast.parse(by_id[entry.answer_cell].source).body if isinstance(n, ast.FunctionDef)}
        assert entry.replaces in defined
        assert set(entry.loses) <= set(TEST_CELLS)
        # The pasted source defines the public name and parses on its own.
        pasted = ast.parse(entry.source).body
        assert [n.name for n in pasted if isinstance(n, ast.FunctionDef)] == [entry.replaces]


def test_every_property_has_a_one_line_student_description():
    for suite in SUITES.values():
        for prop in suite.properties:
            assert prop.description and "\n" not in prop.description
            assert "ch11_solutions" not in prop.description


# --------------------------------------------------------------------------- tape validation


def _tape(x: float = 2.0, y: float = 3.0) -> list[TapeNode]:
    return roundtrip(ref.extended_tape(x, y))


def _replace(tape: list[TapeNode], index: int, node: TapeNode) -> list[TapeNode]:
    return [*tape[:index], node, *tape[index + 1 :]]


def test_tape_problem_accepts_the_reference_and_rejects_malformed_tapes():
    assert tape_problem(_tape()) == ""
    t = _tape()
    malformed = {
        "not a list": tuple(t),
        "six nodes": t[:6],
        "plain numbers": [n.value for n in t],
        "int value": _replace(t, 0, TapeNode(2)),
        "float32 value": _replace(t, 0, TapeNode(np.float32(2.0))),
        "nan value": _replace(t, 6, TapeNode(math.nan, t[6].parents)),
        "forward reference": _replace(t, 2, TapeNode(6.0, ((3, 3.0), (1, 2.0)))),
        "self reference": _replace(t, 2, TapeNode(6.0, ((2, 3.0), (1, 2.0)))),
        "bool index": _replace(t, 5, TapeNode(36.0, ((True, 12.0),))),
        "string derivative": _replace(t, 5, TapeNode(36.0, ((2, "12"),))),
        "triple": _replace(t, 5, TapeNode(36.0, ((2, 12.0, 0),))),
        "inf derivative": _replace(t, 5, TapeNode(36.0, ((2, math.inf),))),
    }
    for label, tape in malformed.items():
        assert tape_problem(tape), label


def test_edges_compare_per_parent_so_a_split_square_is_accepted():
    t = _tape()
    scale = _tape()
    split = _replace(t, 5, TapeNode(36.0, ((2, 6.0), (2, 6.0))))
    reordered = _replace(t, 6, TapeNode(180.0, tuple(reversed(t[6].parents))))
    assert _first_difference(split, t, scale, "edges") == ""
    assert _first_difference(reordered, t, scale, "edges") == ""
    # ... but entries that do not add up, a lost parent or an extra one are refused.
    half = _replace(t, 5, TapeNode(36.0, ((2, 6.0),)))
    lost = _replace(t, 6, TapeNode(180.0, t[6].parents[:2]))
    extra = _replace(t, 5, TapeNode(36.0, ((2, 12.0), (0, 0.0))))
    assert "12.0" in _first_difference(half, t, scale, "edges")
    assert "['b', 'c']" in _first_difference(lost, t, scale, "edges")
    assert "parents" in _first_difference(extra, t, scale, "edges")


@CHECKS
@given(coordinates, coordinates)
def test_tolerance_accepts_other_evaluation_orders(x, y):
    # A correct student may evaluate in another order; each value stays within RELATIVE * P.
    a = x * y
    others = {
        "c": (x * (y * y), ref.extended_tape(x, y)[4].value, ref.extended_tape(abs(x), abs(y))[4].value),
        "L": (x * x * y * y * (y + 2.0), ref.extended_tape(x, y)[6].value, ref.extended_tape(abs(x), abs(y))[6].value),
        "dL/dx": (2 * x * y**3 + 4 * x * y * y, ref.input_gradient(x, y)[0], ref.input_gradient(abs(x), abs(y))[0]),
        "dL/dy": (x * x * (3 * y * y + 4 * y), ref.input_gradient(x, y)[1], ref.input_gradient(abs(x), abs(y))[1]),
        "via c": ((a + x) * y, ref.contributions_into_a(x, y)[1], ref.contributions_into_a(abs(x), abs(y))[1]),
    }
    for label, (mine, want, scale) in others.items():
        assert _close(mine, want, scale), (label, x, y, mine, want)


def test_tolerance_rejects_a_one_path_error_and_a_float32_evaluation():
    x, y = PROBE_POINTS[1]["x"], PROBE_POINTS[1]["y"]
    want = ref.input_gradient(x, y)
    scale = ref.input_gradient(abs(x), abs(y))
    assert not _close(want[0] - 2 * x * y * y, want[0], scale[0])  # the d path's share of dL/dx
    in_float32 = float(np.float32(x) * np.float32(y) * np.float32(y) * np.float32(2 * x * y))
    assert not _close(2 * x * y**3 + 4 * x * y * y + (in_float32 - 2 * x * y**3), want[0], scale[0])
    assert RELATIVE < 1e-13 and FLOOR < 1e-299


# --------------------------------------------------------------------------- probe points


def _entry_output(entry, x: float, y: float):
    if entry.replaces == "extended_tape":
        tape = entry.function(x, y)
        return tape, _contributions_from_tape(tape), _gradient_from_tape(tape)
    return entry.function(x, y)


@pytest.mark.parametrize("point", PROBE_POINTS, ids=lambda p: f"{p['x']},{p['y']}")
@pytest.mark.parametrize("entry", VALUE_ENTRIES, ids=lambda e: e.name)
def test_every_entry_is_visible_at_every_probe_point(entry, point):
    x, y = point["x"], point["y"]
    if entry.replaces == "extended_tape":
        tape, parts, gradient = _entry_output(entry, x, y)
        assert _first_difference(tape, ref.extended_tape(x, y), ref.extended_tape(abs(x), abs(y)), "edges")
        outputs = [(parts, ref.contributions_into_a), (gradient, ref.input_gradient)]
    else:
        reference = {"contributions_into_a": ref.contributions_into_a, "input_gradient": ref.input_gradient}
        outputs = [(entry.function(x, y), reference[entry.replaces])]
    for got, reference_fn in outputs:
        want, scale = reference_fn(x, y), reference_fn(abs(x), abs(y))
        assert not all(_close(g, w, s) for g, w, s in zip(got, want, scale, strict=True))


def test_special_points_hide_mistakes_which_is_why_probes_come_first():
    # Last writer wins drops xy(y + 2): invisible at y = -2, visible at the probes.
    lww = next(e for e in ENTRIES if e.name == "last_writer_wins")
    np.testing.assert_array_equal(lww.function(0.7, -2.0), ref.input_gradient(0.7, -2.0))
    y_slip = next(e for e in ENTRIES if e.name == "y_bar_without_direct_edge")
    np.testing.assert_array_equal(y_slip.function(0.7, -1.0), ref.input_gradient(0.7, -1.0))
    for point in PROBE_POINTS:
        assert not np.array_equal(lww.function(**point), ref.input_gradient(**point))


def test_entries_are_told_apart_at_the_probe_points():
    # Misconception matching names the first entry that matches: no two may coincide where the suite reports.
    for point in (*PROBE_POINTS, {"x": 2.0, "y": 3.0}):
        seen: list[tuple[str, np.ndarray]] = []
        for entry in VALUE_ENTRIES:
            out = _entry_output(entry, **point)
            outs = out[1:] if entry.replaces == "extended_tape" else (out,)
            for vector in outs:
                for name, other in seen:
                    if len(other) == len(vector) and name != entry.name:
                        assert not vectors_match(roundtrip(other), roundtrip(vector)), (entry.name, name, point)
                seen.append((entry.name, vector))


@pytest.mark.parametrize("name", CONTRACT_ONLY)
def test_contract_only_entries_are_right_on_python_floats(name):
    # The reason they are left out above: only the contract properties can tell them from the reference.
    entry = next(e for e in ENTRIES if e.name == name)
    for point in PROBE_POINTS:
        out = _entry_output(entry, **point)
        if entry.replaces == "extended_tape":
            assert tapes_match(ref.extended_tape(**point), out[0])
        else:
            assert vectors_match(ref.input_gradient(**point), out)


def test_bad_inputs_cover_every_bad_value_in_each_argument():
    for slot in (0, 1):
        # Rows where this argument is the bad one (the other is a good number).
        bad = [row[slot] for row in BAD_INPUTS if _is_real(row[1 - slot]) and math.isfinite(row[1 - slot])]
        for value in (*NOT_REAL, *NOT_FINITE):
            assert any(v is value for v in bad), (slot, value)
    errors = {"TypeError": TypeError, "ValueError": ValueError}
    for x, y, argument, error_type in BAD_INPUTS:
        assert _expected_error(x, y) == (error_type, argument)
        with pytest.raises(errors[error_type]):  # the reference agrees with the table
            ref.extended_tape(x, y)


def test_number_types_are_the_accepted_ones_and_the_reference_agrees():
    for name, convert in NUMBER_TYPES.items():
        value = convert(1.5)
        assert _expected_error(value, 2.0) is None, name
        tape = ref.extended_tape(value, 2.0)
        assert all(type(node.value) is float for node in tape), name
        assert ref.input_gradient(value, 2.0).dtype == np.float64
    assert _expected_error(np.True_, 2.0) == ("TypeError", None)
    assert _expected_error(2.0, np.float32(math.inf)) == ("ValueError", "y")


def test_call_rounds_ask_each_bool_fresh_then_after_its_equal_number():
    # A cache keyed by value shows in the first round at call 6: True raised at call 1, then 1.0, then True.
    bool_types = bool | np.bool_
    for function, rounds in CALL_ROUNDS.items():
        first = rounds[0]
        assert all(any(isinstance(v, bool_types) for v in call) for call in first[:4]), function
        assert first[4][0] == 1.0 and first[5] == first[0] and first[5][0] is True
        for calls in rounds:
            prefix = calls[:4]
            assert all(any(isinstance(v, bool_types) for v in call) for call in prefix)
            later = [_call_key(*call) for call in calls[4:]]
            assert all(later.count(_call_key(*call)) >= 2 for call in prefix), "each bool is asked again"
            assert all(later.count(key) >= 2 for key in later), "every call is asked at least twice"
        assert len({tuple(map(repr, calls)) for calls in rounds}) == len(rounds)
    # Values of their own: the contributions and gradient cells read the student's tape, which an earlier
    # cell's calls may have cached, so no two functions share a point.
    points = [{_call_key(*call) for calls in rounds for call in calls} for rounds in CALL_ROUNDS.values()]
    assert all(not (a & b) for i, a in enumerate(points) for b in points[i + 1 :])


def test_number_types_compare_with_the_students_own_answer():
    x, y = PROBE_POINTS[1]["x"], PROBE_POINTS[1]["y"]
    lww = next(e for e in ENTRIES if e.name == "last_writer_wins").function
    differs = _same_vector(ref.input_gradient, ("dL/dx", "dL/dy"))
    # A wrong gradient, the same for another type: not this clause's business.
    assert differs(x, y, lww(x, y).copy(), lww(x, y)) == ""
    # ... but an answer computed in float32 and cast back is not the answer for float(x), float(y).
    in_float32 = next(e for e in ENTRIES if e.name == "gradient_dtype_follows_inputs").function
    cast = in_float32(np.float32(x), np.float32(y)).astype(np.float64)
    assert "dL/d" in differs(float(np.float32(x)), float(np.float32(y)), cast, ref.input_gradient(x, y))
    wrong_d = next(e for e in ENTRIES if e.name == "d_local_derivative_a").function
    assert _same_tape(x, y, wrong_d(x, y), wrong_d(x, y)) == ""
    assert "node 5 (d)" in _same_tape(x, y, wrong_d(x, y), ref.extended_tape(x, y))
    assert _same_tape(x, y, wrong_d(x, y)[:6], wrong_d(x, y))


def test_repeated_calls_compare_a_call_with_its_own_first_answer():
    same = _same_outcome(tapes_match)
    tape = ref.extended_tape(1.0, 0.75)
    assert same(_Raised("TypeError", "x must be a real number"), _Raised("TypeError", "x is a bool"))
    assert not same(_Raised("TypeError", "x must be a real number"), tape)
    malformed = [TapeNode(1), TapeNode(0.75)]
    assert same(malformed, list(malformed)), "a malformed answer repeated exactly is the same answer"
    assert not same(tape, ref.extended_tape(1.0, 0.5))
    vectors = _same_outcome(vectors_match)
    assert not vectors(np.array([180.0, 156.0]), np.array([180.0, 156.0], dtype=np.float32))


def test_outcomes_match_raises_by_text_and_arrays_by_dtype():
    matches = _outcome_matches(vectors_match)
    assert matches("TypeError: x must be an int", "TypeError: x must be an int")
    assert not matches("ValueError: x must be finite", "ValueError: x is nan")
    assert not matches(np.array([1.0, 2.0]), "TypeError: x")
    assert not matches(np.array([180, 156]), np.array([180.0, 156.0]))
    assert matches(np.array([180, 156]), np.array([180, 156]))
    run = _outcome(ref.extended_tape)
    assert run(x=True, y=2.0).startswith("TypeError: x")
    assert _replayed(ref.input_gradient)([(True, 1.0), (2.0, 3.0)]).tolist() == [180.0, 156.0]


def test_matching_is_tolerant_to_rounding_but_not_to_another_mistake():
    lww = next(e for e in ENTRIES if e.name == "last_writer_wins").function(1.5, -0.5)
    assert vectors_match(lww, lww * (1 + 2.0**-50))
    assert vectors_match(lww, list(lww))
    assert not vectors_match(lww, lww * 1.001)
    assert not vectors_match(lww, ref.input_gradient(1.5, -0.5))
    tape = ref.extended_tape(1.5, -0.5)
    split = _replace(tape, 5, TapeNode(tape[5].value, ((2, tape[2].value), (2, tape[2].value))))
    assert tapes_match(tape, split)
    wrong_d = next(e for e in ENTRIES if e.name == "d_local_derivative_a").function(1.5, -0.5)
    assert not tapes_match(tape, wrong_d)
    assert not tapes_match(tape, tape[:6])


# --------------------------------------------------------------------------- through the worker


def _cells(suffixes: dict[str, str] | None = None, *, released: bool = False) -> WorkerCells:
    return exercise_grading.cells("ex1", suffixes, released=released)


def grade(cells: WorkerCells) -> dict[str, CellVerdict]:
    return exercise_grading.grade("ex1", cells)


def _scores(verdicts: dict[str, CellVerdict]) -> dict[str, float]:
    return {grade_id: verdict.score for grade_id, verdict in verdicts.items()}


FULL = {grade_id: suite.points for grade_id, suite in SUITES.items()}


# The reference, the released stubs and where each entry loses: tests/autograder/exercises/test_suites.py.


@pytest.mark.slow
@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_catalogue_entry_is_named_where_it_loses(entry):
    verdicts = exercise_grading.graded_entry("ex1", entry.name)
    for grade_id in entry.loses:
        verdict = verdicts[grade_id]
        assert any(f.misconception.startswith(entry.title) for f in verdict.failures), verdict.message()
    if entry.name not in CONTRACT_ONLY:
        # One value mistake costs the value properties only: the contract properties compare the
        # student with the student, and a function wrong alike for every type and call passes them.
        for verdict in verdicts.values():
            contract = [f.property for f in verdict.failures if f.property.endswith(CONTRACT_PROPERTIES)]
            assert not contract, verdict.message()


@pytest.mark.slow
def test_grading_twice_gives_identical_feedback():
    entry = next(e for e in ENTRIES if e.name == "last_writer_wins")
    cells = _cells({entry.answer_cell: entry.source})
    first, second = grade(cells), grade(cells)
    assert {g: v.message() for g, v in first.items()} == {g: v.message() for g, v in second.items()}
    assert _scores(first) == _scores(second)


# Right answers written differently from the reference: hand formulas instead of a
# sweep, a square recorded as two edges, other evaluation orders, own input checks.
ALTERNATIVE = {
    "ex1_extended_tape": '''
def extended_tape(x, y):
    for name, v in (("x", x), ("y", y)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise TypeError(f"{name} must be a real number")
        if not math.isfinite(v):
            raise ValueError(f"{name} must be finite, got {v}")
    x, y = float(x), float(y)
    a = x * y
    b = x * y + x
    c = x * (y * y)
    d = a * a
    nodes = [TapeNode(x), TapeNode(y)]
    nodes.append(TapeNode(a, ((1, x), (0, y))))
    nodes.append(TapeNode(b, ((0, 1.0), (2, 1.0))))
    nodes.append(TapeNode(c, ((1, a), (2, y))))
    nodes.append(TapeNode(d, ((2, a), (2, a))))
    nodes.append(TapeNode(b * c + d, ((5, 1.0), (4, b), (3, c))))
    return nodes
''',
    "ex1_contributions_into_a": '''
def contributions_into_a(x, y):
    tape = extended_tape(x, y)
    y, a, b, c = tape[1].value, tape[2].value, tape[3].value, tape[4].value
    b_bar, c_bar, d_bar = c, b, 1.0
    return np.array([b_bar * 1.0, c_bar * y, d_bar * 2 * a])
''',
    "ex1_input_gradient": '''
def input_gradient(x, y):
    extended_tape(x, y)  # input checks
    x, y = float(x), float(y)
    return np.array([2 * x * y**3 + 4 * x * y * y, x * x * (3 * y * y + 4 * y)], dtype=np.float64)
''',
}


@pytest.mark.slow
def test_right_answers_written_differently_earn_full_marks():
    verdicts = grade(_cells(ALTERNATIVE))
    assert _scores(verdicts) == FULL, "\n".join(v.message() for v in verdicts.values())


HOSTILE = {
    "ex1_extended_tape": """
def extended_tape(x, y):
    if not math.isfinite(x) or not math.isfinite(y):
        raise ValueError("x or y must be finite")
    return [TapeNode("x"), TapeNode(y, ((5, 1.0),)), {"a": 1}] + [TapeNode(0.0)] * 4
""",
    "ex1_contributions_into_a": """
def contributions_into_a(x, y):
    return np.array([[18.0, 24.0, 12.0]])
""",
    "ex1_input_gradient": """
def input_gradient(x, y):
    return [180, 156] if (x, y) == (2.0, 3.0) else "no"
""",
}


@pytest.mark.slow
def test_hostile_returns_earn_nothing_and_break_nothing():
    verdicts = grade(_cells(HOSTILE))
    for verdict in verdicts.values():
        assert verdict.score < 0.5 * verdict.points, verdict.message()
        assert not any(f.kind == "internal" for f in verdict.failures), verdict.message()


@pytest.mark.slow
def test_contract_properties_fail_without_the_contracts_errors():
    unchecked = {
        "ex1_extended_tape": ref_source_without_checks(),
    }
    verdicts = grade(_cells(unchecked))
    tape_verdict = verdicts["ex1_extended_tape_tests"]
    # Bad inputs are returned and int inputs leak into the node values: the value properties (Python
    # floats only) still hold, and so does repeated_calls, since a bool gets a tape on every call alike.
    assert [f.property for f in tape_verdict.failures] == [
        "extended_tape_bad_inputs",
        "extended_tape_number_types",
    ], tape_verdict.message()
    assert str(BAD_INPUTS[0][0]) in tape_verdict.message()


def ref_source_without_checks() -> str:
    """The reference tape with its two input checks removed (a plausible omission)."""
    return '''
def extended_tape(x, y):
    a = x * y
    b = a + x
    c = a * y
    d = a * a
    return [TapeNode(x), TapeNode(y), TapeNode(a, ((0, y), (1, x))), TapeNode(b, ((2, 1.0), (0, 1.0))),
            TapeNode(c, ((2, y), (1, a))), TapeNode(d, ((2, 2.0 * a),)),
            TapeNode(b * c + d, ((3, c), (4, b), (5, 1.0)))]
'''
