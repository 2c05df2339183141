"""A submission's later notebooks, read and sanitized once for the steps that work ahead of their turns."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import nbformat
from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode

from ..verdict_cache import is_hit
from .process import grading_process
from .sanitize_once import SanitizeOnce
from .verdict_cache_lookup import VerdictCacheLookup

__all__ = ["later_notebooks", "resources_now", "resources_of"]


def resources_of(resources: ResourcesDict, notebook: str) -> ResourcesDict:
    """``resources`` (of a notebook at its turn) as another notebook of the same submission will have them."""
    other = ResourcesDict()
    other.update(resources)
    other.update({"unique_key": notebook, "output_files_dir": f"{notebook}_files",
                  "nbgrader": {**resources.get("nbgrader", {}), "notebook": notebook}})
    return other


def resources_now(resources: ResourcesDict, current: str) -> ResourcesDict:
    """A copy of the turn's ``resources`` as they are now (its steps go on changing them), for work done ahead."""
    here = resources_of(resources, current)
    here["metadata"] = dict(resources.get("metadata", {}))
    return here


def later_notebooks(config: Any, submission: tuple[str, str], current: str, resources: ResourcesDict,
                    logger: Any) -> list[tuple[str, NotebookNode]]:
    """The submission's notebooks after ``current``, each as nbgrader's sanitize steps will leave it.

    Read once per submission (``ExecutionAhead`` and ``SuitesAhead`` both ask; a second caller
    waits for the first's reading): the notebooks are shared, so callers must not change them.
    ``resources`` are the turn's as :func:`resources_of` copies them. A notebook that cannot be
    read or sanitized is left out (its turn says what is wrong), and so is one the verdict
    cache answers.
    """
    return grading_process().later_notebooks(
        submission, current, lambda: _read_later_notebooks(config, submission, current, resources, logger))


def _read_later_notebooks(config: Any, submission: tuple[str, str], current: str, resources: ResourcesDict,
                          logger: Any) -> list[tuple[str, NotebookNode]]:
    from nbformat import validator
    from nbgrader.converters import Autograde
    from nbgrader.coursedir import CourseDirectory
    from traitlets.utils.importstring import import_item

    assignment, student = submission
    coursedir = CourseDirectory(config=config)
    directory = Path(coursedir.format_path(coursedir.submitted_directory, student, assignment))
    steps = config.Autograde.get("sanitize_preprocessors") or Autograde.class_traits()[
        "sanitize_preprocessors"].default()
    quiet = logging.getLogger(f"{__name__}.ahead-sanitize")
    quiet.propagate, quiet.disabled = False, True  # nbgrader logs each step at its turn; not twice
    lookup = VerdictCacheLookup(config=config, log=quiet)
    later = []
    for path in sorted(directory.glob(coursedir.notebook_id + ".ipynb")):
        name = path.stem
        if path.name <= f"{current}.ipynb" and current:
            continue
        res = resources_of(resources, name)
        try:
            nb = nbformat.read(str(path), as_version=4)
            if hasattr(validator, "normalize"):
                _, nb = validator.normalize(nb)
            sanitize_res: dict[str, Any] = {**res, "metadata": {"name": name, "path": str(directory)}}
            for step in steps:
                cls = import_item(step) if isinstance(step, str) else step
                if isinstance(cls, type) and issubclass(cls, SanitizeOnce):
                    # Sanitized here once: the turn takes this result instead of running the steps again
                    # (sanitize_once.py), with the log lines they wrote.
                    nb, sanitize_res = cls(config=config).ahead(nb, sanitize_res)
                else:  # a course config without SanitizeOnce: its turn sanitizes again, and logs it
                    nb, sanitize_res = cls(config=config, log=quiet)(nb, sanitize_res)
            # As nbgrader writes the sanitized notebook and reads it back at its turn.
            nb = nbformat.reads(nbformat.writes(nb), as_version=4)
            if hasattr(validator, "normalize"):
                _, nb = validator.normalize(nb)
            nb, res = lookup.preprocess(nb, res)
        except Exception as exc:  # its own turn meets the same problem and reports it
            logger.info("%s is not executed or graded ahead: %s: %s", name, type(exc).__name__, exc)
            continue
        if is_hit(res):  # the cache answers it at its turn: nothing to execute
            continue
        later.append((name, nb))
    return later
