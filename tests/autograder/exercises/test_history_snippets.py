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

Exercise 5's history checks return records and arrays, so their failures are compared where the page says
they differ (its ``differs:`` line: a field, key or index, expected and got): the pasted statements' last
value, read there, is what the page got, and without the history it is not (:data:`EX5_CASES`).
"""

from __future__ import annotations

import functools
import math
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



# --------------------------------------------------------------------------- Exercise 5

PREVIOUS_GENERATOR = """
_store_all_given = store_all_cotangents
_previous_rng = None


def store_all_cotangents(chain, z0, rng):
    # Each call draws from the generator the call before it was given (kept, then handed on).
    global _previous_rng
    if not isinstance(rng, np.random.Generator):
        return _store_all_given(chain, z0, rng)  # refused as the reference refuses it
    use, _previous_rng = (rng if _previous_rng is None else _previous_rng), rng
    return _store_all_given(chain, z0, use)
"""

EX5_CASES = {
    # Repeated calls: each call draws from the generator the call before it was given (state kept between calls).
    "ex5_store_all_repeated_calls": lambda: Case("ex5", "ex5_replay", "ex5_store_all_cotangents", PREVIOUS_GENERATOR,
                                                 "ex5_store_all_cotangents_tests", "store_all_repeated_calls"),
    # A generator passed that drew before: a replay rebuilt from rng's seed sequence.
    "ex5_used_generator": lambda: Case("ex5", "ex5_replay", "ex5_checkpointed_cotangents",
                                       entry("ex5", "rewound_from_seed_sequence").source,
                                       "ex5_checkpointed_cotangents_tests", "checkpointed_used_generator"),
    # Argument mutation: the forward pass writes its states into the caller's z0.
    "ex5_z0_mutated": lambda: Case("ex5", "ex5_replay", "ex5_checkpointed_cotangents",
                                   entry("ex5", "z0_updated_in_place").source, "ex5_checkpointed_cotangents_tests",
                                   "checkpointed_leaves_arguments"),
    # A chain that earlier calls used: the work read off the chain's running counter.
    "ex5_used_chain": lambda: Case("ex5", "ex5_replay", "ex5_store_all_cotangents",
                                   entry("ex5", "counts_read_off_chain").source, "ex5_store_all_cotangents_tests",
                                   "store_all_used_chain", upto="ex5_checkpointed_cotangents"),
}

#: Read in the kernel after the pasted statements: the last statement's value as the page compares it (a run
#: as its counts and cotangents, as ``checks/calls.py``'s summaries), at the place the page says it differs.
_PROBE = """
def _as_compared(value):
    if type(value).__name__ == "ReplayRun":
        return {"counts": (value.forward_evaluations, value.replayed_evaluations, value.peak_states),
                "cotangents": value.cotangents}
    return value


_at = _as_compared(_last)
for _step in PATH:
    _at = _as_compared(_at[_step])
float(_at)
"""
_STEP = re.compile(r"key '(?P<key>[^']*)'|index (?P<index>\d+(?:, \d+)*)")
_DIFFERS = re.compile(r"^(?P<path>.*): expected (?P<expected>\S+), got (?P<got>[^\s,]+)")


@dataclass(frozen=True)
class Difference:
    """Where the page says expected and got differ, and the two numbers it shows there."""

    path: tuple[object, ...]
    expected: float
    got: float


def difference(block: list[str]) -> Difference:
    line = _field(block, "differs")
    found = _DIFFERS.match(line)
    assert found, "\n".join(block)
    path: list[object] = []
    for step in _STEP.finditer(found.group("path")):
        if step.group("key") is not None:
            path.append(step.group("key"))
        else:
            indices = tuple(int(i) for i in step.group("index").split(", "))
            path.append(indices[0] if len(indices) == 1 else indices)
    return Difference(tuple(path), float(found.group("expected")), float(found.group("got")))


def _read_back(setup: list[str], statements: list[str], where: Difference) -> float:
    """The pasted statements run as one cell, the last one's value read at the page's place of difference."""
    code = "\n".join([*statements[:-1], f"_last = {statements[-1]}"])
    ran, probed = run_in_fresh_kernel(setup, [code, _PROBE.replace("PATH", repr(where.path))])
    assert not ran.raised and not probed.raised, (ran, probed, statements)
    return float(probed.shown)


def ex5_without_history(statements: list[str]) -> list[str]:
    """The statements that set up the arguments (``name = ...`` given no other call), then the last statement:
    the failing call on fresh arguments, or an argument read back without the call that changed it."""
    return [line for line in statements[:-1] if re.fullmatch(r"\w+ = (np\.array|np\.random\.default_rng|"
                                                             r"make_chain)\(.*", line)] + statements[-1:]


@functools.cache
def _ex5_verdict_text(name: str) -> str:
    case = EX5_CASES[name]()
    cells = kill_table.notebook_cells(case.key, append={case.cell: case.source})
    return verdict_text({"outputs": verdict_outputs(kill_table.grade(case.key, cells, CALL_TIMEOUT)[case.tests])})


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


@pytest.mark.parametrize("name", sorted(EX5_CASES))
def test_exercise_5s_shown_calls_reproduce_the_failure_in_a_fresh_kernel(name):
    case = EX5_CASES[name]()
    block = _block(_ex5_verdict_text(name), case.prop)
    statements = snippet(block)
    assert len(statements) > 1, "\n".join(block)
    where = difference(block)
    setup = _cells_before(case)
    pasted = _read_back(setup, statements, where)
    alone = _read_back(setup, ex5_without_history(statements), where)
    assert _same(pasted, where.got), f"page: got {where.got} at {where.path}; the pasted calls give {pasted}"
    assert not _same(alone, where.got), f"without the earlier calls the failure shows too: {alone}"


def test_exercise_5s_check_fails_a_snippet_without_its_history():
    """The check above fails when the shown statements leave out what the failure needs: the z0 mutation
    read back without the call that changed it gives the page's expected, not its got."""
    name = "ex5_z0_mutated"
    case = EX5_CASES[name]()
    block = _block(_ex5_verdict_text(name), case.prop)
    statements = snippet(block)
    where = difference(block)
    alone = _read_back(_cells_before(case), ex5_without_history(statements), where)
    assert _same(alone, where.expected) and not _same(alone, where.got)
