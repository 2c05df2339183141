"""Exercise 4's hidden suite, catalogue and notebook, graded through the real worker.

Unit tests check the suite's own parts (form validation of hostile return values, the
reread table, feedback that does not give the answer away), each next to a deliberately
wrong variant that the same check rejects. Worker tests (marked slow) build submissions
from the generated source notebook and grade them with an unsandboxed, quiet worker:
reference -> full marks; released stub -> zero; each catalogue entry -> loses exactly its
field and is named; hostile returns -> zero with a message.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from ch11_autograder.exercises.catalogue import catalogue
from ch11_autograder.exercises.ex4.contract import MARKS_POINTS as POINTS
from ch11_autograder.exercises.ex4.contract import MARKS_TESTS as GRADE_ID
from ch11_autograder.exercises.ex4.suite import (
    MAX_VALUE_CHARS,
    REREAD,
    SUITE,
    FormError,
    field_feedback,
    validate_marks,
)
from ch11_autograder.protocol import Record
from ch11_autograder.trusted.registry import get_suite, register
from ch11_autograder.trusted.submission_cells import WorkerCells, autograded_test_cells
from ch11_autograder.trusted.verdicts import CellVerdict
from ch11_solutions import ex4_audit as ref
from hypothesis import given, settings
from hypothesis import strategies as st
from nbgrader.preprocessors import ClearSolutions
from support import exercise_grading

ANSWER_CELL = "ex4_audit_marks"
REFERENCE = ref.reference_marks("chen2016").as_dict()
PAPERS = sorted(ref.ANSWER_KEYS)
#: Longest form-error message the suite may produce (four of them appear in one verdict).
MAX_FORM_MESSAGE = 600


def _rejected(paper: str, field: str) -> list[str]:
    accepted = ref.ANSWER_KEYS[paper].fields[field].accepted_in_order()
    return [v for v in ref.VALUE_DESCRIPTIONS[field] if v not in accepted]


REJECTED = [(p, f, v) for p in PAPERS for f in ref.FIELDS for v in _rejected(p, f)]


# --------------------------------------------------------------------------- form validation

Validator = Callable[[Any], dict[str, str]]

_HUGE = "x" * 90_000
#: (label, hostile value, a word the message must contain)
HOSTILE: list[tuple[str, Any, str]] = [
    ("none", None, "None"),
    ("list", ["chen2016", "chain"], "a list"),
    ("str", "chen2016", "a str"),
    ("tuple", tuple(REFERENCE.items()), "a tuple"),
    ("record", Record("AuditMarks", REFERENCE), "record"),
    ("extra key", {**REFERENCE, "notes": "see Sec. 4"}, "'notes'"),
    ("many extra keys", {**REFERENCE, **{f"k{i}" * 30: "v" for i in range(1000)}}, "and 995 more"),
    ("missing key", {k: v for k, v in REFERENCE.items() if k != "count_vs_wallclock"}, "count_vs_wallclock"),
    ("int value", {**REFERENCE, "graph_class": 3}, "graph_class"),
    ("list value", {**REFERENCE, "memory_meaning": ["planned_allocation"]}, "memory_meaning"),
    ("huge paper", {**REFERENCE, "paper": _HUGE}, "paper"),
    ("huge mark", {**REFERENCE, "stochastic_replay": _HUGE}, "stochastic_replay"),
    ("just too long", {**REFERENCE, "graph_class": "c" * (MAX_VALUE_CHARS + 1)}, "graph_class"),
    ("near miss", {**REFERENCE, "graph_class": "Chain"}, "'chain'"),
    ("other vocabulary", {**REFERENCE, "memory_meaning": "chain"}, "memory_meaning"),
    ("unsupported paper", {**REFERENCE, "paper": "gruslys2016"}, "'chen2016'"),
    ("long unsupported paper", {**REFERENCE, "paper": "p" * 60}, "..."),
]


def form_problems(validator: Validator) -> list[str]:
    """What a validator gets wrong: a good form refused, or hostile input not refused clearly."""
    problems = []
    try:
        if validator(dict(REFERENCE)) != REFERENCE:
            problems.append("reference: changed")
    except Exception as exc:
        problems.append(f"reference: refused ({exc})")
    for label, value, word in HOSTILE:
        try:
            validator(value)
        except FormError as exc:
            text = str(exc)
            if word not in text:
                problems.append(f"{label}: message lacks {word!r}")
            if len(text) > MAX_FORM_MESSAGE:
                problems.append(f"{label}: message of {len(text)} characters")
        except Exception as exc:
            problems.append(f"{label}: raised {type(exc).__name__}, not FormError")
        else:
            problems.append(f"{label}: accepted")
    return problems


def _lax(value: Any) -> dict[str, str]:
    """A plausible bug: trusts any mapping, checks nothing else."""
    return dict(value)


def _echoing(value: Any) -> dict[str, str]:
    """A plausible bug: right decisions, but the message quotes the whole value back."""
    try:
        return validate_marks(value)
    except FormError:
        raise FormError(f"these marks are not valid: {value!r}") from None


def test_validation_accepts_the_reference_and_refuses_every_hostile_value():
    assert form_problems(validate_marks) == []


@pytest.mark.parametrize("wrong", [_lax, _echoing])
def test_a_lax_or_echoing_validator_is_caught(wrong):
    assert form_problems(wrong)


def test_every_bad_mark_is_named_at_once():
    bad = {**REFERENCE, "graph_class": "DAG", "count_vs_wallclock": "fast"}
    with pytest.raises(FormError) as caught:
        validate_marks(bad)
    assert "graph_class: 'DAG'" in str(caught.value)
    assert "count_vs_wallclock: 'fast'" in str(caught.value)


_ATOMS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True),
    st.text(max_size=80),
    st.sampled_from(["chen2016", *(v for f in ref.FIELDS for v in ref.VALUE_DESCRIPTIONS[f])]),
)
_KEYS = st.one_of(st.sampled_from(["paper", *ref.FIELDS]), st.text(max_size=20))
_VALUES = st.recursive(
    _ATOMS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_KEYS, inner, max_size=6)),
    max_leaves=12,
)


@settings(max_examples=200, derandomize=True, database=None, deadline=None)
@given(value=st.one_of(_VALUES, st.fixed_dictionaries({k: _ATOMS for k in ("paper", *ref.FIELDS)})))
def test_any_decoded_value_is_either_valid_marks_or_a_short_form_error(value):
    try:
        marks = validate_marks(value)
    except FormError as exc:
        assert len(str(exc)) <= MAX_FORM_MESSAGE
        return
    assert list(marks) == ["paper", *ref.FIELDS]
    assert marks["paper"] in ref.SUPPORTED_PAPERS
    assert all(marks[f] in ref.VALUE_DESCRIPTIONS[f] for f in ref.FIELDS)
    assert ref.score_audit(marks).total in {0.0, 0.25, 0.5, 0.75, 1.0}


# --------------------------------------------------------------------------- reread table and feedback

_SEC = re.compile(r"Sec\.\s*(\d+(?:\.\d+)?)(?:\s*(?:to|-)\s*(\d+(?:\.\d+)?))?")


def table_problems(table: Any) -> list[str]:
    """Where a reread table does not cover exactly the rejected values, or cites a missing section."""
    problems = []
    if set(table) != set(ref.ANSWER_KEYS):
        problems.append(f"papers {sorted(table)}")
    for paper in set(table) & set(ref.ANSWER_KEYS):
        headings = {h.split()[0] for h in ref.SUPPORTED_PAPERS[paper].sections}
        for field in ref.FIELDS:
            rows = table[paper].get(field, {})
            if set(rows) != set(_rejected(paper, field)):
                problems.append(f"{paper}/{field}: rows {sorted(rows)}")
            for value, row in rows.items():
                cited = [n for pair in _SEC.findall(row.sections + " " + row.reason) for n in pair if n]
                if not _SEC.search(row.sections):
                    problems.append(f"{paper}/{field}/{value}: no section to reread")
                problems += [f"{paper}/{field}/{value}: Sec. {n} not in the paper" for n in cited if n not in headings]
    return problems


def test_the_reread_table_covers_exactly_the_rejected_values_with_real_sections():
    assert table_problems(REREAD) == []


def test_a_table_with_a_gap_an_accepted_row_or_an_invented_section_is_caught():
    rows = {p: {f: dict(v) for f, v in fields.items()} for p, fields in REREAD.items()}
    gap = {p: {f: dict(v) for f, v in fields.items()} for p, fields in rows.items()}
    del gap["chen2016"]["stochastic_replay"]["specified"]
    assert table_problems(gap) == ["chen2016/stochastic_replay: rows ['not_applicable']"]
    extra = {p: {f: dict(v) for f, v in fields.items()} for p, fields in rows.items()}
    extra["chen2016"]["graph_class"]["chain"] = rows["chen2016"]["graph_class"]["tree"]
    assert table_problems(extra)
    invented = {p: {f: dict(v) for f, v in fields.items()} for p, fields in rows.items()}
    row = rows["chen2016"]["memory_meaning"]["unspecified"]
    invented["chen2016"]["memory_meaning"]["unspecified"] = type(row)("Sec. 7.2", row.reason)
    assert table_problems(invented) == ["chen2016/memory_meaning/unspecified: Sec. 7.2 not in the paper"]


def revealed(text: str, paper: str, field: str) -> list[str]:
    """Pieces of ``text`` that give away the key's answer for ``field``."""
    key = ref.ANSWER_KEYS[paper].fields[field]
    found = []
    for value in key.accepted_in_order():
        spellings = [f"'{value}'", f'"{value}"']
        if "_" in value:
            spellings += [value, value.replace("_", " ")]
        found += [s for s in spellings if s in text]
    if key.rationale in text:
        found.append("the key's rationale")
    return found


