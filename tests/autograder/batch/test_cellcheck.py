"""The check of a submission's nbgrader cell metadata against the released notebook (batch/cellcheck.py).

Fast tests build submissions from the repository's released notebooks (and the hostile
corpus's own builders); ``test_the_check_agrees_with_nbgrader`` runs nbgrader's sanitize
steps in-process on each variant against a real gradebook, so every "error" of the check
is one nbgrader fails on (or one it would grade in a changed role, named there), and every
"fine" is one nbgrader accepts and repairs; the batch test grades three corpus cases.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import pytest
from ch11_autograder.batch import BatchOptions, grade_class, gradebook_snapshot
from ch11_autograder.batch.cellcheck import check_cells, check_submission, load_released
from support import batch_support, hostile_corpus
from support.paths import DEMO_CLASS_DIR, RELEASE_DIR, SOURCE_DIR

NOTEBOOKS = ("ex1_fanout.ipynb", "ex2_finite_difference.ipynb", "ex3_block_length.ipynb", "ex4_audit.ipynb",
             "ex5_replay.ipynb")
TEST = "ex4_audit_marks_tests"
ANSWER = "ex4_audit_marks"


@pytest.fixture(scope="module")
def released():
    return load_released(SOURCE_DIR, NOTEBOOKS)


def _index(nb: Any, grade_id: str) -> int:
    for i, cell in enumerate(nb.cells):
        if cell.metadata.get("nbgrader", {}).get("grade_id") == grade_id:
            return i
    raise KeyError(grade_id)


def _position(path: Path, grade_id: str) -> int:
    """1-based position of the first cell with ``grade_id`` in the notebook at ``path``."""
    return _index(nbformat.read(str(path), as_version=4), grade_id) + 1


def _problems(nb: Any, released, name: str = "ex4_audit.ipynb") -> list[str]:
    return [p.text for p in check_cells(json.loads(nbformat.writes(nb)), released[name])]


def _released_nb(name: str = "ex4_audit.ipynb", root: Path = RELEASE_DIR) -> Any:
    return nbformat.read(str(root / name), as_version=4)


# --------------------------------------------------------------------------- fast


def test_the_source_notebooks_have_the_released_cells_and_flags(released, tmp_path):
    # The check reads source/ch11; what students got is assignments/ch11: the same tracked cells.
    assert load_released(RELEASE_DIR, NOTEBOOKS) == released
    assert [c.grade_id for c in released["ex4_audit.ipynb"].cells if c.grade] == [
        "ex4_mathematical_object", "ex4_evidence_culture_interface", "ex4_numerical_hardware_contract",
        "ex4_discriminating_control", "ex4_transfer_verdict", TEST]
    # The comparison can fail: a notebook whose test cell lost its grade flag reads differently.
    nb = _released_nb()
    nb.cells[_index(nb, TEST)].metadata.nbgrader["grade"] = False
    nbformat.write(nb, str(tmp_path / "ex4_audit.ipynb"))
    assert load_released(tmp_path, ["ex4_audit.ipynb"])["ex4_audit.ipynb"] != released["ex4_audit.ipynb"]


def test_honest_submissions_pass(released):
    for student in sorted(DEMO_CLASS_DIR.iterdir()):
        files = {p.name: p for p in (student / "ch11").glob("*.ipynb")}
        assert len(files) == 5 and check_submission(files, released) is None, student.name
    blank = {name: RELEASE_DIR / name for name in NOTEBOOKS}
    assert check_submission(blank, released) is None


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    """The corpus's cell metadata cases, written by its own builders."""
    dest = tmp_path_factory.mktemp("metadata-corpus")
    names = ["test_cell_renamed", "test_cell_duplicated", "metadata_tampered", "test_cell_deleted", "test_cell_edited"]
    ctx = hostile_corpus.Context(course=dest / "course", class_dir=dest, allowed_root=dest)
    hostile_corpus.build_corpus(dest, ctx, [hostile_corpus.case(n) for n in names])
    return dest


def _hostile_error(hostile: Path, name: str, released) -> tuple[str | None, Path]:
    path = hostile / name / "ch11" / "ex4_audit.ipynb"
    return check_submission({"ex4_audit.ipynb": path}, released), path


def test_a_renamed_test_cell_is_named_with_what_to_do(hostile, released):
    error, path = _hostile_error(hostile, "test_cell_renamed", released)
    at = _position(path, "ex4_audit_marks_tests_v2")
    assert error is not None and error.startswith("ex4_audit.ipynb: nbgrader cell metadata differs")
    assert f"cell {at} has grade_id 'ex4_audit_marks_tests_v2', which the released notebook does not have" in error
    assert f"the released cell '{TEST}' is missing from the submission" in error
    assert "restore the released cell in its place" in error and "nbgrader was not run" in error


