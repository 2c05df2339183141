"""The exercises of assignment ch11, one package each, and THE registry that lists them.

An exercise lives in ``exercises/<key>/``: ``contract.py`` (notebook stem, grade ids,
points, constants the notebook and the suite share), ``notebook.py`` (the source
notebook's cells), ``suite.py`` (its hidden property suites, registered on import; their
checks one module per graded cell under ``checks/``),
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

Exercises of another course (a set graded by this engine that is not the chapter's) live in a
package of their own, whose ``__init__`` lists them with :func:`registry`, like this module:
from then on :func:`exercise` and the catalogue find them by key. A course grades such a set
when ``$CH11_EXERCISES`` names that package: ``nbgrader_config.py`` takes its suite modules and
worker-skipped cells from :func:`course_exercises`, which fails closed when the package cannot be
imported or lists no exercises. docs/authoring.md, "An exercise of another course".
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..untrusted.launch import EXERCISES_ENV as _EXERCISES_ENV
from ..untrusted.launch import HIDDEN_MODULES, course_packages
from .ex1 import contract as _ex1
from .ex2 import contract as _ex2
from .ex3 import contract as _ex3
from .ex4 import contract as _ex4
from .ex5 import contract as _ex5

__all__ = [
    "EXERCISES",
    "EXERCISES_ENV",
    "NOTEBOOKS",
    "SUITE_MODULES",
    "WORKER_SKIP_CELLS",
    "Exercise",
    "RegistryError",
    "course_exercises",
    "exercise",
    "notebook_builders",
    "registry",
]

#: Names the package whose ``EXERCISES`` a course grades; unset or blank: the chapter's (this module).
#: The sandbox hides that package's top level (``untrusted.launch.course_packages``).
EXERCISES_ENV = _EXERCISES_ENV


@dataclass(frozen=True)
class Exercise:
    """One exercise of the assignment.

    Attributes:
        key: the package name under ``exercises/``, e.g. ``"ex3"``; also the catalogue's key.
        notebook: the notebook's file stem, e.g. ``"ex3_block_length"``.
        worker_skip_cells: grade ids of code cells that only draw a figure: the sandboxed
            notebook execution runs them for the picture, the verdict worker need not.
        home: the registry's package, which holds the exercise's folder (default: this one).
        reference: the dotted module of the reference solution (default: ``ch11_solutions.<notebook>``).
    """

    key: str
    notebook: str
    worker_skip_cells: tuple[str, ...] = ()
    home: str = __name__
    reference: str = ""

    @property
    def package(self) -> str:
        """The exercise's dotted package name."""
        return f"{self.home}.{self.key}"

    @property
    def reference_module(self) -> str:
        """The dotted module of the exercise's reference solution."""
        return self.reference or f"ch11_solutions.{self.notebook}"

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


#: The exercises of the other registries imported so far (:func:`registry`), by key.
_OTHERS: dict[str, Exercise] = {}


class RegistryError(ValueError):
    """A registry cannot be used: the message names it and what is wrong."""


def registry(exercises: Sequence[Exercise]) -> tuple[Exercise, ...]:
    """Make ``exercises``, a set other than the chapter's, known to :func:`exercise` and the catalogue.

    Called once in the ``__init__`` of the package that holds the set (each exercise's ``home``),
    whose ``EXERCISES`` is the returned tuple; registering the same records again changes nothing.

    Raises:
        RegistryError: the set is empty, or a key is taken by another exercise.
    """
    found = tuple(exercises)
    if not found:
        raise RegistryError("a registry lists at least one exercise")
    for candidate in found:
        taken = next((e for e in EXERCISES if e.key == candidate.key), None) or _OTHERS.get(candidate.key)
        if taken is not None and taken != candidate:
            raise RegistryError(f"exercise key {candidate.key!r} of {candidate.home} is taken by {taken.home}")
    _OTHERS.update({e.key: e for e in found})
    return found


def course_exercises() -> tuple[Exercise, ...]:
    """The exercises the course grades: those of the package ``$CH11_EXERCISES`` names, else the chapter's.

    Raises:
        RegistryError: the named package cannot be imported, or its ``EXERCISES`` is not a
            non-empty tuple of :class:`Exercise` made by :func:`registry`, or an exercise's
            reference module lies outside what the sandbox hides (the named package's top level,
            ``untrusted.launch.HIDDEN_MODULES``).
    """
    name = os.environ.get(EXERCISES_ENV, "").strip()
    if not name:
        return EXERCISES
    try:
        module = importlib.import_module(name)
    except Exception as exc:
        raise RegistryError(f"${EXERCISES_ENV} names {name!r}, which cannot be imported "
                            f"({type(exc).__name__}: {' '.join(str(exc).split())})") from None
    found = getattr(module, "EXERCISES", None)
    if not (isinstance(found, tuple) and found and all(isinstance(e, Exercise) for e in found)):
        raise RegistryError(f"${EXERCISES_ENV} names {name!r}, whose EXERCISES is not a non-empty tuple of "
                            "Exercise records")
    if found != EXERCISES and any(_OTHERS.get(e.key) != e for e in found):
        raise RegistryError(f"${EXERCISES_ENV} names {name!r}, whose EXERCISES were not made by registry()")
    # What the sandbox hides: a reference anywhere else would be readable by student code.
    hidden = (*course_packages(), *HIDDEN_MODULES)
    for e in found:
        if e.reference_module.split(".")[0] not in hidden:
            raise RegistryError(f"${EXERCISES_ENV} names {name!r}, whose exercise {e.key!r} has its reference "
                                f"{e.reference_module!r} outside {hidden[0]!r}, where the sandbox cannot hide it")
    return found


def exercise(key: str) -> Exercise:
    """The exercise called ``key``: the chapter's, or one of a registry imported so far.

    Raises:
        ValueError: no exercise has that key.
    """
    for candidate in EXERCISES:
        if candidate.key == key:
            return candidate
    if key in _OTHERS:
        return _OTHERS[key]
    others = f", or of another registry: {tuple(_OTHERS)}" if _OTHERS else ""
    raise ValueError(f"unknown exercise {key!r}; expected one of {tuple(e.key for e in EXERCISES)}{others}")


def notebook_builders() -> dict[str, Callable[[], list[Any]]]:
    """Notebook stem -> cell factory, in exercise order (each factory imports its builder when called)."""
    return {e.notebook: e.cells for e in EXERCISES}
