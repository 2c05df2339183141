"""Course ids, assignment ids and student names the hub exchange accepts: each becomes one folder name.

A name is refused (:class:`BadName`) when it is empty, longer than :data:`MAX_CHARS` characters or
:data:`MAX_BYTES` bytes of UTF-8, starts with a dot, contains ``..``, a ``/`` or ``\\``, a NUL or any
other control or format character (Unicode category C*), leading or trailing whitespace, or one of
``+ * ? [ ]``. The last two rules are nbgrader 0.9.6's own: it strips whitespace from course,
assignment and student ids (``coursedir.py``), refuses ``+`` in an assignment id, joins
``student+assignment+timestamp`` with ``+`` and parses it back with ``[^+]*``
(``exchange/default/list.py``, ``utils.make_unique_key``), and matches ids as file globs. So no
name accepted here is one nbgrader would read differently, and each is one path component.
"""

from __future__ import annotations

import unicodedata
from typing import Literal

__all__ = ["MAX_BYTES", "MAX_CHARS", "BadName", "checked"]

#: The longest name in characters; hub user names (often e-mail addresses) fit.
MAX_CHARS = 100
#: The longest name in UTF-8 bytes, well under a file name's 255 bytes.
MAX_BYTES = 200

Field = Literal["course id", "assignment id", "student name"]

_FORBIDDEN = frozenset("/\\+*?[]")


class BadName(ValueError):
    """A name refused, with the field, the value (escaped) and the rule it broke."""

    def __init__(self, field: Field, value: str, why: str) -> None:
        self.field = field
        self.value = value
        self.why = why
        super().__init__(f"the {field} {value!r} is refused: {why}")


def _problem(value: str) -> str | None:
    if not value:
        return "it is empty"
    if len(value) > MAX_CHARS:
        return f"it is longer than {MAX_CHARS} characters"
    if len(value.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        return f"it is longer than {MAX_BYTES} bytes of UTF-8"
    if value.startswith("."):
        return "it starts with a dot"
    if ".." in value:
        return "it contains '..'"
    if value.strip() != value:
        return "it starts or ends with whitespace"
    for char in value:
        if char in _FORBIDDEN:
            return f"it contains {char!r} (one of {''.join(sorted(_FORBIDDEN))!r})"
        if unicodedata.category(char).startswith("C"):
            return f"it contains the control character {char!r}"
    return None


def checked(field: Field, value: str) -> str:
    """``value`` unchanged when it is an acceptable ``field``.

    Raises:
        BadName: it breaks a rule of the module's; the message names the field, the value and the rule.
    """
    why = _problem(value)
    if why is not None:
        raise BadName(field, value, why)
    return value
