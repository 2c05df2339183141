"""The reference solution of the other course's exercise (never shipped to students).

The notebook's answer cell is cut from :func:`logsumexp` (``exercises.cells.solution_from``):
its docstring is the student's contract, its body the solution.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["logsumexp"]


def logsumexp(x):
    """The logarithm of the sum of the exponentials of x, computed without overflow or underflow.

    Args:
        x: a non-empty list or tuple of floats, or a one-dimensional float64 numpy array, every
            value finite. It is left unchanged.

    Returns:
        float: log(exp(x[0]) + ... + exp(x[-1])), a float (a np.float64 is fine),
        within 1e-12 * (1 + |exact value|) of the exact value. It is finite for every such x, also
        where exp(x[i]) overflows (x[i] above 709) or where every exp(x[i]) underflows to 0
        (every x[i] below -745). It depends on x alone, not on earlier calls.

    Raises:
        ValueError: x is empty, or holds a nan or an infinity.
    """
    values = np.asarray(x, dtype=np.float64)
    if values.size == 0 or not np.all(np.isfinite(values)):
        raise ValueError("x must be non-empty, with every value finite")
    shift = float(np.max(values))
    return shift + math.log(float(np.sum(np.exp(values - shift))))