def test_a_duplicated_test_cell_is_named_with_what_to_do(hostile, released):
    error, path = _hostile_error(hostile, "test_cell_duplicated", released)
    first = _position(path, TEST)
    assert error is not None
    assert f"cells {first} and {first + 1} both have grade_id '{TEST}'" in error
    assert "delete the extra copy" in error


def test_a_tampered_answer_cell_is_named_with_what_to_do(hostile, released):
    error, path = _hostile_error(hostile, "metadata_tampered", released)
    at = _position(path, ANSWER)
    assert error is not None
    assert f"cell {at} (grade_id '{ANSWER}') is marked as a test cell worth 40 points" in error
    assert "released as an answer cell: restore its nbgrader metadata from the released notebook" in error
    # Its other edits (the locked vocabulary's source, the kernelspec) are nbgrader's to repair: not listed.
    assert len(check_cells(json.loads(path.read_text()), released["ex4_audit.ipynb"])) == 1


def test_deleted_and_edited_test_cells_are_left_to_nbgrader(hostile, released):
    # nbgrader restores a deleted test cell after its answer, and an edited one's source and points.
    for name in ("test_cell_deleted", "test_cell_edited"):
        assert _hostile_error(hostile, name, released)[0] is None, name


def test_values_from_the_submission_are_shown_briefly(released, tmp_path):
    # A grade_id or points value of any size goes into the record, the CSV and the summary cut short.
    huge = "x" * 100_000
    nb = _released_nb()
    nb.cells[_index(nb, TEST)].metadata.nbgrader["grade_id"] = huge
    nb.cells[_index(nb, "ex4-vocabulary")].metadata.nbgrader.update(grade=[huge], points=huge)
    path = tmp_path / "ex4_audit.ipynb"
    nbformat.write(nb, str(path))
    error = check_submission({"ex4_audit.ipynb": path}, released)
    assert error is not None and "grade_id 'xxxxxxxx" in error and "grade=['xxxx" in error
    assert len(error) < 2_000 < len(repr(huge))


def test_a_judgement_kept_from_another_submission_is_the_one_of_its_own_json(released):
    # The schema's answer is kept per metadata JSON text: `1` and `true` are told apart, in either order.
    for order in ((True, 1), (1, True)):
        found = []
        for value in order:
            nb = _released_nb()
            nb.cells[_index(nb, TEST)].metadata.nbgrader["locked"] = value
            found.append(_problems(nb, released))
        # (keyed by type: True == 1 in Python, which is why the key is the JSON text)
        by_type = {type(value).__name__: problems for value, problems in zip(order, found, strict=True)}
        assert by_type["bool"] == [], order
        assert len(by_type["int"]) == 1 and "1 is not of type 'boolean'" in by_type["int"][0], order


def _mutate(*edits: Callable[[Any], None]) -> Callable[[Any], None]:
    def apply(nb: Any) -> None:
        for edit in edits:
            edit(nb)
    return apply


def _flags(target: str, **values: Any) -> Callable[[Any], None]:
    """Set ``values`` in the nbgrader metadata of the cell whose grade_id is ``target``."""
    return lambda nb: nb.cells[_index(nb, target)].metadata.nbgrader.update(values)


def _delete(grade_id: str) -> Callable[[Any], None]:
    return lambda nb: nb.cells.pop(_index(nb, grade_id))


def _copy(grade_id: str) -> Callable[[Any], None]:
    def apply(nb: Any) -> None:
        index = _index(nb, grade_id)
        twin = copy.deepcopy(nb.cells[index])
        twin["id"] = "a-copy"
        nb.cells.insert(index + 1, twin)
    return apply


def _set_meta(grade_id: str, value: Any) -> Callable[[Any], None]:
    def apply(nb: Any) -> None:
        nb.cells[_index(nb, grade_id)].metadata["nbgrader"] = value
    return apply


def _drop_key(grade_id: str, key: str) -> Callable[[Any], None]:
    return lambda nb: nb.cells[_index(nb, grade_id)].metadata.nbgrader.pop(key)


def _student_cell(meta: dict) -> Callable[[Any], None]:
    def apply(nb: Any) -> None:
        cell = nbformat.v4.new_code_cell("x = 1")
        cell.metadata["nbgrader"] = meta
        nb.cells.append(cell)
    return apply


def _to_code(grade_id: str) -> Callable[[Any], None]:
    def apply(nb: Any) -> None:
        cell = nb.cells[_index(nb, grade_id)]
        cell.cell_type, cell.outputs, cell.execution_count = "code", [], None
    return apply


