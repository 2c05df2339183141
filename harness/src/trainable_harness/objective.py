"""The chapter's opening objective, evaluated in a declared floating-point format.

Equation 11.1: ``a = x*y``, ``b = a + x``, ``c = a*y``, ``L = b*c``. The
operation order is fixed so that everybody who evaluates it in binary32 gets
the same bits, which is what Exercise 2's finite-difference sweep depends on.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from .tape import TapeNode

__all__ = ["OBJECTIVE_DTYPES", "opening_objective", "opening_objective_exact", "opening_tape"]

#: The formats the objective may be evaluated in.
OBJECTIVE_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def opening_objective(x: float, y: float, dtype: type | np.dtype = np.float32) -> np.floating:
    """``L(x, y)`` with every input and every intermediate rounded to ``dtype``.

    ``x`` and ``y`` are first converted to ``dtype`` (so ``2.1`` in binary32
    is the float32 nearest 2.1), then ``a, b, c, L`` are each computed by one
    rounded operation in that format, in the order of Equation 11.1.

    Returns:
        a numpy scalar of exactly ``dtype`` (``np.float32`` by default).

    Raises:
        ValueError: ``dtype`` is not float32 or float64.
    """
    dt = np.dtype(dtype)
    if dt not in OBJECTIVE_DTYPES:
        raise ValueError(f"dtype must be float32 or float64, got {dt}")
    xs = dt.type(x)
    ys = dt.type(y)
    a = xs * ys
    b = a + xs
    c = a * ys
    out = b * c
    assert out.dtype == dt, "numpy promotion changed the evaluation format"
    return out


def opening_objective_exact(x: float, y: float) -> Fraction:
    """``L(x, y)`` in exact rational arithmetic on the binary values of ``x, y``.

    Every finite float is a dyadic rational, so ``Fraction(float(x))`` is the
    exact value the float stores; no rounding happens anywhere after that.
    """
    fx = Fraction(float(x))
    fy = Fraction(float(y))
    a = fx * fy
    return (a + fx) * (a * fy)


def opening_tape(x: float, y: float) -> list[TapeNode]:
    """The tape of Equation 11.1 at ``(x, y)`` in float64, as listed in section 11.1.

    Node order: ``x, y, a, b, c, L``; ``reverse_accumulate`` of it returns
    ``(dL/dx, dL/dy, dL/da, dL/db, dL/dc, 1)``.
    """
    x = float(x)
    y = float(y)
    a = x * y
    b = a + x
    c = a * y
    return [
        TapeNode(x),
        TapeNode(y),
        TapeNode(a, ((0, y), (1, x))),
        TapeNode(b, ((2, 1.0), (0, 1.0))),
        TapeNode(c, ((2, y), (1, a))),
        TapeNode(b * c, ((3, c), (4, b))),
    ]
