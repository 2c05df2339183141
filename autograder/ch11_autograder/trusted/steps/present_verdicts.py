"""``PresentVerdicts``: each autograded test cell's verdict shown as the student reads it first.

A feedback step (``GenerateFeedback.preprocessors``, after ``SanitizeFeedback``): the verdict outputs
``TrustedVerdicts`` wrote into every autograded test cell (a stream, an ``error`` or the partial
score's ``execute_result``, which nbgrader's page showed as a bare ``Out[n]: 3.5``) are replaced, in
the page only, by one ``text/html`` output (``verdict_page.verdict_html``): the highlighted first line,
the failures, the passed checks folded. Scores are read from the gradebook before (``GetGrades``); the
autograded notebook on disk is untouched. The page's template (``templates/ch11_feedback``) reads
``resources["ch11_feedback"]``: the page's first line and each test cell's function name, for the
headings and the contents list.
"""

from __future__ import annotations

from typing import Any

from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor

from ..submission_cells import autograded_test_cells
from ..verdict_page import VerdictSections, notebook_line, read_verdict_text, verdict_html, verdict_text
from ..verdicts import task_name

__all__ = ["PresentVerdicts"]

#: Where this step leaves what the page template reads.
RESOURCES_KEY = "ch11_feedback"


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


class PresentVerdicts(NbGraderPreprocessor):
    """Replace each autograded test cell's verdict outputs by their page rendering (module docstring)."""

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict) -> tuple[NotebookNode, ResourcesDict]:
        tasks: dict[str, str] = {}
        headlines: list[tuple[str, VerdictSections]] = []
        score = points = 0.0
        for _index, cell in autograded_test_cells(nb):
            grading = cell.metadata.get("nbgrader", {})
            grade_id = str(grading.get("grade_id", ""))
            task = task_name(grade_id)
            tasks[grade_id] = task
            score += _number(grading.get("score"))
            points += _number(grading.get("points"))
            sections = read_verdict_text(verdict_text(cell))
            headlines.append((task, sections))
            cell.outputs = [NotebookNode({"output_type": "display_data", "metadata": {},
                                          "data": {"text/html": verdict_html(sections)}})]
        line, full = notebook_line(headlines, score, points)
        resources[RESOURCES_KEY] = {"first_line": line, "full": full, "tasks": tasks}
        return nb, resources
