"""Exercise 1: a third child at the shared node.

Equation 11.1 gets one more use of ``a``::

    a = x*y,   b = a + x,   c = a*y,   d = a**2,   L = b*c + d

so ``a`` now feeds three children (``b``, ``c``, ``d``) and its cotangent is
the sum of three contributions. At ``(x, y) = (2, 3)`` they are 18 (via
``b``), 24 (via ``c``) and 12 (via ``d``), so ``dL/da = 54`` and the input
gradient is ``(180, 156)``.

The gradient is computed the way the chapter computes it: record the tape,
then run the harness's additive reverse sweep over it.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from trainable_harness import TapeNode, reverse_accumulate

__all__ = ["EXTENDED_NODE_NAMES", "contributions_into_a", "extended_tape", "input_gradient"]

#: Name of each node of :func:`extended_tape`, by tape index.
EXTENDED_NODE_NAMES: tuple[str, ...] = ("x", "y", "a", "b", "c", "d", "L")

# Tape positions, spelled once so that the sweep bookkeeping below reads by name.
_X, _Y, _A, _B, _C, _D, _L = range(len(EXTENDED_NODE_NAMES))
_CHILDREN_OF_A = (_B, _C, _D)


def _finite_float(name: str, value: object) -> float:
    # bool is a numbers.Real too, but True is never a meaningful coordinate.
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    as_float = float(value)
    if not math.isfinite(as_float):
        raise ValueError(f"{name} must be finite, got {name}={as_float!r}")
    return as_float


def extended_tape(x: float, y: float) -> list[TapeNode]:
    """Record the tape of ``L = b*c + d`` at ``(x, y)``.

    The computation is ``a = x*y``, ``b = a + x``, ``c = a*y``, ``d = a*a``,
    ``L = b*c + d``, each value a Python ``float`` (float64, whatever the types
    of ``x`` and ``y``; a ``np.float64`` is a float too). Values and local
    derivatives are checked to float64 rounding: a relative error of at most
    ``64 * 2**-53`` of the same quantity evaluated at ``(|x|, |y|)``, so another
    evaluation order (``x*(y*y)`` for ``c``) is accepted.

    Args:
        x, y: real numbers: ``int``, ``float`` or a numpy integer or floating
            scalar (``np.float32`` included). Each is used as its float64
            value ``float(x)``, whatever its type.

    Returns:
        a list of exactly 7 ``TapeNode`` in this order (indices 0..6)::

            0  x  TapeNode(x)
            1  y  TapeNode(y)
            2  a  TapeNode(a, ((0, y), (1, x)))
            3  b  TapeNode(b, ((2, 1.0), (0, 1.0)))
            4  c  TapeNode(c, ((2, y), (1, a)))
            5  d  TapeNode(d, ((2, 2*a),))
            6  L  TapeNode(b*c + d, ((3, c), (4, b), (5, 1.0)))

        Each parent pair is ``(parent_index, local_derivative)``, the local
        derivative being ``d node / d parent`` evaluated at the recorded
        values. ``parent_index`` is an ``int``; a numpy integer is one too
        (``np.int64(2)`` is the index 2, and earns the same points). Listing
        each parent once is the preferred form (``d`` has the single pair
        ``(2, 2*a)``); two pairs ``(2, a), (2, a)`` whose local derivatives
        add up are also accepted, since reverse accumulation adds them.
        ``L`` is ONE node with three parents, not two nodes.

        The order of the nodes matters (``L`` must be last and a parent must
        come before its child). The order of the pairs inside one node's
        ``parents`` does not matter: ``((4, b), (3, c), (5, 1.0))`` is the
        same node.

    Raises:
        TypeError: ``x`` or ``y`` is not a real number (``bool`` and numpy's
            ``bool_`` included).
        ValueError: ``x`` or ``y`` is nan or infinite; the message names the
            argument.
    """
    x = _finite_float("x", x)
    y = _finite_float("y", y)
    a = x * y
    b = a + x
    c = a * y
    d = a * a
    return [
        TapeNode(x),
        TapeNode(y),
        TapeNode(a, ((_X, y), (_Y, x))),
        TapeNode(b, ((_A, 1.0), (_X, 1.0))),
        TapeNode(c, ((_A, y), (_Y, a))),
        TapeNode(d, ((_A, 2.0 * a),)),
        TapeNode(b * c + d, ((_B, c), (_C, b), (_D, 1.0))),
    ]


def contributions_into_a(x: float, y: float) -> np.ndarray:
    """The three contributions that the reverse sweep adds into ``a``'s cotangent.

    Args:
        x, y: real numbers: ``int``, ``float`` or a numpy integer or floating
            scalar (``np.float32`` included). Each is used as its float64
            value ``float(x)``, whatever its type.

    Returns:
        float64 array of shape ``(3,)``, in the order (via ``b``, via ``c``,
        via ``d``)::

            [b_bar * db/da,  c_bar * dc/da,  d_bar * dd/da]

        where ``b_bar = dL/db`` etc. are the cotangents of ``L = b*c + d``.
        At ``(2, 3)`` this is ``[18.0, 24.0, 12.0]``. Their sum is ``dL/da``
        (up to float64 rounding, since the sweep may add them in another
        order). Each is checked to float64 rounding: a relative error of at
        most ``64 * 2**-53`` of the same term evaluated at ``(|x|, |y|)``.

    Raises:
        TypeError: ``x`` or ``y`` is not a real number (``bool`` and numpy's
            ``bool_`` included).
        ValueError: ``x`` or ``y`` is nan or infinite; the message names the
            argument.
    """
    tape = extended_tape(x, y)
    cotangents = reverse_accumulate(tape)
    # Read each contribution off the edges into ``a``, exactly as the sweep adds it.
    contributions = np.zeros(len(_CHILDREN_OF_A), dtype=np.float64)
    for slot, child in enumerate(_CHILDREN_OF_A):
        for parent, local in tape[child].parents:
            if parent == _A:
                contributions[slot] += cotangents[child] * np.float64(local)
    return contributions


def input_gradient(x: float, y: float) -> np.ndarray:
    """The gradient of ``L = b*c + d`` with respect to the inputs.

    Args:
        x, y: real numbers: ``int``, ``float`` or a numpy integer or floating
            scalar (``np.float32`` included). Each is used as its float64
            value ``float(x)``, whatever its type.

    Returns:
        float64 array of shape ``(2,)``: ``[dL/dx, dL/dy]``. At ``(2, 3)``
        this is ``[180.0, 156.0]``. Each component is checked to float64
        rounding: a relative error of at most ``64 * 2**-53`` of the same
        component evaluated at ``(|x|, |y|)``.

    Raises:
        TypeError: ``x`` or ``y`` is not a real number (``bool`` and numpy's
            ``bool_`` included).
        ValueError: ``x`` or ``y`` is nan or infinite; the message names the
            argument.
    """
    cotangents = reverse_accumulate(extended_tape(x, y))
    return np.array(cotangents[[_X, _Y]], dtype=np.float64)