@pytest.mark.parametrize(("paper", "field", "value"), REJECTED)
def test_feedback_for_a_wrong_mark_asks_and_points_without_giving_the_answer(paper, field, value):
    text = field_feedback(paper, field, value)
    assert revealed(text, paper, field) == []
    assert ref.FIELD_QUESTIONS[field] in text
    assert REREAD[paper][field][value].reason in text
    assert f"Reread {REREAD[paper][field][value].sections}." in text
    assert f"{value!r}" in text
    short = field_feedback(paper, field, value, with_reason=False)
    assert REREAD[paper][field][value].reason not in short
    assert "Reread" in short


@pytest.mark.parametrize(("paper", "field", "value"), REJECTED)
def test_the_reference_scorers_feedback_would_give_the_answer_away(paper, field, value):
    # The reference's own feedback names the accepted values: the suite must not reuse it.
    marks = {**ref.reference_marks(paper).as_dict(), field: value}
    assert revealed(ref.score_audit(marks).feedback[field], paper, field)


def test_catalogue_advice_does_not_give_the_answer_away():
    for entry in catalogue("ex4"):
        marks = entry.function()
        wrong = [f for f in ref.FIELDS if marks[f] in _rejected(marks["paper"], f)]
        assert len(wrong) == 1, entry.name
        assert revealed(entry.advice, marks["paper"], wrong[0]) == [], entry.name
        assert _SEC.search(entry.advice), entry.name


