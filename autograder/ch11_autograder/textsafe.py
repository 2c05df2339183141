"""Text a student named, made safe for a terminal or a log line: one escaping helper for the package.

Names reach the grader's output from places a student controls: Canvas member names in an LMS
download, folder and file names, roster entries. Printed raw, a newline forges a line of the
grader's own output ("alice graded 40/40"), ESC starts a terminal escape sequence (colours, cursor
moves, a window title, on some terminals far worse), a carriage return overwrites what the line
said, and bidirectional controls (U+202E ...) make a name read differently from its bytes.

:func:`escape` keeps printable text as it is and replaces every character that is not, namely
Unicode categories Cc (C0 and C1 controls, DEL), Cf (format characters: bidi controls,
zero-width characters, the BOM), Cs (lone surrogates), Co (private use) and Cn (unassigned), and
the line and paragraph separators (Zl, Zp), by a visible Python-style escape: ``\\n``, ``\\r``,
``\\t``, ``\\x1b``, ``\\u202e``. The result is one line of text whose every character draws
itself. Backslashes are kept as written (an instructor reads the output; it is not parsed back).

Use it where the text is written (print, log, summary files), on the student-named value or on
a one-line message that holds one. It imports nothing of the package, so every layer may use it.
"""

from __future__ import annotations

import html
import unicodedata

__all__ = ["escape", "escape_html", "exception_text", "one_line", "quoted"]

_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_char(char: str) -> str:
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def escape(text: object, limit: int | None = None) -> str:
    """``str(text)`` with every character that does not draw itself escaped (see the module docstring).

    ``limit``: keep at most that many characters of the text (before escaping) and mark the cut
    with ``...``, for log lines that show a name a student could make arbitrarily long.
    """
    value = str(text)
    cut = limit is not None and len(value) > limit
    if cut:
        value = value[:limit]
    if not value.isprintable():  # isprintable is False for every unsafe category
        value = "".join(
            _escape_char(char) if unicodedata.category(char) in _UNSAFE_CATEGORIES else char for char in value
        )
    return value + "..." if cut else value


def quoted(text: object) -> str:
    """A student's text that names something, such as an exception's type name or its message, as one
    quoted line for the instructor's or the student's eyes: ``'...'`` around :func:`escape` of it, with
    backslashes and single quotes escaped first, so where the student's text ends is never in doubt
    (``'\\u202eEvil\\x1b[31m'`` for a type named with a bidi override and an ESC).

    Format escaping (HTML, Markdown) comes after, as for :func:`escape`.
    """
    return "'" + escape(str(text).replace("\\", "\\\\").replace("'", "\\'")) + "'"


def escape_html(text: object, *, quote: bool = True) -> str:
    """``text`` as HTML text for a page a person reads (the class report, ``ch11-grade serve``'s status pages):
    :func:`escape` first, so the page shows what a terminal or the Markdown report shows, then ``html.escape``
    (``quote=False`` for element text, where quotes need no escaping)."""
    return html.escape(escape(text), quote=quote)


def one_line(text: object, limit: int | None = None) -> str:
    """Student text (an exception's message, a value's rendering) shown inside a line of a page or a
    verdict: :func:`escape`, so it is one line and cannot print a line that looks like the grader's own
    (a newline followed by ``[pass] ...``). The name says where it is used; the rule is :func:`escape`'s."""
    return escape(text, limit)


def exception_text(type_name: object, message: object, limit: int | None = 300) -> str:
    """An exception a student's code raised, as a page shows it: ``TypeError: "the message"``, the type and
    the message each escaped (:func:`escape`) and the message quoted, so neither can end the line or pass
    for the grader's words; ``TypeError`` alone when the message is empty."""
    name = escape(type_name, 100)
    text = str(message)
    return f'{name}: "{escape(text, limit)}"' if text else name
