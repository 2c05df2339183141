"""What one sandboxed notebook execution reads, and what it produced.

:class:`ExecutionInput` is everything ``SandboxedExecute`` hands the sandbox for one
notebook: the notebook file's exact text, the support files and the runner's job. Its
:attr:`~ExecutionInput.key` is a digest of all of it, so two equal keys mean the same
run (``execution_ahead.py`` uses it to tell whether a run made ahead of a notebook's turn
is the run the turn would make). :class:`ExecutionRun` is what came back.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..untrusted.capped_run import RunResult

__all__ = ["ExecutionInput", "ExecutionRun"]


@dataclass(frozen=True)
class ExecutionInput:
    """One notebook's sandboxed execution, as input.

    Attributes:
        notebook_text: the notebook file the runner executes (outputs cleared, hidden tests
            removed), exactly as written into the sandbox.
        expected: ``(cell type, cell id, sha256 of the source)`` of each cell, in order: what an
            executed cell must match for its outputs to be copied back.
        support: the submission's support files, relative POSIX path -> bytes.
        job: the runner's job (``job.json``: kernel, timeouts).
        settings: the launch settings besides the wall limit (backend, CPU and memory limits),
            as JSON-able data.
        key: sha256 (hex) of all of the above.
    """

    notebook_text: str
    expected: tuple[tuple[str, str | None, str], ...]
    support: Mapping[str, bytes]
    job: Mapping[str, Any]
    settings: Mapping[str, Any]
    key: str = field(init=False)

    def __post_init__(self) -> None:
        digest = hashlib.sha256()
        digest.update(json.dumps([self.notebook_text, list(self.expected), dict(self.job), dict(self.settings)],
                                 sort_keys=True).encode("utf-8"))
        for name in sorted(self.support):
            digest.update(b"\0" + name.encode("utf-8") + b"\0" + hashlib.sha256(self.support[name]).digest())
        object.__setattr__(self, "key", digest.hexdigest())


@dataclass(frozen=True)
class ExecutionRun:
    """What one sandboxed execution produced.

    Attributes:
        result: the limited run's result (untrusted bytes, the launcher's verdict on limits).
        executed: the executed notebook as read back and parsed (untrusted data), or ``None``.
        unreadable: why the executed notebook could not be read back, or ``""``.
    """

    result: RunResult
    executed: Any | None
    unreadable: str = ""