def test_feedback_for_an_accepted_value_is_refused():
    with pytest.raises(KeyError):
        field_feedback("chen2016", "graph_class", "chain")


# --------------------------------------------------------------------------- the suite against the notebook


def _source_notebook():
    return exercise_grading.source_notebook("ex4")


def test_suite_matches_the_notebooks_autograded_cell():
    cells = autograded_test_cells(_source_notebook())
    assert [c.metadata.nbgrader.grade_id for _, c in cells] == [GRADE_ID]
    assert cells[0][1].metadata.nbgrader.points == POINTS == SUITE.points
    assert [p.name for p in SUITE.properties] == list(ref.FIELDS)
    assert register(SUITE) is SUITE
    assert get_suite(GRADE_ID) is SUITE


def test_released_stub_holds_no_answer_and_no_rubric():
    released, _ = ClearSolutions().preprocess(_source_notebook(), {})
    by_id = {c.id: c for c in released.cells}
    answer = by_id[ANSWER_CELL].source
    assert "raise NotImplementedError()" in answer
    for field in ref.FIELDS:
        assert not any(f"'{v}'" in answer or f'"{v}"' in answer for v in ref.VALUE_DESCRIPTIONS[field])
    manual = [c for c in released.cells if c.metadata.nbgrader.get("grade") and c.cell_type == "markdown"]
    assert len(manual) == 5
    assert all(c.source == "YOUR ANSWER HERE" for c in manual)
    assert "Rubric" not in "".join(c.source for c in released.cells)


def _cells(answer_suffix: str = "", *, released: bool = False) -> WorkerCells:
    return exercise_grading.cells("ex4", {ANSWER_CELL: answer_suffix} if answer_suffix else None, released=released)


def grade(cells: WorkerCells) -> CellVerdict:
    return exercise_grading.grade("ex4", cells)[GRADE_ID]


def _marks_source(marks: dict[str, Any]) -> str:
    return f"def audit_marks():\n    return {marks!r}\n"


# Different marks on every other call (a stand-in for marks drawn at random).
_ALTERNATING = (
    "import itertools\n_calls = itertools.count()\n\n"
    f"def audit_marks():\n    return {{**{REFERENCE!r}, 'graph_class': ['chain', 'tree'][next(_calls) % 2]}}\n"
)

# Changes every second call, in step with a suite calling twice per property (the notebook calls
# it once first): each such window saw one answer, and it scored 3 of 4 points.
# A stand-in for a hedge between two values drawn at random.
_CHANGES_IN_PAIRS = (
    "import itertools\n_calls = itertools.count()\n\n"
    "def audit_marks():\n"
    "    replay = ['not_specified', 'specified'][(next(_calls) + 1) // 2 % 2]\n"
    f"    return {{**{REFERENCE!r}, 'stochastic_replay': replay}}\n"
)


