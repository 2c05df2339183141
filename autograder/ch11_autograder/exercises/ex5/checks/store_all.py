"""The checks of the ``store_all_cotangents`` cell."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from ch11_solutions import ex5_replay as ref

from ....api.suite import Call, CellSuite, Mismatch, RngSeed, Student
from ..contract import POINTS, STORE_ALL_TESTS
from ..strategies import call_sequences, make_case, used_chain_sequences
from .calls import (
    _judge_call_sequence,
    _judge_left_arguments,
    _judge_refusal,
    _judge_used_chain,
    _refusal_calls,
    _refusals,
    left_arguments_call,
)
from .shared import (
    _CASES,
    _CHECKPOINTED_CALL,
    _EXAMPLES,
    _HOW_TO_REBUILD,
    _REFUSAL_EXAMPLES,
    _SEQUENCE_EXAMPLES,
    _STORE_ALL_CALL,
    _VISIBLE_BLOCKS,
    _agrees,
    _chain,
    _checked_run,
    _counts,
    _property,
    _reference_saved,
    _run,
    _sent_z0,
    _shown,
    _Spec,
    _unpack_pair,
    _used_chain_example,
    _value,
)

# --------------------------------------------------------------------------- cases


#: The chains of the notebook's visible checks (make_chain's default seed is 11).
_VISIBLE_STORE_ALL = make_case(12, 5, 3, 11, [0.3, -0.2, 0.5], 1, 1)
#: The shortest chain the contract admits: one layer (random), one block of one.
_ONE_LAYER = make_case(1, 0, 2, 5, [0.4, -0.1], 1, 3)


# --------------------------------------------------------------------------- the judgements


def judge_store_all_values(student: Student, case: Mapping[str, Any]) -> None:
    shown = _shown(case, block_size=False)
    run = _run(student, shown, "store_all_cotangents", _chain(case), _sent_z0(case), RngSeed(case["seed"]))
    want = _reference_saved(case)
    if not _agrees(run["cotangents"], want):
        raise Mismatch(
            shown, want, run["cotangents"], f"Row i is dL/dz_i, from chain.backward(i, z_(i+1), ...). {_HOW_TO_REBUILD}"
        )


def judge_store_all_counts(student: Student, case: Mapping[str, Any]) -> None:
    shown = _shown(case, block_size=False)
    run = _run(student, shown, "store_all_cotangents", _chain(case), _sent_z0(case), RngSeed(case["seed"]))
    depth = case["depth"]
    want = (depth, 0, depth + 1)
    if _counts(run) != want:
        raise Mismatch(
            shown,
            want,
            _counts(run),
            "(forward_evaluations, replayed_evaluations, peak_states): one forward pass of L layers, "
            "no replay, z_0 .. z_L alive at the end.",
        )


def judge_store_all_refusals(student: Student, case: Mapping[str, Any]) -> None:
    """Raises: TypeError for a chain or rng of another type, ValueError for any z0 but a float64 (width,) array."""
    good = {"chain": _chain(case), "z0": _sent_z0(case), "rng": RngSeed(case["seed"])}
    bad = _refusals(case, block_size=False)
    outcomes = student.batch(_refusal_calls("store_all_cotangents", good, bad), stop_on_error=False, return_errors=True)
    for (argument, value, kind), outcome in zip(bad, outcomes, strict=True):
        shown = _shown(case, block_size=False, refused_argument=argument, refused_value=value)
        _judge_refusal(shown, kind, outcome)


def judge_store_all_sequence(student: Student, sequence: Mapping[str, Any]) -> None:
    _judge_call_sequence(student, sequence, "store_all_cotangents")


def judge_store_all_left_arguments(student: Student, case: Mapping[str, Any]) -> None:
    shown = _shown(case, block_size=False)
    watched = student.call_watch("store_all_cotangents", _chain(case), _sent_z0(case), RngSeed(case["seed"]))
    reference_rng = np.random.default_rng(case["seed"])
    reference = ref.store_all_cotangents(_chain(case), case["z0"], reference_rng)
    _judge_left_arguments(shown, case, watched, reference, reference_rng, left_arguments_call("store_all_cotangents"))


def judge_store_all_used_chain(student: Student, sequence: Mapping[str, Any]) -> None:
    _judge_used_chain(student, sequence, "store_all_cotangents")


# --------------------------------------------------------------------------- form and error properties


def _store_all_form(student: Any, case: Mapping[str, Any]) -> None:
    shown = _shown(case, block_size=False)
    bad = case["z0"].astype(np.float32)
    short = np.zeros(case["width"] + 1)
    z0s = (_sent_z0(case), bad, short)
    calls = [Call("store_all_cotangents", (_chain(case), z0, RngSeed(case["seed"]))) for z0 in z0s]
    outcomes = student.batch(calls, stop_on_error=False, return_errors=True)
    _checked_run(shown, _value(next(outcomes)))
    for z0, outcome in zip(z0s[1:], outcomes, strict=True):
        _judge_refusal({**shown, "z0": z0}, "ValueError", outcome)


STORE_ALL_SUITE = CellSuite(
    STORE_ALL_TESTS,
    points=POINTS[STORE_ALL_TESTS],
    properties=[
        # With the catalogue's misconceptions like the others: a z0 drawn read-only meets the form check
        # too, and a write into it is named as the entry that writes into z0 (shared._judge_case).
        _property(
            STORE_ALL_TESTS,
            _Spec(
                "store_all_form",
                "store_all_cotangents returns a ReplayRun (float64 cotangents of shape (depth+1, width), integer "
                "counts) and raises ValueError for a z0 that is not float64 of shape (width,).",
                _store_all_form,
                _CASES,
                (_VISIBLE_STORE_ALL, _ONE_LAYER),
                max_examples=_EXAMPLES // 3,
            ),
        ),
        _property(
            STORE_ALL_TESTS,
            _Spec(
                "store_all_derivatives",
                "Every cotangent row dL/dz_i of store-all equals the reference derivative "
                "(bit for bit, or to a relative 1e-10).",
                judge_store_all_values,
                _CASES,
                (_VISIBLE_STORE_ALL, _VISIBLE_BLOCKS, _ONE_LAYER),
            ),
        ),
        _property(
            STORE_ALL_TESTS,
            _Spec(
                "store_all_counts",
                "Store-all reports L forward evaluations, 0 replayed, and a peak of L + 1 states.",
                judge_store_all_counts,
                _CASES,
                (_VISIBLE_STORE_ALL, _ONE_LAYER),
            ),
        ),
        _property(
            STORE_ALL_TESTS,
            _Spec(
                "store_all_refuses_bad_arguments",
                "store_all_cotangents raises TypeError for a chain that is not a StochasticChain or an rng that "
                "is not a numpy Generator (a seed included), and ValueError for a z0 that is not a float64 "
                "array of shape (width,) (a list included).",
                judge_store_all_refusals,
                _CASES,
                (_VISIBLE_STORE_ALL,),
                max_examples=_REFUSAL_EXAMPLES,
            ),
        ),
        _property(
            STORE_ALL_TESTS,
            _Spec(
                "store_all_repeated_calls",
                "Called several times in a row on repeated and varied chains, each call returns what it "
                "returns alone: nothing is kept from earlier calls.",
                judge_store_all_sequence,
                call_sequences(with_matched=False),
                ({"calls": [_VISIBLE_STORE_ALL, _VISIBLE_BLOCKS, _VISIBLE_STORE_ALL]},),
                _unpack_pair,
                max_examples=_SEQUENCE_EXAMPLES,
            ),
        ),
        _property(
            STORE_ALL_TESTS,
            _Spec(
                "store_all_leaves_arguments",
                "store_all_cotangents leaves z0 unchanged, advances the caller's rng by the random layer's one "
                "draw and grows the chain's counter by L.",
                judge_store_all_left_arguments,
                _CASES,
                (_VISIBLE_STORE_ALL, _VISIBLE_BLOCKS),
                max_examples=_EXAMPLES // 2,
            ),
        ),
        _property(
            STORE_ALL_TESTS,
            _Spec(
                "store_all_used_chain",
                "On a chain that earlier calls of the notebook's functions used, store_all_cotangents returns "
                "what it returns on a fresh chain and grows the counter by as much: counts are its own.",
                judge_store_all_used_chain,
                used_chain_sequences("store_all_cotangents"),
                (_used_chain_example(_CHECKPOINTED_CALL, _STORE_ALL_CALL),),
                _unpack_pair,
                max_examples=_SEQUENCE_EXAMPLES,
            ),
        ),
    ],
)
