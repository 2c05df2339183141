"""``RenderMath``: the math of markdown cells rendered to MathML, so a feedback page needs no MathJax."""

from __future__ import annotations

from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor

from ..offline_math import render_math

__all__ = ["RenderMath"]


class RenderMath(NbGraderPreprocessor):
    """Render the math of markdown cells to MathML, so the feedback page needs no MathJax.

    Place after SanitizeFeedback (the MathML it inserts is generated and checked here, see
    ``offline_math.render_math``). With the feedback template's MathJax macro replaced
    (``offline_math.TEMPLATE_BASEDIR``), the page loads nothing from the network.
    """

    def preprocess_cell(
        self, cell: NotebookNode, resources: ResourcesDict, index: int
    ) -> tuple[NotebookNode, ResourcesDict]:
        if cell.cell_type == "markdown":
            cell.source = render_math(str(cell.source))
        return cell, resources