# The reference, the released stub and where each entry loses: tests/autograder/exercises/test_suites.py.


@pytest.mark.slow
def test_the_released_stub_fails_each_mark_and_the_notebooks_own_checks():
    verdict = grade(_cells(released=True))
    assert len(verdict.failures) == len(ref.FIELDS) + 1  # each mark, and the notebook's own checks
    assert verdict.failures[0].property == "visible_checks"


@pytest.mark.slow
def test_a_correct_answer_written_differently_earns_full_marks():
    different = """
def audit_marks():
    marks = dict(paper="chen2016")
    marks.update(graph_class="segmented_dag", memory_meaning="planned_allocation")
    for field, value in zip(MARK_FIELDS[2:], ("not_specified", "kept_separate")):
        marks[field] = value
    return marks
"""
    verdict = grade(_cells(different))
    assert verdict.score == POINTS, verdict.message()


@pytest.mark.slow
@pytest.mark.parametrize("entry", catalogue("ex4"), ids=lambda e: e.name)
def test_catalogue_entry_loses_its_field_and_is_named(entry):
    verdict = exercise_grading.graded_entry("ex4", entry.name)[GRADE_ID]
    marks = entry.function()
    wrong = [f for f in ref.FIELDS if marks[f] in _rejected(marks["paper"], f)]
    assert entry.answer_cell == ANSWER_CELL and entry.loses == (GRADE_ID,)
    assert verdict.score == POINTS - len(wrong), verdict.message()
    assert [f.property for f in verdict.failures] == wrong
    failure = verdict.failures[0]
    assert failure.misconception == entry.title
    assert entry.title in verdict.message()
    assert revealed(verdict.message(), marks["paper"], wrong[0]) == []


@pytest.mark.slow
@pytest.mark.parametrize(("paper", "field", "value"), REJECTED)
def test_one_wrong_mark_costs_one_point_and_its_feedback_hides_the_answer(paper, field, value):
    marks = {**ref.reference_marks(paper).as_dict(), field: value}
    verdict = grade(_cells(_marks_source(marks)))
    assert verdict.score == POINTS - 1, verdict.message()
    (failure,) = verdict.failures
    assert failure.property == field
    assert failure.kind == "mismatch"
    text = verdict.message()
    assert "expected:" not in text
    assert revealed(text, paper, field) == []
    assert "Reread" in text and "Sec." in text
    assert REREAD[paper][field][value].reason in text or failure.misconception


@pytest.mark.slow
@pytest.mark.parametrize(
    ("label", "source", "phrase"),
    [
        ("not a dict", "def audit_marks():\n    return ['chen2016', 'chain']\n", "returned a list"),
        ("a record", "from dataclasses import dataclass\n\n@dataclass\nclass M:\n    paper: str = 'chen2016'\n\n"
         "def audit_marks():\n    return M()\n", "record of type 'M'"),
        ("huge string", _marks_source({**REFERENCE, "graph_class": "chain" * 19_000}), "95000 characters"),
        ("extra key", _marks_source({**REFERENCE, "confidence": "high"}), "unexpected key(s) 'confidence'"),
        ("unsupported paper", _marks_source({**REFERENCE, "paper": "griewank2000"}), "supported ids: 'chen2016'"),
        ("raises", "def audit_marks():\n    raise ValueError('not read yet')\n", "not read yet"),
        ("changes between calls", _ALTERNATING, "same marks every time"),
        ("changes every two calls", _CHANGES_IN_PAIRS, "same marks every time"),
    ],
    ids=lambda x: x if isinstance(x, str) and len(x) < 25 else "",
)
def test_hostile_or_broken_returns_score_zero_with_a_message(label, source, phrase):
    verdict = grade(_cells(source))
    assert verdict.score == 0.0, (label, verdict.message())
    assert phrase in verdict.message(), (label, verdict.message())
    assert len(verdict.message()) < 4 * 1200, label


@pytest.mark.slow
def test_grading_twice_gives_identical_feedback():
    marks = {**REFERENCE, "graph_class": "tree", "count_vs_wallclock": "confused"}
    first, second = grade(_cells(_marks_source(marks))), grade(_cells(_marks_source(marks)))
    assert first.score == second.score == POINTS - 2
    assert first.message() == second.message()


def test_a_value_of_the_wrong_kind_is_named_with_its_article():
    with pytest.raises(FormError) as caught:
        validate_marks(3)
    assert "an int" in str(caught.value) and "a int" not in str(caught.value)
