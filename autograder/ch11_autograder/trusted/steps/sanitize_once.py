"""``SanitizeOnce``: nbgrader's sanitize steps, run once per notebook, also for a notebook read ahead of its turn.

``ExecutionAhead`` and ``SuitesAhead`` need a submission's later notebooks as nbgrader's
sanitize steps will leave them, before their turns (``later_notebooks.py``). Sanitizing a
notebook there and again at its turn would run the steps twice, and through two code paths
that could drift apart. So this step is the course's whole ``Autograde.sanitize_preprocessors``:
it runs the steps of its ``steps`` trait (nbgrader's own list by default) in order, and the
later-notebook reading sanitizes through it too (:meth:`SanitizeOnce.ahead`), keeping the result
in the process's :class:`.process.GradingProcess`. At the notebook's turn, nbgrader hands this
step the same notebook: when its content is what was sanitized ahead, that result is used
and the log lines the steps wrote then are written now, in the turn's log, as if the steps
had run here; otherwise (the file changed, the reading had not reached it, it failed) the
steps run at the turn as they always did.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
from collections.abc import Mapping, MutableMapping
from typing import Any

from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import (
    CheckCellMetadata,
    ClearOutput,
    DeduplicateIds,
    NbGraderPreprocessor,
    OverwriteCells,
    OverwriteKernelspec,
)
from traitlets import List
from traitlets.utils.importstring import import_item

from .process import Sanitized, grading_process

__all__ = ["SanitizeOnce"]


def _content_digest(nb: NotebookNode) -> str:
    return hashlib.sha256(json.dumps(nb, sort_keys=True).encode("utf-8")).hexdigest()


def _submission_notebook(resources: Mapping[str, Any]) -> tuple[tuple[str, str], str]:
    who = resources.get("nbgrader", {})
    return (str(who.get("assignment", "")), str(who.get("student", ""))), str(who.get("notebook", ""))


class _Recorder(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.NOTSET)
        self.lines: list[tuple[int, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append((record.levelno, record.getMessage()))


class SanitizeOnce(NbGraderPreprocessor):
    """nbgrader's sanitize steps (``steps``), run once per notebook: at its turn, or ahead of it and not again.

    Place alone in ``Autograde.sanitize_preprocessors``; configure the steps it runs through
    ``steps`` (each is configured by its own traits, as before).
    """

    steps = List(
        [ClearOutput, DeduplicateIds, OverwriteKernelspec, OverwriteCells, CheckCellMetadata],
        help="The sanitize steps, in order (classes or dotted names): nbgrader's own list by default.",
    ).tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict) -> tuple[NotebookNode, ResourcesDict]:
        submission, notebook = _submission_notebook(resources)
        done = grading_process().take_sanitized(submission, notebook, _content_digest(nb))
        if done is None:
            return self._run(nb, resources, None)
        for level, line in done.log:
            self.log.log(level, "%s", line)
        return done.notebook, resources

    def ahead(self, nb: NotebookNode, resources: MutableMapping[str, Any]) -> tuple[NotebookNode, Any]:
        """Sanitize ``nb`` before its turn; the turn uses this result if nbgrader hands it the same notebook.

        The steps' log lines are held for the turn, not written now. The notebook returned is
        the caller's to change: the turn gets a copy of its own.
        """
        if not self.enabled:
            return nb, resources
        submission, notebook = _submission_notebook(resources)
        digest = _content_digest(nb)
        recorder = _Recorder()
        held = logging.Logger(f"{__name__}.ahead")
        held.addHandler(recorder)
        nb, resources = self._run(nb, resources, held)
        grading_process().keep_sanitized(submission, notebook, Sanitized(digest, copy.deepcopy(nb), recorder.lines))
        return nb, resources

    def _run(self, nb: NotebookNode, resources: Any, log: logging.Logger | None) -> tuple[NotebookNode, Any]:
        for step in self.steps:
            cls: Any = import_item(step) if isinstance(step, str) else step
            # At the turn as nbgrader makes its steps: configured through their parent, logging to its log.
            instance = cls(parent=self) if log is None else cls(config=self.config, log=log)
            nb, resources = instance(nb, resources)
        return nb, resources

