"""The exercises of assignment ch11, one package each, and THE registry that lists them.

An exercise lives in ``exercises/<key>/``: ``contract.py`` (notebook stem, grade ids,
points, constants the notebook and the suite share), ``notebook.py`` (the source
notebook's cells), ``suite.py`` (its hidden property suites, registered on import),
``wrong_answers.py`` (its catalogue of named wrong answers) and ``witnesses.py`` (per
contract clause, answers that break it alone: ``exercises/witness.py``). docs/authoring.md walks
through adding one.

:data:`EXERCISES` is the only list of exercises. Every other list derives from it:
authoring's notebooks (:func:`notebook_builders`), the catalogue lookup
(``exercises.catalogue``), the suite modules and the figure cells the verdict worker
skips (``nbgrader_config.py`` imports :data:`SUITE_MODULES` and
:data:`WORKER_SKIP_CELLS`), and the demo class's notebooks (:data:`NOTEBOOKS`).

Importing this module imports only the contracts (constants): no nbformat, no notebook
builder, no suite. Those are imported by name when asked for.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .ex1 import contract as _ex1
from .ex2 import contract as _ex2
from .ex3 import contract as _ex3
from .ex4 import contract as _ex4
from .ex5 import contract as _ex5

__all__ = ["EXERCISES", "NOTEBOOKS", "SUITE_MODULES", "WORKER_SKIP_CELLS", "Exercise", "exercise", "notebook_builders"]


@dataclass(frozen=True)
class Exercise:
    """One exercise of the assignment.

    Attributes:
        key: the package name under ``exercises/``, e.g. ``"ex3"``; also the catalogue's key.
        notebook: the notebook's file stem, e.g. ``"ex3_block_length"``.
        worker_skip_cells: grade ids of code cells that only draw a figure: the sandboxed
            notebook execution runs them for the picture, the verdict worker need not.
    """

    key: str
    notebook: str
    worker_skip_cells: tuple[str, ...] = ()

    @property
    def package(self) -> str:
        """The exercise's dotted package name."""
        return f"{__name__}.{self.key}"

    @property
    def suite_module(self) -> str:
        """The module that registers the exercise's suites when imported."""
        return f"{self.package}.suite"

    @property
    def wrong_answers_module(self) -> str:
        """The module that registers the exercise's catalogue entries when imported."""
        return f"{self.package}.wrong_answers"

    def cells(self) -> list[Any]:
        """The source notebook's cells (imports the builder, and with it nbformat)."""
        return importlib.import_module(f"{self.package}.notebook").cells()


#: Every exercise, in the order the assignment presents them.
EXERCISES: tuple[Exercise, ...] = (
    Exercise("ex1", _ex1.NOTEBOOK, (_ex1.FIGURE,)),
    Exercise("ex2", _ex2.NOTEBOOK, (_ex2.FIGURE,)),
    Exercise("ex3", _ex3.NOTEBOOK, (_ex3.FIGURE,)),
    Exercise("ex4", _ex4.NOTEBOOK),
    Exercise("ex5", _ex5.NOTEBOOK, (_ex5.FIGURE,)),
)

#: Notebook stems, in exercise order.
NOTEBOOKS: tuple[str, ...] = tuple(e.notebook for e in EXERCISES)
#: What ``c.TrustedVerdicts.suite_modules`` lists.
SUITE_MODULES: tuple[str, ...] = tuple(e.suite_module for e in EXERCISES)
#: What ``c.TrustedVerdicts.worker_skip_cells`` lists.
WORKER_SKIP_CELLS: tuple[str, ...] = tuple(cell for e in EXERCISES for cell in e.worker_skip_cells)


def exercise(key: str) -> Exercise:
    """The exercise called ``key``.

    Raises:
        ValueError: no exercise has that key.
    """
    for candidate in EXERCISES:
        if candidate.key == key:
            return candidate
    raise ValueError(f"unknown exercise {key!r}; expected one of {tuple(e.key for e in EXERCISES)}")


def notebook_builders() -> dict[str, Callable[[], list[Any]]]:
    """Notebook stem -> cell factory, in exercise order (each factory imports its builder when called)."""
    return {e.notebook: e.cells for e in EXERCISES}