#: (variant, edit of the released ex4_audit, the check reports it, a text its report must hold).
#: The check reports exactly what nbgrader fails on, plus ``answer solution off`` (nbgrader grades it,
#: in the changed role; see batch/cellcheck.py).
EX4_VARIANTS: list[tuple[str, Callable[[Any], None], bool, str]] = [
    ("untouched", _mutate(), False, ""),
    ("test deleted", _delete(TEST), False, ""),
    ("test edited", _mutate(_flags(TEST, points=100), _drop_key(TEST, "checksum")), False, ""),
    ("test unlocked", _flags(TEST, locked=False), False, ""),
    ("answer locked", _flags(ANSWER, locked=True), False, ""),
    ("manual answer points", _flags("ex4_mathematical_object", points=100), False, ""),
    ("manual answer made code", _to_code("ex4_mathematical_object"), False, ""),
    ("read-only cell unlocked", _flags("ex4-vocabulary", locked=False), False, ""),
    ("read-only cell deleted", _delete("ex4-vocabulary"), False, ""),
    ("answer deleted", _delete(ANSWER), False, ""),
    ("test metadata removed", lambda nb: nb.cells[_index(nb, TEST)].metadata.pop("nbgrader"), False, ""),
    ("kernelspec", lambda nb: nb.metadata.update(kernelspec={"name": "bash", "display_name": "Bash"}), False, ""),
    ("test renamed", _flags(TEST, grade_id="mine"), True, "grade_id 'mine', which the released notebook"),
    ("read-only renamed", _flags("ex4-vocabulary", grade_id="mine"), True, "which the released notebook does not"),
    ("test copied", _copy(TEST), True, "both have grade_id 'ex4_audit_marks_tests'"),
    ("read-only copied", _copy("ex4-field-1"), True, "both have grade_id 'ex4-field-1'"),
    ("answer copied", _copy(ANSWER), True, "both have grade_id 'ex4_audit_marks'"),
    ("answer made a test", _flags(ANSWER, grade=True, solution=False, points=40), True, "test cell worth 40 points"),
    ("answer made a graded answer", _flags(ANSWER, grade=True, points=1), True, "manually graded answer worth 1"),
    ("answer solution off", _flags(ANSWER, solution=False), True, "released as an answer cell"),
    ("test grade off", _flags(TEST, grade=False), True, "released as a test cell worth 4 points"),
    ("test made an answer", _flags(TEST, solution=True), True, "(solution=true)"),
    ("manual answer solution off", _flags("ex4_mathematical_object", solution=False), True, "solution=false"),
    ("manual answer grade off", _flags("ex4_mathematical_object", grade=False), True, "grade=false"),
    ("read-only made a test", _flags("ex4-vocabulary", grade=True, points=5), True, "grade=true"),
    ("read-only made a task", _flags("ex4-vocabulary", task=True), True, "a task cell (task=true)"),
    ("test points text", _flags(TEST, points="abc"), True, "has points 'abc', not a number"),
    ("test points removed", _drop_key(TEST, "points"), True, "has no points"),
    ("test points a numeral", _flags(TEST, points="4"), True, "'4' is not of type 'number'"),
    ("answer points text", _flags(ANSWER, points="abc"), True, "'abc' is not of type 'number'"),
    ("schema version 99", _flags(TEST, schema_version=99), True, "Schema version is too new"),
    ("schema version removed", _drop_key(TEST, "schema_version"), True, "Outdated schema version"),
    ("unknown key", _flags(TEST, extra="x"), True, "('extra' was unexpected)"),
    ("cell_type key", _flags(TEST, cell_type="python"), True, "'python' is not one of"),
    ("metadata a string", _set_meta("ex4-vocabulary", "locked"), True, "not an object (str)"),
    ("grade_id removed", _drop_key("ex4-vocabulary", "grade_id"), True, "without a grade_id"),
    ("student cell, empty metadata", _student_cell({}), True, "without a grade_id"),
    ("student cell, own grade_id", _student_cell({"grade": False, "solution": False, "locked": False,
                                                  "grade_id": "mine", "schema_version": 3}), True, "'mine'"),
    ("manual answer deleted", _delete("ex4_mathematical_object"), True,
     "'ex4-field-1' (cell 5), only when that is an answer or grade cell of the submission, and here it is a read-only"),
    ("answer and test deleted", _mutate(_delete(TEST), _delete(ANSWER)), True, "missing from the submission too"),
]


@pytest.mark.parametrize("variant, edit, reported, text", EX4_VARIANTS, ids=[v[0] for v in EX4_VARIANTS])
def test_each_variant_is_reported_or_left_to_nbgrader(released, variant, edit, reported, text):
    nb = _released_nb()
    edit(nb)
    problems = _problems(nb, released)
    assert bool(problems) == reported, problems
    if reported:
        assert len(problems) == 1 and text in problems[0], problems
        assert "restore" in problems[0] or "delete the extra copy" in problems[0]  # says what to do


