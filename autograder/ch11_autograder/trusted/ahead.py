"""Grade a notebook's hidden suites while its sandboxed execution runs.

The two costly steps of autograding one notebook read disjoint parts of it:
``SandboxedExecute`` runs the cells for their outputs (in sandboxed processes), and
``TrustedVerdicts`` runs the hidden suites (hypothesis drawing in this process, the
student's functions answering in a sandboxed worker), which never read those outputs. Only
the verdict's rendering uses one thing execution writes, each test cell's execution count,
and that is applied afterwards. So the suites can start before execution, on a thread of
their own, and the two overlap on a machine with a core to spare.

``SuitesAhead`` (placed before ``SandboxedExecute``) computes :class:`SuiteInputs` from the
notebook as it arrives and starts :func:`start` with them; ``TrustedVerdicts`` computes the
inputs again from the notebook as it reaches it and :func:`take` s the early result only
when the two inputs' :attr:`SuiteInputs.key` agree. Otherwise (a step in between changed a
cell's source or its grading metadata, or a support file) the early result is discarded and
the suites run again in place: a verdict is always the one the notebook reaching
``TrustedVerdicts`` would get.

The thread owns its worker session from start to end (a sandbox may tie the worker's life
to the thread that started it). An exception raised by the early grading is raised again by
:func:`take`, where ``TrustedVerdicts`` would have raised it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from .submission_cells import WorkerCells
from .verdicts import CellVerdict

__all__ = ["SuiteInputs", "SuiteResults", "pending", "start", "take"]

_RESOURCE_KEY = "ch11_suites_ahead"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SuiteInputs:
    """Everything a notebook's suites read from it.

    Attributes:
        tests: ``(cell index, grade_id, points)`` of each autograded test cell, in notebook order.
        cells: the cells the worker runs (sources and where each visible check stands).
        support: the submission's support files, relative POSIX path -> bytes.
        key: sha256 (hex) of all of the above; equal keys mean equal verdicts' inputs.
    """

    tests: tuple[tuple[int, str, float], ...]
    cells: WorkerCells
    support: Mapping[str, bytes]
    key: str = field(init=False)

    def __post_init__(self) -> None:
        digest = hashlib.sha256()
        digest.update(json.dumps([list(self.tests), list(self.cells.sources), sorted(self.cells.checks.items())],
                                 sort_keys=True).encode("utf-8"))
        for name in sorted(self.support):
            digest.update(b"\0" + name.encode("utf-8") + b"\0" + hashlib.sha256(self.support[name]).digest())
        object.__setattr__(self, "key", digest.hexdigest())


@dataclass
class SuiteResults:
    """What grading a notebook's suites produced.

    Attributes:
        verdicts: cell index of each autograded test cell -> its verdict.
        incidents: the worker session's incidents (crashes, restarts), as logged.
    """

    verdicts: dict[int, CellVerdict]
    incidents: list[str]


class _Ahead:
    """A grading running on its own thread, for the notebook whose inputs have ``key``."""

    def __init__(self, key: str, work: Callable[[], SuiteResults], name: str) -> None:
        self.key = key
        self._result: SuiteResults | None = None
        self._error: BaseException | None = None
        # A daemon: a conversion that fails before TrustedVerdicts must not keep nbgrader from exiting.
        self._thread = threading.Thread(target=self._run, args=(work,), name=name, daemon=True)
        self._thread.start()

    def _run(self, work: Callable[[], SuiteResults]) -> None:
        try:
            self._result = work()
        except BaseException as exc:  # raised again where TrustedVerdicts would have raised it
            self._error = exc

    def result(self) -> SuiteResults:
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result


def start(resources: MutableMapping[str, Any], inputs: SuiteInputs, work: Callable[[], SuiteResults]) -> None:
    """Run ``work`` (grading ``inputs``) on a thread, for :func:`take` to collect from ``resources``."""
    name = f"ch11-suites-ahead-{resources.get('unique_key', 'notebook')}"
    resources[_RESOURCE_KEY] = _Ahead(inputs.key, work, name)


def pending(resources: Mapping[str, Any]) -> bool:
    """Whether an early grading was started for this notebook and not yet taken."""
    return isinstance(resources.get(_RESOURCE_KEY), _Ahead)


def take(resources: MutableMapping[str, Any], inputs: SuiteInputs) -> SuiteResults | None:
    """The early grading's results if it graded ``inputs``; ``None`` if none was started or it graded others.

    Waits for the early grading to end either way (two workers of one notebook never run
    at once), and raises what it raised when it graded these inputs.
    """
    ahead = resources.pop(_RESOURCE_KEY, None)
    if not isinstance(ahead, _Ahead):
        return None
    if ahead.key != inputs.key:
        try:
            ahead.result()
        except Exception as exc:  # its verdicts are discarded, and so is what went wrong with them
            log.debug("discarded early grading failed: %s", exc)
        log.warning("%s: the notebook's graded inputs changed after the suites were started early; "
                    "grading them again", resources.get("unique_key", "notebook"))
        return None
    return ahead.result()
