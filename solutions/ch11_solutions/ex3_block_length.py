"""Exercise 3: the best integer uniform block length.

Under the count model of Theorem 11.3, generalised to block lengths that do
not divide the depth (as :func:`trainable_harness.uniform_checkpoint_cost`
does), a depth-``L`` chain split into blocks of length ``k`` has

    peak states   M(k) = ceil(L/k) + k
    replays       R(k) = L - ceil(L/k)          for 1 <= k <= L.

The minimum of ``M`` over integers is ``ceil(2*sqrt(L))``, but it is often
reached by several ``k`` (``L = 1000``: every ``k`` in 28..36 gives 64), so a
"best" block length needs a tie-break. The contract here is the smallest
minimizer: ``R(k)`` never decreases as ``k`` grows, so the smallest ``k``
among the tied ones also has the fewest replays.

Why no full scan is needed: for an integer ``m``, ``ceil(L/k) + k <= m``
holds exactly when ``L/k <= m - k``, i.e. when ``k*k - m*k + L <= 0``. With
``m`` the minimum peak, the minimizers are therefore exactly the integers
between the two roots of that quadratic, which integer square roots locate
in O(1) arithmetic.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable
from dataclasses import dataclass

from trainable_harness import uniform_checkpoint_cost

__all__ = ["BlockChoice", "best_block_length", "block_table", "minimizing_block_lengths"]


@dataclass(frozen=True)
class BlockChoice:
    """The best uniform block length for one depth, with its costs.

    Attributes:
        depth: chain depth ``L`` (number of primitives), an ``int >= 1``.
        block_size: the chosen block length ``k``: the smallest integer
            ``1 <= k <= L`` that minimizes ``ceil(L/k) + k``.
        peak_states: peak primal states alive, ``ceil(L/k) + k``; this
            equals ``ceil(2*sqrt(L))``.
        replay_evaluations: extra forward primitive evaluations of the
            replay, ``L - ceil(L/k)``.
        sqrt_depth: ``math.sqrt(L)`` as a float, the continuous minimizer of
            Equation 11.4, for comparison with ``block_size``. A ``np.float64``
            is a float too (a ``np.float32`` is not and loses points); graders
            accept two units in the last place of ``math.sqrt(L)``, so
            ``L ** 0.5`` and ``np.sqrt(L)`` earn the same points.
    """

    depth: int
    block_size: int
    peak_states: int
    replay_evaluations: int
    sqrt_depth: float


def _depth(value: object) -> int:
    # Same acceptance rule as the harness: integers (numpy ones included), never bool or float.
    if isinstance(value, bool):
        raise TypeError(f"depth must be an integer, got bool {value!r}")
    try:
        depth = operator.index(value)
    except TypeError:
        raise TypeError(f"depth must be an integer, got {type(value).__name__} {value!r}") from None
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    return depth


def _min_peak(depth: int) -> int:
    # ceil(2*sqrt(L)) is the least m with m*m >= 4L; isqrt keeps it exact for any size of L.
    return math.isqrt(4 * depth - 1) + 1


def _tie_interval(depth: int) -> tuple[int, int]:
    """``(k_lo, k_hi)``: every ``k`` in that closed range, and no other, minimizes the peak."""
    peak = _min_peak(depth)

    def fits(k: int) -> bool:
        return k * k - peak * k + depth <= 0

    # The roots are (peak -+ sqrt(disc)) / 2; isqrt lands within one step of each.
    root = math.isqrt(peak * peak - 4 * depth)
    k_lo = max(1, (peak - root) // 2)
    while not fits(k_lo):
        k_lo += 1
    while k_lo > 1 and fits(k_lo - 1):
        k_lo -= 1
    k_hi = min(depth, (peak + root + 1) // 2)
    while not fits(k_hi):
        k_hi -= 1
    while k_hi < depth and fits(k_hi + 1):
        k_hi += 1
    return k_lo, k_hi


def _choice(depth: int, block_size: int) -> BlockChoice:
    cost = uniform_checkpoint_cost(depth, block_size)
    return BlockChoice(
        depth=cost.depth,
        block_size=cost.block_size,
        peak_states=cost.peak_state_units,
        replay_evaluations=cost.recomputed_forward_evaluations,
        sqrt_depth=math.sqrt(depth),
    )


def best_block_length(depth: int) -> BlockChoice:
    """The uniform block length with the fewest peak states, for a depth-``depth`` chain.

    Costs follow the harness's ``uniform_checkpoint_cost``: peak
    ``ceil(L/k) + k`` and replay ``L - ceil(L/k)``, for ``1 <= k <= L``.

    Tie-break: several ``k`` often share the minimum peak (``L = 1000``:
    ``k = 28, ..., 36`` all give 64). The smallest such ``k`` is returned; it
    has the fewest replays of them. Example: ``best_block_length(1000)`` is
    ``BlockChoice(depth=1000, block_size=28, peak_states=64,
    replay_evaluations=964, sqrt_depth=31.62...)``.

    The result depends on ``depth`` alone: the same depth gives the same
    record whatever was computed before. A cache is fine; results that
    depend on earlier calls are not: ``best_block_length(16.0)`` raises
    ``TypeError`` even after ``best_block_length(16)`` or
    ``best_block_length(np.int64(16))``, though ``16.0 == 16``. (A dict of
    answers keyed on the argument belongs after the input checks;
    ``functools.lru_cache`` needs ``typed=True``, or it answers ``16.0``
    from an earlier ``np.int64(16)``.)

    Args:
        depth: chain depth ``L``, an integer ``>= 1``. numpy integers are
            accepted and give the same record as the Python ``int``, with
            Python ``int`` counts. This reference runs in constant time; a
            plain scan over ``k`` is fine for the graded depths (up to
            20 000). Larger depths are not graded (this reference raises
            ``OverflowError`` only once ``sqrt_depth`` cannot be a float,
            beyond about ``1.8e308``).

    Raises:
        TypeError: ``depth`` is not an integer: ``bool`` and ``float``
            included, even ``16.0``, and numpy bools and floats too.
        ValueError: ``depth < 1`` (numpy integers included).
    """
    depth = _depth(depth)
    k_lo, _ = _tie_interval(depth)
    choice = _choice(depth, k_lo)
    assert choice.peak_states == _min_peak(depth), "tie interval missed the minimum"
    return choice


def minimizing_block_lengths(depth: int) -> tuple[int, ...]:
    """Every block length ``k`` that attains the minimum peak, in ascending order.

    The first entry is ``best_block_length(depth).block_size``. The tuple is
    short for exercise-sized depths: fewer than ``sqrt(4*sqrt(depth) + 1) + 1``
    entries (9 for ``depth = 1000``, 1 for ``depth = 4096``), so its length
    grows like ``depth**0.25``.

    Raises:
        TypeError: ``depth`` is not an integer (``bool`` and ``float`` included).
        ValueError: ``depth < 1``.
    """
    depth = _depth(depth)
    k_lo, k_hi = _tie_interval(depth)
    return tuple(range(k_lo, k_hi + 1))


def block_table(depths: Iterable[int] = range(16, 4097)) -> list[BlockChoice]:
    """``best_block_length`` for each depth, in the order given.

    Returns a ``list`` (whatever iterable ``depths`` is), one record per
    depth, repeats kept. ``depths`` is read once, in order, and left
    unchanged; the result depends on ``depths`` alone, not on earlier calls.

    The default, ``range(16, 4097)``, covers the exercise's range, depths 16
    through 4096 inclusive; the figure uses it. Keep it declared in the
    signature as given: the grader reads it there and does not call
    ``block_table()`` without an argument (with a plain scan in
    ``best_block_length`` that one call takes longer than the grader allows
    a call). A default of ``None`` replaced inside the function is not this
    contract: ``None`` is not an iterable of depths.

    Args:
        depths: any iterable of depths as :func:`best_block_length` accepts
            them: a list, tuple, range, generator or one-dimensional numpy
            integer array, in any memory layout (a strided view, read-only).

    Raises:
        TypeError: ``depths`` is not iterable.
        TypeError, ValueError: as :func:`best_block_length`, for the first bad
            depth in the order given (a later bad depth of another kind does
            not change which is raised). The rows of a two-dimensional array,
            ``(1, n)`` or ``(n, 1)``, are not depths: ``TypeError``, not
            flattened.
    """
    return [best_block_length(depth) for depth in depths]
