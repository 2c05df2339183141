"""The checks of the ``checkpointed_cotangents`` cell: values, counts, matched and unmatched layouts,
refusals, arguments, sequences of calls and used chains and generators.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from ch11_solutions import ex5_replay as ref

from ....api.suite import (
    Call,
    CellSuite,
    Mismatch,
    Record,
    RngSeed,
    Source,
    Student,
    StudentError,
    Unencodable,
    call_statement,
    pasteable,
)
from ..contract import CHECKPOINTED_TESTS, POINTS
from ..strategies import call_sequences, make_case, replaying_cases, used_chain_sequences
from .calls import (
    _generator_state,
    _judge_call_sequence,
    _judge_left_arguments,
    _judge_refusal,
    _judge_used_chain,
    _refusal_calls,
    _refusals,
    _run_summary,
    _same_run,
    left_arguments_call,
)
from .shared import (
    _CASES,
    _CHECKPOINTED_CALL,
    _EXAMPLES,
    _HOW_TO_REBUILD,
    _PREDICTION_R4,
    _PREDICTION_R7,
    _REFUSAL_EXAMPLES,
    _SEQUENCE_EXAMPLES,
    _STORE_ALL_CALL,
    _VISIBLE_BLOCKS,
    _agrees,
    _bits_equal,
    _chain,
    _chain_source,
    _checked_run,
    _checkpointed_call,
    _counts,
    _form_problem,
    _property,
    _reference_replayed,
    _reference_saved,
    _run,
    _sent_z0,
    _shown,
    _Spec,
    _unpack_pair,
    _used_chain_example,
    _value,
)

_VISIBLE_ONE_BLOCK = make_case(16, 5, 3, 11, [0.3, -0.2, 0.5], 16, 2)


def _differing_rows(a: np.ndarray, b: np.ndarray) -> list[int]:
    return [i for i in range(a.shape[0]) if a[i].tobytes() != b[i].tobytes()]


def _expected_counts(case: Mapping[str, Any]) -> tuple[int, int, int]:
    depth, k = case["depth"], case["block_size"]
    blocks = -(-depth // k)
    return 2 * depth - blocks, depth - blocks, blocks + k


def _checkpointed(student: Student, case: Mapping[str, Any], matched: bool, block_size: int | None = None) -> Record:
    call = _checkpointed_call(case, matched, block_size)
    return _run(student, _shown(case, matched=matched), call.fn, *call.args, **call.kwargs)


def judge_checkpointed_counts(student: Student, case: Mapping[str, Any]) -> None:
    want = _expected_counts(case)
    runs = student.batch([_checkpointed_call(case, matched) for matched in (True, False)])
    for matched, value in zip((True, False), runs, strict=True):
        run = _checked_run(_shown(case, matched=matched), value)
        if _counts(run) != want:
            raise Mismatch(
                _shown(case, matched=matched),
                want,
                _counts(run),
                "(forward_evaluations, replayed_evaluations, peak_states) for blocks of k: "
                "(2L - ceil(L/k), L - ceil(L/k), ceil(L/k) + k), whichever the stream.",
            )


def judge_matched_bitwise(student: Student, case: Mapping[str, Any]) -> None:
    shown = _shown(case, matched=True)
    got = _checkpointed(student, case, True)["cotangents"]
    saved = _reference_saved(case)
    if _bits_equal(got, saved):
        return
    if not _agrees(got, saved):
        raise Mismatch(shown, saved, got, f"Expected: the store-all derivatives. {_HOW_TO_REBUILD}")
    # Another operation order: the claim is then checked against the student's own run
    # without replay (block_size=1 keeps every state).
    own = _checkpointed(student, case, True, block_size=1)["cotangents"]
    if not _bits_equal(got, own):
        raise Mismatch(
            shown,
            own,
            got,
            "Your matched replay is close to the store-all derivatives but not bit for bit equal to your own "
            "block_size=1 run; a matched replay must repeat the forward pass exactly.",
        )


def judge_unmatched_layout(student: Student, case: Mapping[str, Any]) -> None:
    shown = _shown(case, matched=False)
    got = _checkpointed(student, case, False)["cotangents"]
    saved = _reference_saved(case)
    want = _reference_replayed(case, False).cotangents
    if not _agrees(got, want):
        raise Mismatch(
            shown,
            want,
            got,
            f"With matched=False the replay draws from rng as the forward pass left it. {_HOW_TO_REBUILD}",
        )
    want_rows = _differing_rows(want, saved)
    got_rows = _differing_rows(got, saved)
    if got_rows == want_rows:
        return
    own = _checkpointed(student, case, False, block_size=1)["cotangents"]
    own_rows = _differing_rows(got, own)
    if own_rows != want_rows:
        raise Mismatch(
            shown,
            want_rows,
            own_rows,
            "The rows (indices) whose bits differ from a run without replay (your block_size=1 run).",
        )


def judge_checkpointed_refusals(student: Student, case: Mapping[str, Any]) -> None:
    """Raises: as store-all, and TypeError / ValueError for a block_size that is not an integer in [1, L]."""
    good = {"chain": _chain(case), "z0": _sent_z0(case), "block_size": case["block_size"], "rng": RngSeed(case["seed"])}
    bad = _refusals(case, block_size=True)
    calls = _refusal_calls("checkpointed_cotangents", good, bad, matched=True)
    outcomes = student.batch(calls, stop_on_error=False, return_errors=True)
    for (argument, value, kind), outcome in zip(bad, outcomes, strict=True):
        shown = _shown(case, matched=True, refused_argument=argument, refused_value=value)
        _judge_refusal(shown, kind, outcome)


def judge_checkpointed_arguments(student: Student, case: Mapping[str, Any]) -> None:
    """``matched`` omitted is ``matched=True``; a numpy integer block_size is the same k.

    Each call is compared with the student's own call with ``matched=True`` and
    an int ``k``, so only the default and the accepted types are judged here
    (the values are judged by the other properties). The cases replay the
    random layer (it does not end its block), so an unmatched default changes
    the derivatives.
    """
    case = {**case, "block_size": int(case["block_size"])}  # a counterexample shows the numpy k
    k = case["block_size"]
    calls: tuple[tuple[str, Any, dict[str, Any]], ...] = (
        ("matched omitted", k, {}), ("block_size as np.int64", np.int64(k), {"matched": True}),
        ("block_size as np.int32", np.int32(k), {"matched": True}),
    )  # fmt: skip
    made = [_checkpointed_call(case, True)]
    made += [Call("checkpointed_cotangents", (_chain(case), _sent_z0(case), size, RngSeed(case["seed"])), kwargs)
             for _, size, kwargs in calls]  # fmt: skip
    outcomes = student.batch(made, stop_on_error=False, return_errors=True)
    explicit = _checked_run(_shown(case, matched=True), _value(next(outcomes)))
    for (how, size, _), outcome in zip(calls, outcomes, strict=True):
        shown = {**_shown(case, block_size=False), "block_size": size, "call": how}
        if isinstance(outcome, Unencodable):
            raise outcome
        if isinstance(outcome, StudentError):
            raise Mismatch(shown, _run_summary(explicit), f"{outcome.type}: {outcome.message}", f"{how} is accepted.")
        run = _checked_run(shown, outcome)
        if not _same_run(run, explicit):
            raise Mismatch(
                shown,
                _run_summary(explicit),
                _run_summary(run),
                f"{how}: expected what your function returns for block_size={k}, matched=True.",
            )


def judge_checkpointed_sequence(student: Student, sequence: Mapping[str, Any]) -> None:
    _judge_call_sequence(student, sequence, "checkpointed_cotangents")


# --------------------------------------------------------------------------- arguments after a call, shared objects


def _plain(value: Any) -> Any:
    """A decoded generator state as the plain dicts numpy's ``bit_generator.state`` setter takes."""
    return {key: _plain(item) for key, item in value.items()} if isinstance(value, Mapping) else value


