"""``StripHiddenTests``: hidden test regions removed from autograded test cells, for feedback."""

from __future__ import annotations

from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode

from ..submission_cells import is_autograded_test, strip_hidden_tests

__all__ = ["StripHiddenTests"]


class StripHiddenTests(NbGraderPreprocessor):
    """Remove hidden test regions from autograded test cells (for feedback).

    nbgrader's ``ClearHiddenTests`` is not reused: it raises on marker text in
    any non-grade cell (so a submission could break its own feedback) and on an
    unterminated region; this step touches only autograded test cells (whose
    source ``OverwriteCells`` restored from the gradebook) and removes an
    unterminated region to the end of the cell.
    """

    begin_delimiter = Unicode("BEGIN HIDDEN TESTS", help="Marker starting a hidden test region.").tag(config=True)
    end_delimiter = Unicode("END HIDDEN TESTS", help="Marker ending a hidden test region.").tag(config=True)

    def preprocess_cell(
        self, cell: NotebookNode, resources: ResourcesDict, index: int
    ) -> tuple[NotebookNode, ResourcesDict]:
        if is_autograded_test(cell):
            cell.source, _ = strip_hidden_tests(cell.source, self.begin_delimiter, self.end_delimiter)
        return cell, resources
