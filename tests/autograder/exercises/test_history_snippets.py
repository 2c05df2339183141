"""A failure that depends on earlier calls, or on what a call did to its arguments, shows the calls that
reproduce it, and they do: pasted into a fresh kernel after the student's cells, they give the failure shown.

For each exercise's history-dependent checks, a wrong answer that fails one (a catalogue entry or a readers'
corpus answer, ``tests/readers/``) is graded as the course grades it (a real worker, the exercise's suites), the
statements under "to reproduce, run in a fresh kernel:" are read from the verdict text the feedback page shows,
and a real kernel (jupyter_client, the ``python3`` kernel of this interpreter) runs the notebook's cells up to
and including the answer cell (or the tested function's cell), then the statements as one cell. A second fresh
kernel runs the failing statement without its history. The failure shown must appear: the snippet's last
statement raises the exception the page says it got, or returns (the value the page shows, where it prints as
the notebook prints it) where the page expected a raise; without the history it gives what the page expected.
Where the failing call misbehaves alone too (a record unlike the one an earlier call gave), an earlier
statement of the sequence, run one by one, shows the record the page expected.

Exercise 5's history checks (a chain or generator used by earlier calls) do not show statements yet.
"""

from __future__ import annotations

import functools
import queue
import re
from dataclasses import dataclass

import pytest
from ch11_autograder.authoring import kill_table
from ch11_autograder.authoring.submissions import answer_sources, fill, read
from ch11_autograder.paths import RELEASE_DIR, SOURCE_DIR
from ch11_autograder.trusted.verdict_page import verdict_text
from ch11_autograder.trusted.verdicts import verdict_outputs
from jupyter_client.manager import start_new_kernel
from support.exercise_grading import CALL_TIMEOUT, entry
from support.reader_answers import answers

pytestmark = pytest.mark.slow

_REPRODUCE = "    to reproduce, run in a fresh kernel:"
_RAISED = re.compile(r"'?(?:raised |raises )?(?P<type>[A-Z]\w*(?:Error|Exception|Warning))\b")


@dataclass(frozen=True)
class Case:
    """A wrong answer, the cell it is appended to, and the history check of a test cell it fails."""

    key: str
    notebook: str
    cell: str
    source: str
    tests: str
    prop: str
    upto: str = ""  # the last cell the kernel runs before the statements (default: the answer cell)


def _reader(name: str) -> str:
    (found,) = [a for a in answers() if a.name == name]
    return found.source


ALTERNATING_MARKS = """
import itertools

_calls = itertools.count()


def audit_marks():
    return {"paper": "chen2016", "graph_class": ["chain", "tree"][next(_calls) % 2],
            "memory_meaning": "planned_allocation", "stochastic_replay": "not_specified",
            "count_vs_wallclock": "kept_separate"}
"""

CASES = {
    # ex1: tapes cached by the value of (x, y): True after 1.0 gets 1.0's tape (a cache).
    "ex1_repeated_calls": lambda: Case("ex1", "ex1_fanout", "ex1_extended_tape",
                                       entry("ex1", "tape_memoized_by_value").source, "ex1_extended_tape_tests",
                                       "extended_tape_repeated_calls"),
    # ex2: the caller's ks sorted in place (argument mutation).
    "ex2_sweep_mutates_ks": lambda: Case("ex2", "ex2_finite_difference", "ex2_fd_sweep",
                                         entry("ex2", "sweep_sorts_callers_ks").source, "ex2_fd_sweep_tests",
                                         "sweep_calls_independent"),
    # ex3: functools.lru_cache without typed=True: 9973.0 after 9973 gets a record (a cache).
    "ex3_best_block_length_cache": lambda: Case("ex3", "ex3_block_length", "ex3_best_block_length",
                                                _reader("ex3_lru_cache_untyped"), "ex3_best_block_length_tests",
                                                "repeated_calls"),
    # ex3: a scan warm-started from the previous call (state kept between calls), seen through block_table.
    "ex3_block_table_warm_start": lambda: Case("ex3", "ex3_block_length", "ex3_best_block_length",
                                               entry("ex3", "warm_start_scan").source, "ex3_block_table_tests",
                                               "repeated_calls", upto="ex3_block_table"),
    # ex4: marks that alternate from one call to the next (repeated calls).
    "ex4_second_call": lambda: Case("ex4", "ex4_audit", "ex4_audit_marks", ALTERNATING_MARKS, "ex4_audit_marks_tests",
                                    "graph_class"),
}


@functools.cache
def _verdict_text(name: str) -> str:
    case = CASES[name]()
    cells = kill_table.notebook_cells(case.key, append={case.cell: case.source})
    verdicts = kill_table.grade(case.key, cells, CALL_TIMEOUT)
    return verdict_text({"outputs": verdict_outputs(verdicts[case.tests])})


