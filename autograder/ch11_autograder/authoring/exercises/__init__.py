"""One module per exercise; each exposes ``NOTEBOOK`` (file stem) and ``cells()``.

:data:`EXERCISES` maps notebook stem to cell factory, in the order the
assignment presents them.
"""

from __future__ import annotations

from collections.abc import Callable

from nbformat.notebooknode import NotebookNode

from . import ex3

EXERCISES: dict[str, Callable[[], list[NotebookNode]]] = {
    module.NOTEBOOK: module.cells for module in (ex3,)
}
