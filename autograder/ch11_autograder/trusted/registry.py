"""The registry of hidden property suites: nbgrader ``grade_id`` -> :class:`CellSuite`.

An exercise's suites live in their own module (e.g.
``ch11_autograder/exercises/ex3/suite.py``) that registers them when imported::

    from ch11_autograder.trusted.registry import register
    from ch11_autograder.trusted.cell_suite import CellSuite

    register(CellSuite("ex3_best_block_length", points=3, properties=[...]))

The grader imports the modules listed in ``c.TrustedVerdicts.suite_modules``
(``nbgrader_config.py``, marked section) before grading; an entry is a
dotted module name or a path to a ``.py`` file. An autograded test cell
whose ``grade_id`` has no registered suite scores 0 (fail-closed).

This module only holds the registry; it registers nothing itself and knows no
exercise: suite modules are imported by the names configuration gives.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType

from .cell_suite import CellSuite

__all__ = ["clear", "get_suite", "load_suite_modules", "register", "registered", "unregister"]

_REGISTRY: dict[str, CellSuite] = {}


def register(suite: CellSuite) -> CellSuite:
    """Register ``suite`` under its ``grade_id`` and return it (usable as a decorator target).

    Registering the same object again is a no-op (modules may be imported twice
    under different names).

    Raises:
        TypeError: ``suite`` is not a CellSuite.
        ValueError: another suite is already registered for that ``grade_id``.
    """
    if not isinstance(suite, CellSuite):
        raise TypeError(f"register() takes a CellSuite, got {type(suite).__name__}")
    existing = _REGISTRY.get(suite.grade_id)
    if existing is not None and existing is not suite:
        raise ValueError(f"a suite for grade_id {suite.grade_id!r} is already registered")
    _REGISTRY[suite.grade_id] = suite
    return suite


def unregister(grade_id: str) -> None:
    """Remove the suite for ``grade_id`` if there is one."""
    _REGISTRY.pop(grade_id, None)


def clear() -> None:
    """Remove every suite (tests only)."""
    _REGISTRY.clear()


def get_suite(grade_id: str) -> CellSuite | None:
    """The suite registered for ``grade_id``, or ``None``."""
    return _REGISTRY.get(grade_id)


def registered() -> Mapping[str, CellSuite]:
    """A read-only view of the registry."""
    return MappingProxyType(_REGISTRY)


def load_suite_modules(specs: Iterable[str]) -> None:
    """Import each suite module once so that it registers its suites.

    Args:
        specs: dotted module names (``ch11_autograder.exercises.ex3.suite``) or paths to
            ``.py`` files (imported under a private name derived from the path).

    Raises:
        ImportError: a module cannot be found or fails to import.
    """
    for spec in specs:
        if spec.endswith(".py") or "/" in spec:
            path = Path(spec).resolve()
            name = "_ch11_suite_" + hashlib.sha256(str(path).encode()).hexdigest()[:16]
            if name in sys.modules:
                continue
            module_spec = importlib.util.spec_from_file_location(name, path)
            if module_spec is None or module_spec.loader is None:
                raise ImportError(f"cannot load suite module from {path}")
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[name] = module
            try:
                module_spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[name]
                raise
        else:
            importlib.import_module(spec)
