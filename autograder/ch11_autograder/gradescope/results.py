"""results.json for Gradescope, from a graded course (Gradescope's autograder specification).

Fields written (all documented by Gradescope, "Autograder Specifications"):

* top level: ``score`` (autograded points), ``execution_time`` (seconds, int),
  ``output`` (summary for the student, its first line every autograded check passed or the first thing
  to fix), ``output_format`` ``"text"``,
  ``stdout_visibility`` ``"hidden"`` (nbgrader's log is for instructors),
  ``extra_data`` (status and input digest), ``tests``;
* one test per autograded test cell, in notebook order: ``name`` (the notebook and the function the cell
  checks),
  ``number``, ``score``, ``max_score``, ``status`` (``passed``/``failed``),
  ``visibility``, ``output`` (the verdict the trusted grader wrote into the
  cell: which property failed, a counterexample, advice; never the hidden
  test's source), ``output_format`` and ``name_format`` ``"text"``.

Every string is plain text (``"text"`` format): a submission's file names and
values shown in verdicts are never rendered as HTML or Markdown.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import nbformat
from nbgrader.api import Gradebook, MissingEntry

from ..batch.merge import autograded_cells
from ..batch.records import SubmissionRecord
from ..batch.report import format_score
from ..course_layout import AUTOGRADED, GRADEBOOK, student_folder
from ..trusted.verdict_page import all_passed_line, cell_line, read_verdict_text, verdict_text
from ..trusted.verdicts import task_name

__all__ = ["VISIBILITIES", "failure_results", "results_for", "write_results"]

VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
MAX_TEST_OUTPUT_CHARS = 20_000


def _cell_text(cell: Any) -> str:
    """The verdict text TrustedVerdicts wrote into an autograded test cell's outputs, capped."""
    text = verdict_text(cell).strip()
    if len(text) > MAX_TEST_OUTPUT_CHARS:
        text = text[: MAX_TEST_OUTPUT_CHARS - 40].rstrip() + "\n... (output shortened)"
    return text


def _first_line(tests: list[dict[str, Any]], total: float, possible: float) -> str:
    """The results' first line: every autograded check passed, or the first failing test's first line."""
    if tests and all(t["score"] >= t["max_score"] for t in tests):
        return all_passed_line(total, possible)
    for test in tests:
        if test["score"] < test["max_score"]:
            sections = read_verdict_text(test["output"])
            if not sections.shaped:  # a notebook not submitted or not graded: its own one line says why
                return f"{test['name']}: {test['output'].split(chr(10), 1)[0]}"
            line = cell_line(test["name"], sections)
            return line if line.startswith(test["name"]) else f"{test['name']}: {line}"
    return ""


def _test(name: str, number: str, score: float, max_score: float, output: str, visibility: str) -> dict[str, Any]:
    return {
        "name": name,
        "name_format": "text",
        "number": number,
        "score": score,
        "max_score": max_score,
        "status": "passed" if score >= max_score else "failed",
        "output": output,
        "output_format": "text",
        "visibility": visibility,
    }


def results_for(
    course: Path,
    record: SubmissionRecord,
    *,
    assignment: str,
    visibility: str = "visible",
    execution_time: float = 0.0,
) -> dict[str, Any]:
    """results.json content for ``record``'s student in ``course`` (graded, or an error)."""
    if visibility not in VISIBILITIES:
        raise ValueError(f"visibility must be one of {', '.join(VISIBILITIES)}")
    with Gradebook(f"sqlite:///{course / GRADEBOOK}") as gb:
        cells = autograded_cells(gb, assignment)
        order = {nb.name: i for i, nb in enumerate(sorted(gb.find_assignment(assignment).notebooks,
                                                             key=lambda n: n.name))}
        scores: dict[tuple[str, str], float] = {}
        manual_points = 0.0
        if record.status != "error":
            try:
                sub = gb.find_submission(assignment, record.student)
                for nb in sub.notebooks:
                    for grade in nb.grades:
                        scores[(nb.name, grade.name)] = float(grade.score)
                        if grade.needs_manual_grade:
                            manual_points += float(grade.max_score)
            except MissingEntry:
                pass
    tests = []
    graded = record.status != "error" and bool(scores)
    for notebook in sorted(cells, key=lambda n: order.get(n, 0)):
        path = student_folder(course, AUTOGRADED, record.student, assignment) / f"{notebook}.ipynb"
        texts: dict[str, str] = {}
        in_order = list(cells[notebook])
        if graded and path.is_file():
            nb = nbformat.read(path, as_version=4)
            in_order = []
            for cell in nb.cells:
                grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
                if grade_id in cells[notebook] and grade_id not in in_order:
                    in_order.append(grade_id)
                    texts[grade_id] = _cell_text(cell)
            in_order += [c for c in cells[notebook] if c not in in_order]
        for index, grade_id in enumerate(in_order, start=1):
            max_score = cells[notebook][grade_id]
            if not graded:
                output = "Not graded: see the message at the top."
            elif not path.is_file():
                output = f"{notebook}.ipynb was not submitted: 0 points."
            else:
                output = texts.get(grade_id) or "No verdict was recorded for this cell."
            score = scores.get((notebook, grade_id), 0.0) if graded else 0.0
            tests.append(_test(f"{notebook}: {task_name(grade_id)}", f"{order.get(notebook, 0) + 1}.{index}",
                               score, max_score, output, visibility))
    total = round(sum(t["score"] for t in tests), 6)
    possible = round(sum(t["max_score"] for t in tests), 6)
    if graded:
        lines = [_first_line(tests, total, possible),
                 f"Autograded: {format_score(total)} of {format_score(possible)} points."]
        if manual_points:
            lines.append(f"Answers graded by hand ({format_score(manual_points)} points) are scored separately "
                         "by your instructor.")
    else:
        lines = ["Your submission could not be graded automatically: " + _student_error(record)]
    lines += [f"Note: {note}" for note in record.notes]
    return {
        "score": total,
        "execution_time": round(execution_time),
        "output": "\n".join(lines),
        "output_format": "text",
        "test_output_format": "text",
        "test_name_format": "text",
        "stdout_visibility": "hidden",
        "visibility": visibility,
        "extra_data": {"status": record.status, "sha256": record.sha256},
        "tests": tests,
    }


def _student_error(record: SubmissionRecord) -> str:
    """The cause, in words meant for the student (intake causes name their file; grader internals do not leak)."""
    error = record.error or "unknown error"
    if record.log is None:  # refused at intake: malformed JSON, wrong nbformat, missing notebooks, ...
        return error + "."
    if error.startswith("time limit"):
        return "grading did not finish within the time limit. Check for very slow or endless loops and resubmit."
    return "the grader failed on it. Your instructor can see the details in the autograder output."


def failure_results(message: str, execution_time: float = 0.0) -> dict[str, Any]:
    """A results.json for when grading itself broke: zero, and a message for the student."""
    return {
        "score": 0,
        "execution_time": round(execution_time),
        "output": message,
        "output_format": "text",
        "stdout_visibility": "hidden",
        "tests": [],
    }


def write_results(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as JSON to ``path`` atomically (Gradescope reads it after run_autograder exits)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=1, allow_nan=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)
