"""Reading nbgrader's logs: the one line that says why a run failed.

nbgrader ends a failed run with generic lines (``There was an error processing
assignment``, ``Please see the error log``); a batch record needs the cause
instead, which sits higher up: an exception line or a specific ``ERROR`` line.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["nbgrader_error_line"]

_EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?([A-Z]\w*(?:Error|Exception|Unavailable|Exit))\b:?\s*(.*)$")
_GENERIC = ("There was an error processing assignment", "Please see the error log", "Canceled", "Traceback")


def nbgrader_error_line(log_text: str, limit: int = 300) -> str:
    """The most telling line of an nbgrader log that ended in failure, trimmed to ``limit`` characters.

    Preference: the last exception line of a traceback (``SandboxUnavailable:
    ...``), then the last specific ``ERROR`` line, then the last non-empty line.
    The notebook being processed, when the log names one, is prefixed.
    """
    lines = [line.rstrip() for line in log_text.splitlines() if line.strip()]
    notebook = ""
    for line in lines:
        match = re.search(r"(?:Sanitizing|Autograding|Converting notebook) (\S+\.ipynb)", line)
        if match:
            notebook = Path(match.group(1)).name
    chosen = ""
    for line in reversed(lines):
        stripped = line.strip()
        if _EXCEPTION_LINE.match(stripped) and not stripped.startswith(_GENERIC):
            chosen = stripped
            break
    if not chosen:
        for line in reversed(lines):
            if "ERROR]" in line or "| ERROR" in line:
                text = line.split("]", 1)[-1].strip()
                if text and not text.startswith(_GENERIC):
                    chosen = text
                    break
    if not chosen:
        chosen = lines[-1].strip() if lines else "(empty log)"
    if notebook and notebook not in chosen:
        chosen = f"{notebook}: {chosen}"
    return chosen if len(chosen) <= limit else chosen[: limit - 3] + "..."