def _generator_at(watched: Any) -> np.random.Generator | None:
    """A generator in the state a watched ``Generator`` argument was left in (None if unreadable)."""
    state = _generator_state(watched)
    if not isinstance(state, Mapping):
        return None
    generator = np.random.default_rng()
    try:
        generator.bit_generator.state = _plain(state)
    except (TypeError, ValueError, KeyError):
        return None
    return generator


def judge_checkpointed_left_arguments(student: Student, case: Mapping[str, Any]) -> None:
    made = [_checkpointed_call(case, matched) for matched in (True, False)]
    outcomes = student.batch([Call(c.fn, c.args, c.kwargs, watch=True) for c in made])
    for matched, watched in zip((True, False), outcomes, strict=True):
        shown = _shown(case, matched=matched)
        reference_rng = np.random.default_rng(case["seed"])
        reference = ref.checkpointed_cotangents(
            _chain(case), case["z0"], case["block_size"], reference_rng, matched=matched
        )
        statement = left_arguments_call("checkpointed_cotangents", case["block_size"], matched=matched)
        _judge_left_arguments(shown, case, watched, reference, reference_rng, statement)


def judge_checkpointed_used_chain(student: Student, sequence: Mapping[str, Any]) -> None:
    _judge_used_chain(student, sequence, "checkpointed_cotangents")