def _block(text: str, prop: str) -> list[str]:
    """The lines of the failure of ``prop`` in a verdict text (its ``[FAIL]`` line and details)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"[FAIL] {prop}:"))
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith(("[FAIL] ", "[pass] "))), len(lines))
    return lines[start:end]


def snippet(block: list[str]) -> list[str]:
    """The statements a failure block says to paste (none when it shows no sequence)."""
    if _REPRODUCE not in block:
        return []
    out = []
    for line in block[block.index(_REPRODUCE) + 1:]:
        if not line.startswith(" " * 8):
            break
        out.append(line[8:])
    return out


def _field(block: list[str], name: str) -> str:
    return next((line.split(":", 1)[1].strip() for line in block if line.startswith(f"    {name}:")), "")


def _cells_before(case: Case) -> list[str]:
    """The code the student's kernel has run when the answer cell has run: the notebook's code cells up to
    and including the answer cell (every answer cell of the notebook solved, the wrong answer appended to its
    cell), the test cells left out."""
    solved = answer_sources(read(SOURCE_DIR / f"{case.notebook}.ipynb"))
    solved[case.cell] = "\n\n\n".join([solved[case.cell].rstrip(), case.source])
    nb = fill(read(RELEASE_DIR / f"{case.notebook}.ipynb"), solved)
    out = []
    for cell in nb.cells:
        grading = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and not (grading.get("grade") and not grading.get("solution")):
            out.append(cell.source)
        if grading.get("grade_id") == (case.upto or case.cell):
            return out
    raise AssertionError(f"{case.notebook} has no cell {case.upto or case.cell}")


@dataclass(frozen=True)
class Outcome:
    raised: str  # the exception's type, or "" when the cell ran to its end
    shown: str  # the last expression's value as the notebook prints it


def _execute(client, code: str) -> Outcome:
    msg_id = client.execute(code)
    raised, shown = "", ""
    while True:
        try:
            message = client.get_iopub_msg(timeout=120)
        except queue.Empty:
            raise AssertionError(f"the kernel did not finish {code[:80]!r}") from None
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = message["msg_type"], message["content"]
        if kind == "error":
            raised = content["ename"]
        elif kind == "execute_result":
            shown = content["data"].get("text/plain", "")
        elif kind == "status" and content["execution_state"] == "idle":
            return Outcome(raised, shown)


def run_in_fresh_kernel(setup: list[str], cells: list[str]) -> list[Outcome]:
    """``setup`` cell by cell (each must run without error), then each of ``cells``, in a new kernel."""
    manager, client = start_new_kernel(kernel_name="python3")
    try:
        for source in setup:
            done = _execute(client, source)
            assert not done.raised, f"a notebook cell raised {done.raised}: {source[:200]!r}"
        return [_execute(client, code) for code in cells]
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def without_history(statements: list[str]) -> list[str]:
    """What the failing statement gives without the history the snippet shows: the failing call alone, or,
    where the snippet ends by showing an argument a call changed (``ks``), that argument as it was given."""
    if "(" not in statements[-1]:
        return [line for line in statements if " = " in line or line == statements[-1]]
    return statements[-1:]


def _raised_type(printed: str) -> str:
    found = _RAISED.match(printed)
    return found.group("type") if found else ""


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_shown_calls_reproduce_the_failure_in_a_fresh_kernel(name):
    case = CASES[name]()
    block = _block(_verdict_text(name), case.prop)
    statements = snippet(block)
    assert statements, "\n".join(block)
    setup = _cells_before(case)
    (pasted,) = run_in_fresh_kernel(setup, ["\n".join(statements)])
    (alone,) = run_in_fresh_kernel(setup, ["\n".join(without_history(statements))])
    expected, got = _field(block, "expected"), _field(block, "got")
    if got:
        assert pasted.raised == _raised_type(got), f"page: got {got}; the pasted calls: {pasted}"
        if not pasted.raised and got.startswith(("BlockChoice(", "[")):
            assert got in pasted.shown, f"page: got {got}; the pasted calls show {pasted.shown}"
    if pasted != alone:
        if expected:
            assert alone.raised == _raised_type(expected), f"page: expected {expected}; alone: {alone}"
    else:
        # The last call gives the same alone: what the page expected is what an earlier call of the
        # sequence answered (a depth's record in an earlier table), shown when the statements run one by one.
        steps = run_in_fresh_kernel(setup, statements)
        assert expected and any(expected in step.shown for step in steps[:-1]), (
            f"the last call gives the same alone, and no earlier call shows the expected {expected}: {steps}")


def test_a_snippet_that_does_not_reproduce_is_caught():
    """The check above fails when the shown calls leave out the earlier call the failure needs: the failing
    call of ex3's lru_cache answer, alone, raises TypeError as expected instead of returning a record."""
    name = "ex3_best_block_length_cache"
    case = CASES[name]()
    block = _block(_verdict_text(name), case.prop)
    statements = snippet(block)
    assert len(statements) > 1
    (pasted,) = run_in_fresh_kernel(_cells_before(case), [statements[-1]])
    assert pasted.raised == "TypeError" != _raised_type(_field(block, "got"))


def test_a_failure_of_one_call_shows_no_sequence():
    """A check failing on one call (ex3's record types, for the readers' isqrt answer) shows its input, no
    statements to paste."""
    case = Case("ex3", "ex3_block_length", "ex3_best_block_length", _reader("ex3_sqrt_depth_isqrt"),
                "ex3_best_block_length_tests", "record_types")
    cells = kill_table.notebook_cells(case.key, append={case.cell: case.source})
    text = verdict_text({"outputs": verdict_outputs(kill_table.grade(case.key, cells, CALL_TIMEOUT)[case.tests])})
    block = _block(text, case.prop)
    assert snippet(block) == [] and _field(block, "inputs")
