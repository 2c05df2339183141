"""The checks of the ``first_mismatch`` cell: the largest differing row, bits and special values."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from ch11_solutions import ex5_replay as ref

from ....api.suite import Call, CellSuite, Mismatch, Student, laid
from ..contract import MISMATCH_TESTS, POINTS
from ..strategies import array_pairs, special_pairs
from .calls import _judge_refusal
from .shared import _bits_equal, _count, _is_count, _plain_property, _property, _Spec, _unpack_pair

# --------------------------------------------------------------------------- first_mismatch


def _first_mismatch_judge(student: Student, pair: Mapping[str, Any], note: str, *, watch: bool = False) -> Any:
    """The pair, then the pair swapped, then the pair again: the index is symmetric and kept from no earlier call.

    With ``watch``, one more call of the pair, watched, goes in the same exchange; its :class:`Watched`
    is returned once the three indices are judged (``None`` without ``watch``).
    """
    saved, replayed = pair["saved"], pair["replayed"]
    want = ref.first_mismatch(saved, replayed)
    # Each array in its drawn memory layout (read-only, strided, ...): the index is the same.
    saved, replayed = laid(saved, pair.get("saved_layout")), laid(replayed, pair.get("replayed_layout"))
    orders = ((saved, replayed), (replayed, saved), (saved, replayed))
    calls = [Call("first_mismatch", order) for order in orders]
    if watch:
        calls.append(Call("first_mismatch", (saved, replayed), watch=True))
    outcomes = student.batch(calls)
    for call, (a, b) in enumerate(orders):
        got = _count(next(outcomes))
        if got is None and want is None:
            continue
        if not (_is_count(got) and got == want):
            shown = {"saved": a, "replayed": b} if call == 0 else {"saved": a, "replayed": b, "call": call + 1}
            raise Mismatch(shown, want, got, note)
    return next(outcomes) if watch else None


def judge_first_mismatch(student: Student, pair: Mapping[str, Any]) -> None:
    note = "The largest row index whose bytes differ (going backward from the last row), or None."
    watched = _first_mismatch_judge(student, pair, note, watch=True)
    # The contract's "arrays unmodified": both arrays as a watched call left them, bit for bit.
    saved, replayed = pair["saved"], pair["replayed"]
    left = tuple(watched.args)
    kept = len(left) == 2 and all(
        isinstance(a, np.ndarray) and _bits_equal(a, b) for a, b in zip(left, (saved, replayed), strict=True)
    )
    if not kept:
        shown = {name: laid(pair[name], pair.get(f"{name}_layout")) for name in ("saved", "replayed")}
        raise Mismatch(shown, {"arrays after the call": (saved, replayed)}, {"arrays after the call": left},
                       "first_mismatch compares the arrays; it leaves both as they were given.")


def judge_first_mismatch_bits(student: Student, pair: Mapping[str, Any]) -> None:
    _first_mismatch_judge(
        student, pair, "Rows are compared by their bytes: 0.0 and -0.0 differ, two NaNs with the same bits agree."
    )


def _first_mismatch_errors(student: Any, pair: Mapping[str, Any]) -> None:
    saved = pair["saved"]
    shorter = saved[:-1] if saved.shape[0] > 1 else saved[:, None]
    retyped = saved.astype(np.float64 if saved.dtype == np.float32 else np.float32)
    scalar = np.float64(1.0)
    # The same dtype and size in another shape: a (rows,) array against (rows, 1), an n-d one against its ravel.
    reshaped = saved.reshape(-1, 1) if saved.ndim == 1 else saved.reshape(-1)
    pairs = ((saved, shorter), (saved, retyped), (scalar, scalar), (saved, reshaped))
    calls = [Call("first_mismatch", arrays) for arrays in pairs]
    outcomes = student.batch(calls, stop_on_error=False, return_errors=True)
    for (a, b), outcome in zip(pairs, outcomes, strict=True):
        _judge_refusal({"saved": a, "replayed": b}, "ValueError", outcome)


_VISIBLE_PAIRS = (
    {"saved": np.arange(12.0).reshape(6, 2), "replayed": np.arange(12.0).reshape(6, 2)},
    {
        "saved": np.arange(12.0).reshape(6, 2),
        "replayed": np.arange(12.0).reshape(6, 2) + np.array([[0, 0], [1, 0], [0, 0], [0, 0], [0, 1e-12], [0, 0]]),
    },
)
#: Arrays with no rows (at least one dimension, as the contract asks): identical, so None.
_NO_ROWS = (
    {"saved": np.zeros((0, 3)), "replayed": np.zeros((0, 3))},
    {"saved": np.zeros(0, dtype=np.float32), "replayed": np.zeros(0, dtype=np.float32)},
)
#: NaN with a payload other than np.nan's (bits 0x7ff8000000000001).
_PAYLOAD_NAN = np.array([0x7FF8000000000001], dtype=np.uint64).view(np.float64)[0]

_VISIBLE_SPECIAL = (
    {"saved": np.zeros((3, 2)), "replayed": np.array([[0.0, -0.0], [0.0, 0.0], [0.0, 0.0]])},
    {"saved": np.full((3, 2), np.nan), "replayed": np.full((3, 2), np.nan)},
    # Two NaNs of different bits differ: the sign bit set (row 1), another payload (row 2).
    {"saved": np.full((3, 2), np.nan), "replayed": np.array([[np.nan, np.nan], [np.nan, -np.nan], [np.nan, np.nan]])},
    {
        "saved": np.full((3, 2), np.nan),
        "replayed": np.array([[np.nan, np.nan], [np.nan, np.nan], [np.nan, _PAYLOAD_NAN]]),
    },
)

FIRST_MISMATCH_SUITE = CellSuite(
    MISMATCH_TESTS,
    points=POINTS[MISMATCH_TESTS],
    properties=[
        _property(
            MISMATCH_TESTS,
            _Spec(
                "largest_differing_row",
                "first_mismatch returns the largest row index that differs (or None), for 1-D, 2-D and 3-D "
                "arrays of float64 and float32 (with no rows too), the same with the arrays swapped or compared "
                "again.",
                judge_first_mismatch,
                array_pairs(),
                (*_VISIBLE_PAIRS, *_NO_ROWS),
                _unpack_pair,
            ),
        ),
        _property(
            MISMATCH_TESTS,
            _Spec(
                "bitwise_comparison",
                "Rows are compared bit for bit: 0.0 and -0.0 differ, identical NaNs agree.",
                judge_first_mismatch_bits,
                special_pairs(),
                _VISIBLE_SPECIAL,
                _unpack_pair,
            ),
        ),
        _plain_property(
            "refuses_incomparable_arrays",
            "first_mismatch raises ValueError for arrays of different shapes or dtypes, and for 0-d arrays.",
            _first_mismatch_errors,
            array_pairs(),
            _VISIBLE_PAIRS[:1],
        ),
    ],
)