# --------------------------------------------------------------------------- against nbgrader itself


def _nbgrader_sanitize(nb: Any, notebook: str, db_url: str) -> Any:
    """nbgrader autograde's sanitize steps, as this course configures them, on ``nb`` (raises as nbgrader does)."""
    from nbgrader import preprocessors as pp

    resources = {"nbgrader": {"notebook": notebook, "assignment": "ch11", "db_url": db_url, "student": "s"}}
    for step in (pp.ClearOutput(), pp.DeduplicateIds(), pp.OverwriteKernelspec(),
                 pp.OverwriteCells(add_missing_cells=True), pp.CheckCellMetadata()):
        nb, resources = step.preprocess(nb, resources)
    return nb


def _deletions(released_dir: Path) -> list[tuple[str, str, Callable[[Any], None]]]:
    """(notebook, variant, edit): each answer and grade cell of every notebook deleted (whether nbgrader can
    put a deleted grade cell back depends on the cell released before it)."""
    out = []
    for name in NOTEBOOKS:
        for cell in _released_nb(name, released_dir).cells:
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("solution") or meta.get("grade"):
                out.append((name, f"{meta['grade_id']} deleted", _delete(meta["grade_id"])))
    return out


@pytest.mark.slow
def test_the_check_agrees_with_nbgrader(tmp_path, caplog):
    """Each variant: reported by the check exactly when nbgrader's sanitize steps fail on it; the one
    exception (an answer cell no longer marked ``solution``) is accepted by nbgrader in the changed role."""
    caplog.set_level(logging.CRITICAL)  # nbgrader warns about every repair
    course = batch_support.assigned_course(tmp_path.parent, tmp_path / "course")
    db_url = f"sqlite:///{course / 'gradebook.db'}"
    released = load_released(course / "source" / "ch11", NOTEBOOKS)
    released_dir = course / "assignments" / "ch11"
    variants = [("ex4_audit.ipynb", v, edit) for v, edit, _, _ in EX4_VARIANTS]
    variants += _deletions(released_dir)
    disagreements, graded_in_changed_role, repaired = [], [], 0
    for name, variant, edit in variants:
        nb = _released_nb(name, released_dir)
        edit(nb)
        reported = bool(_problems(nb, released, name))
        try:
            out = _nbgrader_sanitize(copy.deepcopy(nb), name.removesuffix(".ipynb"), db_url)
        except Exception:
            nbgrader_fails = True
        else:
            nbgrader_fails = False
            # What nbgrader accepts, it repairs: every tracked cell once, with the released flags and points.
            if not reported:
                cells = json.loads(json.dumps(out))["cells"]  # restored cells are plain dicts, without ids
                view = check_cells({"cells": cells}, released[name])
                seen = [c["metadata"]["nbgrader"] for c in cells if c["metadata"].get("nbgrader", {}).get("grade_id")]
                points = {m["grade_id"]: float(m["points"]) for m in seen if m.get("grade")}
                assert view == [] and points == {c.grade_id: c.points for c in released[name].cells if c.grade}, \
                    (name, variant)
                repaired += 1
        if reported != nbgrader_fails:
            (graded_in_changed_role if reported else disagreements).append((name, variant))
    assert disagreements == []
    assert graded_in_changed_role == [("ex4_audit.ipynb", "answer solution off")]
    assert repaired > 20 and len(variants) > 70, (repaired, len(variants))


# --------------------------------------------------------------------------- the batch


@pytest.mark.slow
def test_the_batch_records_the_error_without_running_nbgrader(hostile, tmp_path):
    course = batch_support.assigned_course(tmp_path.parent, tmp_path / "course")
    report = grade_class(hostile, course, BatchOptions(workers=2, sandbox="bwrap", feedback=False))
    records = {r.student: r for r in report.records}
    for name in ("test_cell_renamed", "test_cell_duplicated", "metadata_tampered"):
        record = records[name]
        assert record.status == "error" and record.error.startswith("ex4_audit.ipynb: nbgrader cell metadata"), record
        assert record.log is None and record.seconds == 0.0  # refused before nbgrader, like an intake error
        assert not (course / ".ch11-batch" / "logs" / f"{name}.log").exists()
        assert f"{name}: ex4_audit.ipynb: nbgrader cell metadata differs" in report.summary_path.read_text()
    # The cases nbgrader repairs are graded, at 0: a deleted test cell comes back, an edited one is restored.
    for name in ("test_cell_deleted", "test_cell_edited"):
        assert records[name].status == "graded" and records[name].score == 0.0, records[name]
        assert records[name].per_notebook["ex4_audit"] == 0.0 and records[name].max_score == 40.0
    assert sorted(gradebook_snapshot(course, "ch11")) == ["test_cell_deleted", "test_cell_edited"]
