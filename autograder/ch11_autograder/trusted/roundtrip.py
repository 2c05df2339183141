"""A reference value as the grader reads a student's: what the grader compares, not what travels.

The wire format (``ch11_autograder.protocol``) is shared with the worker in the sandbox;
comparing a reference result with a student's is the grader's alone, so it lives here.
"""

from __future__ import annotations

from typing import Any

from ..protocol import decode_value, encode_value

__all__ = ["roundtrip"]


def roundtrip(value: Any) -> Any:
    """``value`` as the trusted side would receive it from the worker.

    Suites pass reference results through this so that they compare like with
    like (a reference dataclass becomes a :class:`~ch11_autograder.protocol.Record`,
    a tuple stays a tuple, numpy scalars keep their dtype).
    """
    return decode_value(encode_value(value, request=False), request=False)