def judge_checkpointed_used_generator(student: Student, case: Mapping[str, Any]) -> None:
    """A generator that drew before the call: replay repeats this forward pass's draws, not the seed's.

    One kept ``default_rng(seed)`` is used by two calls with the same arguments.
    The first call meets a fresh generator; where its derivatives are the
    reference's (else the properties on fresh generators judge them), the second
    call's must be the reference's from the state the first call left the
    generator in, which the watched call reports. Rebuilding the replay's
    generator from ``rng.bit_generator.seed_seq`` is right on a fresh generator
    and wrong here.
    """
    for matched in (True, False):
        shown = _shown(case, matched=matched, rng="default_rng(seed), used by one earlier call with these arguments")
        rng = student.keep(RngSeed(case["seed"]), "rng")
        args = (_chain(case), _sent_z0(case), case["block_size"], rng)
        first = student.call_watch("checkpointed_cotangents", *args, matched=matched)
        problem = _form_problem(first.value, case)
        if problem:
            raise Mismatch(shown, "a ReplayRun", first.value, problem)
        reference = _reference_replayed(case, matched)
        if not _agrees(first.value["cotangents"], reference.cotangents):
            continue
        start = _generator_at(first.args[3] if len(first.args) > 3 else None)
        if start is None:
            continue  # the caller's rng is unreadable after the call: checkpointed_leaves_arguments judges it
        want = ref.checkpointed_cotangents(_chain(case), case["z0"], case["block_size"], start, matched=matched)
        got = _run(student, shown, "checkpointed_cotangents", *args, matched=matched)["cotangents"]
        if not _agrees(got, want.cotangents):
            # Both calls on the one generator, each on a chain of its own as the check sends them.
            pasted = call_statement("checkpointed_cotangents",
                                    (_chain_source(case), case["z0"], case["block_size"], Source("rng")),
                                    {"matched": matched})
            raise Mismatch(
                shown,
                want.cotangents,
                got,
                "The second call's rng had drawn before: the forward pass draws from its state as given, and the "
                "replay must repeat those draws (snapshot rng.bit_generator.state), not the seed's first ones.",
                calls=(f"rng = {pasteable(RngSeed(case['seed']))}", pasted, f"{pasted}.cotangents"),
            )


def _checkpointed_form(student: Any, case: Mapping[str, Any]) -> None:
    refused = (0, case["depth"] + 1)
    calls = [_checkpointed_call(case, matched) for matched in (True, False)]
    calls += [_checkpointed_call(case, True, k) for k in refused]
    outcomes = student.batch(calls, stop_on_error=False, return_errors=True)
    for matched in (True, False):
        _checked_run(_shown(case, matched=matched), _value(next(outcomes)))
    for k, outcome in zip(refused, outcomes, strict=True):
        _judge_refusal(_shown({**case, "block_size": k}, matched=True), "ValueError", outcome)


_ALL_VISIBLE = (_VISIBLE_BLOCKS, _VISIBLE_ONE_BLOCK, _PREDICTION_R4, _PREDICTION_R7)
_VISIBLE_SEQUENCE = ((_VISIBLE_BLOCKS, True), (_VISIBLE_ONE_BLOCK, False), (_VISIBLE_BLOCKS, True))

