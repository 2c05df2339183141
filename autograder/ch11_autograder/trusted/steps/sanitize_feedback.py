"""``SanitizeFeedback``: outputs, markdown and raw cells sanitized before feedback HTML is rendered."""

from __future__ import annotations

from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Integer

from ..feedback import sanitize_notebook

__all__ = ["SanitizeFeedback"]


class SanitizeFeedback(NbGraderPreprocessor):
    """Sanitize outputs, markdown and raw cells before the feedback HTML is rendered.

    See ``feedback.sanitize_notebook``: only safe MIME types, cleaned HTML,
    no output metadata, raw cells never pasted verbatim, size caps.
    """

    max_cell_output_chars = Integer(1024**2, help="Output characters kept per cell.").tag(config=True)
    max_total_output_chars = Integer(16 * 1024**2, help="Output characters kept per notebook.").tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict) -> tuple[NotebookNode, ResourcesDict]:
        sanitize_notebook(nb, max_cell_chars=self.max_cell_output_chars, max_total_chars=self.max_total_output_chars)
        return nb, resources
