"""Text a student named (folder names, notebook names, metadata), made safe to print or log.

Student-chosen strings can hold newlines, carriage returns and ANSI escape sequences that
forge log lines or drive a terminal. :func:`shown` renders every control and non-printable
character as a Python-style escape, so one name is always one visible line.
"""

from __future__ import annotations

__all__ = ["shown"]

#: Longest rendering of one name in a log line.
MAX_SHOWN = 200


def shown(text: str, limit: int = MAX_SHOWN) -> str:
    """``text`` with control and non-printable characters escaped (``\\n``, ``\\x1b``), cut to ``limit``."""
    out = []
    for char in text[:limit]:
        out.append(char if char.isprintable() and char != "\\" else char.encode("unicode_escape").decode("ascii"))
    return "".join(out) + ("..." if len(text) > limit else "")