CHECKPOINTED_SUITE = CellSuite(
    CHECKPOINTED_TESTS,
    points=POINTS[CHECKPOINTED_TESTS],
    properties=[
        # With the catalogue's misconceptions like the others: a z0 drawn read-only meets the form check
        # too, and a write into it is named as the entry that writes into z0 (shared._judge_case).
        _property(
            CHECKPOINTED_TESTS,
            _Spec(
                "checkpointed_form",
                "checkpointed_cotangents returns a ReplayRun of the documented form for both streams and raises "
                "ValueError for a block_size outside [1, depth].",
                _checkpointed_form,
                _CASES,
                (_VISIBLE_BLOCKS,),
                max_examples=_EXAMPLES // 3,
            ),
        ),
        _property(
            CHECKPOINTED_TESTS,
            _Spec(
                "replay_counts",
                "Work and peak are exact for both streams: 2L - ceil(L/k) forward evaluations, "
                "L - ceil(L/k) replayed, peak ceil(L/k) + k states.",
                judge_checkpointed_counts,
                _CASES,
                _ALL_VISIBLE,
            ),
        ),
        _property(
            CHECKPOINTED_TESTS,
            _Spec(
                "matched_replay_is_store_all",
                "With matched=True the replayed derivatives equal store-all bit for bit.",
                judge_matched_bitwise,
                _CASES,
                _ALL_VISIBLE,
            ),
        ),
        _property(
            CHECKPOINTED_TESTS,
            _Spec(
                "unmatched_replay",
                "With matched=False the derivatives are those of a replay from the advanced generator, "
                "and exactly the predicted rows differ from store-all.",
                judge_unmatched_layout,
                _CASES,
                _ALL_VISIBLE,
            ),
        ),
        _property(
            CHECKPOINTED_TESTS,
            _Spec(
                "checkpointed_refuses_bad_arguments",
                "checkpointed_cotangents refuses what store-all refuses, and a block_size that is not an "
                "integer (TypeError: bools, floats, strings) or not in [1, depth] (ValueError).",
                judge_checkpointed_refusals,
                _CASES,
                (_VISIBLE_BLOCKS,),
                max_examples=_REFUSAL_EXAMPLES,
            ),
        ),
        _property(
            CHECKPOINTED_TESTS,
            _Spec(
                "checkpointed_default_and_integer_types",
                "Without matched the replay is matched; a numpy integer block_size is the same k.",
                judge_checkpointed_arguments,
                replaying_cases(),
                (_VISIBLE_BLOCKS, _VISIBLE_ONE_BLOCK),
                max_examples=_EXAMPLES // 4,
            ),
        ),
        _property(
            CHECKPOINTED_TESTS,
            _Spec(
                "checkpointed_repeated_calls",
                "Called several times in a row on repeated and varied chains and streams, each call returns "
                "what it returns alone: nothing is kept from earlier calls.",
                judge_checkpointed_sequence,
                call_sequences(with_matched=True),
                ({"calls": [{**c, "matched": m} for c, m in _VISIBLE_SEQUENCE]},),
                _unpack_pair,
                max_examples=_SEQUENCE_EXAMPLES,
            ),
        ),
        _property(
            CHECKPOINTED_TESTS,
            _Spec(
                "checkpointed_leaves_arguments",
                "checkpointed_cotangents leaves z0 unchanged, advances the caller's rng by the forward pass "
                "(and an unmatched replay) only, and grows the chain's counter by 2L - ceil(L/k).",
                judge_checkpointed_left_arguments,
                _CASES,
                _ALL_VISIBLE,
                max_examples=_EXAMPLES // 4,
            ),
        ),
        _property(
            CHECKPOINTED_TESTS,
            _Spec(
                "checkpointed_used_chain",
                "On a chain that earlier calls of the notebook's functions used, checkpointed_cotangents returns "
                "what it returns on a fresh chain and grows the counter by as much: counts are its own.",
                judge_checkpointed_used_chain,
                used_chain_sequences("checkpointed_cotangents"),
                (_used_chain_example(_STORE_ALL_CALL, _CHECKPOINTED_CALL),),
                _unpack_pair,
                max_examples=_SEQUENCE_EXAMPLES,
            ),
        ),
        _property(
            CHECKPOINTED_TESTS,
            _Spec(
                "checkpointed_used_generator",
                "Given a generator that drew before the call, the replay repeats this forward pass's draws "
                "(from snapshots of its state), not those of the generator's seed.",
                judge_checkpointed_used_generator,
                replaying_cases(),
                (_VISIBLE_BLOCKS, _PREDICTION_R4),
                max_examples=_EXAMPLES // 4,
            ),
        ),
    ],
)
