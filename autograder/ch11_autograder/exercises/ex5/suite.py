"""Hidden suites of Exercise 5: checkpointed replay of a chain with one random layer.

One :class:`CellSuite` per autograded test cell of ``ex5_replay.ipynb``. The
trusted side sends the chain as the protocol's ``chain`` constructor (the
worker builds a fresh ``StochasticChain``, so its counter starts at 0) and the
generator as ``RngSeed(seed)`` (the worker builds ``default_rng(seed)``), and
computes every expected value from ``ch11_solutions.ex5_replay`` on an
identical fresh chain and generator.

Comparison rules, and why:

* Counts are compared exactly. A count may be a Python ``int`` or a numpy
  integer scalar (an index from ``np.flatnonzero`` or a count from numpy
  arithmetic is still an exact integer); floats and bools are refused.
* Cotangents: a float64 array of shape ``(depth + 1, width)``. Store-all and
  replayed values must agree with the reference bit for bit, or to a relative
  :data:`COTANGENT_RTOL` in every entry. The tolerance admits a reverse rule
  written with its three factors associated differently from
  ``chain.backward``: over depth <= 40, each layer adds at most a few ulps of
  relative difference (measured: under 3e-16 per layer, 2.4e-15 over a whole
  chain), far below 1e-10, while every catalogued mistake changes entries by
  more than 1e-3 relative. The exercise's claims are bitwise, but between the
  student's *own* runs: matched replay must equal a run without replay bit for
  bit, and an unmatched replay must differ from it in exactly the rows the
  reference's does. When the student's bits are the reference's, those are
  checked against the reference's store-all; otherwise against the student's
  ``block_size=1`` run, which replays nothing and so is store-all in the
  student's own operation order.
* ``first_mismatch`` is compared exactly (index or ``None``).
* Arguments after a call (watched calls): z0 must come back bit for bit, the
  caller's generator in the reference's state and a fresh chain's counter grown
  by the documented work; the last two only where the run's own values are
  right, so a wrong stream or extra work is not charged twice.
* Kept objects: one chain shared by calls of all three chain functions, each
  call of the function under test compared with the student's own call on a
  fresh chain; one generator used by two calls, the second judged from the
  state the first left it in.

Catalogue entries (``wrong_answers.py``) are hooked in per
property. Each property is written once as a function of the ``Student`` it calls, so the
same code that judges the student computes what a catalogued mistake would
have reported; feedback names the mistake whose report equals the student's.
Entries whose outputs coincide everywhere (four ways to replay from an
advanced generator) are named as one misconception.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from ch11_solutions import ex5_replay as ref
from trainable_harness import make_chain

from ...api.suite import (
    Call,
    CellSuite,
    Misconception,
    Mismatch,
    Property,
    Record,
    RngSeed,
    Student,
    StudentError,
    Unencodable,
    Watched,
    hypothesis_property,
    in_process_student,
    register,
    roundtrip,
    wire_equal,
)
from ..catalogue import WrongAnswer, catalogue, fails_of
from .contract import CHECKPOINTED_TESTS, COTANGENT_RTOL, MISMATCH_TESTS, POINTS, REPORT_TESTS, STORE_ALL_TESTS
from .strategies import (
    CASE_KEYS,
    array_pairs,
    call_sequences,
    chain_cases,
    make_case,
    replaying_cases,
    special_pairs,
    used_chain_sequences,
)

__all__ = [
    "CHECKPOINTED_SUITE",
    "FIRST_MISMATCH_SUITE",
    "REPLAY_REPORT_SUITE",
    "STORE_ALL_SUITE",
    "STREAM_GROUP",
]

#: Catalogue entries with identical outputs on every input: each makes the replay of the
#: random layer's block draw from a generator that already advanced past its draw.
STREAM_GROUP = ("unmatched_stream", "generator_kept_by_reference", "shallow_copy_snapshot", "snapshot_after_block")
_STREAM_NAME = "Replay drew from an advanced generator"
_STREAM_ADVICE = (
    "With matched=True your replay of the random layer's block drew other numbers than the forward pass. "
    "Either no snapshot was restored, or the 'snapshot' was not a copy of the state at the block start: "
    "the Generator object itself, its bit_generator, copy.copy(rng) (which shares the bit generator), or a "
    "state taken after the block ran. Take copy.deepcopy(rng.bit_generator.state) before the block's first "
    "layer and set it on a copy of the generator before replaying that block."
)

_RUN_FIELDS = ("cotangents", "forward_evaluations", "replayed_evaluations", "peak_states")
_REPORT_FIELDS = (
    "block_size",
    "matched",
    "saved",
    "replayed",
    "extra_forward_evaluations",
    "saved_peak_states",
    "replayed_peak_states",
    "first_mismatch",
)
_HOW_TO_REBUILD = (
    "Rebuild the inputs with chain = make_chain(depth, random_layer, width=width, seed=chain_seed) "
    "and a fresh np.random.default_rng(seed) for every call."
)

# Examples per property: enough to meet every block layout of small chains (random layer
# inside a block, ending a block, last block shorter, k = 1 and k = L) while one
# submission's whole suite stays within a few seconds against the reference. The report's
# properties call two already-graded functions per stream, so fewer examples suffice there.
_EXAMPLES = 40
_REPORT_EXAMPLES = 20
# A refusal property makes about twenty calls per example, a sequence three to five.
_REFUSAL_EXAMPLES = 6
_SEQUENCE_EXAMPLES = 12


# --------------------------------------------------------------------------- cases


#: The chains of the notebook's visible checks (make_chain's default seed is 11).
_VISIBLE_STORE_ALL = make_case(12, 5, 3, 11, [0.3, -0.2, 0.5], 1, 1)
_VISIBLE_BLOCKS = make_case(16, 5, 3, 11, [0.3, -0.2, 0.5], 4, 2)
_VISIBLE_ONE_BLOCK = make_case(16, 5, 3, 11, [0.3, -0.2, 0.5], 16, 2)
#: The shortest chain the contract admits: one layer (random), one block of one.
_ONE_LAYER = make_case(1, 0, 2, 5, [0.4, -0.1], 1, 3)
# The prediction of the notebook: r = 4 gives the same rows as r = 5; r = 7 ends its block.
_PREDICTION_R4 = make_case(16, 4, 3, 11, [0.3, -0.2, 0.5], 4, 2)
_PREDICTION_R7 = make_case(16, 7, 3, 11, [0.3, -0.2, 0.5], 4, 2)


def _chain(case: Mapping[str, Any]):
    return make_chain(case["depth"], case["random_layer"], width=case["width"], seed=case["chain_seed"])


def _shown(case: Mapping[str, Any], *, block_size: bool = True, **extra: Any) -> dict[str, Any]:
    """The counterexample as the student reads it (and as a misconception implementation receives it)."""
    shown = {key: case[key] for key in CASE_KEYS if block_size or key != "block_size"}
    shown.update(extra)
    return shown


def _from_shown(shown: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Inverse of :func:`_shown`: the case and the extra entries."""
    case = {key: value for key, value in shown.items() if key in CASE_KEYS}
    case.setdefault("block_size", 1)
    extra = {key: value for key, value in shown.items() if key not in CASE_KEYS}
    return case, extra


# --------------------------------------------------------------------------- callers

# A judge takes the Student it calls: the student's, or the reference with one catalogue entry
# swapped in (``_local_student``), so one judge both grades the student and predicts what a
# catalogued mistake reports, kept objects included.


def _compose_report(functions: Mapping[str, Callable]) -> Callable:
    """``replay_report`` as the notebook runs it: calling the three functions of ``functions``.

    Mirrors :func:`ch11_solutions.ex5_replay.replay_report` line for line; used
    only to predict what a wrong function in an earlier cell does to the report.
    """

    def replay_report(chain, z0, block_size, seed, *, matched):
        saved = functions["store_all_cotangents"](chain, z0, np.random.default_rng(seed))
        replayed = functions["checkpointed_cotangents"](
            chain, z0, block_size, np.random.default_rng(seed), matched=matched
        )
        return ref.ReplayReport(
            block_size=int(block_size),
            matched=bool(matched),
            saved=saved,
            replayed=replayed,
            extra_forward_evaluations=replayed.forward_evaluations - saved.forward_evaluations,
            saved_peak_states=saved.peak_states,
            replayed_peak_states=replayed.peak_states,
            first_mismatch=functions["first_mismatch"](saved.cotangents, replayed.cotangents),
        )

    return replay_report


def _local_student(entry: WrongAnswer | None = None) -> Student:
    """The reference functions called in this process, with ``entry`` replacing its function."""
    functions: dict[str, Callable] = {
        "store_all_cotangents": ref.store_all_cotangents,
        "checkpointed_cotangents": ref.checkpointed_cotangents,
        "first_mismatch": ref.first_mismatch,
    }
    if entry is not None and entry.replaces in functions:
        functions[entry.replaces] = entry.function
    if entry is not None and entry.replaces == "replay_report":
        functions["replay_report"] = entry.function
    else:
        functions["replay_report"] = _compose_report(functions)
    return in_process_student(functions)


# --------------------------------------------------------------------------- reading replies


class _NoReport(Exception):
    """A misconception implementation would not fail this property on these inputs."""


def _is_count(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, np.integer)


def _count(value: Any) -> Any:
    """An exact integer as a Python int; anything else unchanged (so it compares unequal)."""
    return int(value) if _is_count(value) else value


def _form_problem(run: Any, case: Mapping[str, Any], record: str = "ReplayRun") -> str:
    """Why ``run`` is not a ReplayRun of the chain's shape, or ``""``."""
    if not isinstance(run, Record) or run.type != record:
        return f"return a {record} (the record type defined in the notebook)"
    if tuple(run.fields) != _RUN_FIELDS:
        return f"a ReplayRun has the fields {', '.join(_RUN_FIELDS)}, in that order"
    cot = run["cotangents"]
    shape = (case["depth"] + 1, case["width"])
    if not isinstance(cot, np.ndarray) or cot.dtype != np.float64 or cot.shape != shape:
        return f"cotangents must be a float64 numpy array of shape (depth + 1, width) = {shape}"
    for name in _RUN_FIELDS[1:]:
        # "Its three counts are Python ints": a numpy integer (a count computed from a numpy block_size as
        # given) is not one, whatever the type of block_size.
        if type(run[name]) is not int:
            return f"{name} must be an integer (a Python int), got {type(run[name]).__name__}"
    return ""


def _run(student: Student, shown: Mapping[str, Any], name: str, *args: Any, **kwargs: Any) -> Record:
    """Call ``name`` and insist on a well-formed ReplayRun."""
    return _checked_run(shown, student.call(name, *args, **kwargs))


def _checked_run(shown: Mapping[str, Any], run: Any) -> Record:
    """``run``, a call's value, if it is a well-formed ReplayRun for the case ``shown``; else the Mismatch."""
    case, _ = _from_shown(shown)
    problem = _form_problem(run, case)
    if problem:
        raise Mismatch(shown, "a ReplayRun", run, problem)
    return run


def _value(outcome: Any) -> Any:
    """A call's value from ``Student.batch(..., return_errors=True)``: its error raised, as the call alone would."""
    if isinstance(outcome, StudentError):
        raise outcome
    return outcome


def _counts(run: Record) -> tuple[Any, Any, Any]:
    return tuple(_count(run[name]) for name in _RUN_FIELDS[1:])


def _bits_equal(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _agrees(got: np.ndarray, want: np.ndarray) -> bool:
    """Bit for bit, or within :data:`COTANGENT_RTOL` of ``want`` in every entry."""
    if _bits_equal(got, want):
        return True
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    with np.errstate(invalid="ignore", over="ignore"):
        return bool(np.all(np.abs(got - want) <= COTANGENT_RTOL * np.abs(want)))


def _differing_rows(a: np.ndarray, b: np.ndarray) -> list[int]:
    return [i for i in range(a.shape[0]) if a[i].tobytes() != b[i].tobytes()]


def _reference_saved(case: Mapping[str, Any]) -> np.ndarray:
    return ref.store_all_cotangents(_chain(case), case["z0"], np.random.default_rng(case["seed"])).cotangents


def _reference_replayed(case: Mapping[str, Any], matched: bool) -> ref.ReplayRun:
    return ref.checkpointed_cotangents(
        _chain(case), case["z0"], case["block_size"], np.random.default_rng(case["seed"]), matched=matched
    )


def _expected_counts(case: Mapping[str, Any]) -> tuple[int, int, int]:
    depth, k = case["depth"], case["block_size"]
    blocks = -(-depth // k)
    return 2 * depth - blocks, depth - blocks, blocks + k


# --------------------------------------------------------------------------- the judgements


def judge_store_all_values(student: Student, case: Mapping[str, Any]) -> None:
    shown = _shown(case, block_size=False)
    run = _run(student, shown, "store_all_cotangents", _chain(case), case["z0"], RngSeed(case["seed"]))
    want = _reference_saved(case)
    if not _agrees(run["cotangents"], want):
        raise Mismatch(
            shown, want, run["cotangents"], f"Row i is dL/dz_i, from chain.backward(i, z_(i+1), ...). {_HOW_TO_REBUILD}"
        )


def judge_store_all_counts(student: Student, case: Mapping[str, Any]) -> None:
    shown = _shown(case, block_size=False)
    run = _run(student, shown, "store_all_cotangents", _chain(case), case["z0"], RngSeed(case["seed"]))
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


def _checkpointed_call(case: Mapping[str, Any], matched: bool, block_size: Any = None) -> Call:
    """``checkpointed_cotangents`` on ``case`` (with ``block_size`` in place of the case's, if given)."""
    k = case["block_size"] if block_size is None else block_size
    return Call("checkpointed_cotangents", (_chain(case), case["z0"], k, RngSeed(case["seed"])), {"matched": matched})


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


def _judge_refusal(shown: Mapping[str, Any], kind: str, outcome: Any) -> None:
    """A call's ``outcome`` (from ``Student.batch(..., return_errors=True)``) must be exactly ``kind`` raised.

    Not a subclass, not another exception, not a return value. A value the grader cannot read fails the
    property as it is.
    """
    if isinstance(outcome, Unencodable):
        raise outcome
    if isinstance(outcome, StudentError):
        if outcome.type == kind:
            return
        got = f"{outcome.type}: {outcome.message}"
        raise Mismatch(shown, f"{kind} raised", got, "The docstring names the exception.")
    got = f"no exception: returned a {outcome.type}" if isinstance(outcome, Record) else outcome
    raise Mismatch(shown, f"{kind} raised", got, "The docstring says this input is refused.")


#: Values that are not a chain, not a generator, or not a z0 (a list of floats is not an array).
_NOT_A_CHAIN: tuple[Any, ...] = (None, 3, "chain")
_NOT_A_GENERATOR: tuple[Any, ...] = (7, None, 1.5, "rng")


def _bad_z0s(case: Mapping[str, Any]) -> tuple[Any, ...]:
    z0 = case["z0"]
    return (list(map(float, z0)), None, z0.astype(np.float32), z0.astype(np.int64), z0[None, :], np.zeros(z0.size + 1))


def _bad_block_sizes(case: Mapping[str, Any]) -> tuple[tuple[Any, str], ...]:
    k, depth = case["block_size"], case["depth"]
    return ((True, "TypeError"), (float(k), "TypeError"), (str(k), "TypeError"), (None, "TypeError"),
            (np.float64(k), "TypeError"), (0, "ValueError"), (-k, "ValueError"), (depth + 1, "ValueError"))  # fmt: skip


def _refusals(case: Mapping[str, Any], *, block_size: bool) -> list[tuple[str, Any, str]]:
    """(argument, bad value, exception the docstring promises), one bad argument per call."""
    bad = [("chain", value, "TypeError") for value in _NOT_A_CHAIN]
    bad += [("rng", value, "TypeError") for value in _NOT_A_GENERATOR]
    bad += [("z0", value, "ValueError") for value in _bad_z0s(case)]
    if block_size:
        bad += [("block_size", value, kind) for value, kind in _bad_block_sizes(case)]
    return bad


def _refusal_calls(
    name: str, good: Mapping[str, Any], bad: Sequence[tuple[str, Any, str]], **kwargs: Any
) -> list[Call]:
    """``name`` with each bad argument of ``bad`` (see :func:`_refusals`) in turn in place of its good one."""
    return [Call(name, tuple({**good, argument: value}.values()), kwargs) for argument, value, _ in bad]


def judge_store_all_refusals(student: Student, case: Mapping[str, Any]) -> None:
    """Raises: TypeError for a chain or rng of another type, ValueError for any z0 but a float64 (width,) array."""
    good = {"chain": _chain(case), "z0": case["z0"], "rng": RngSeed(case["seed"])}
    bad = _refusals(case, block_size=False)
    outcomes = student.batch(_refusal_calls("store_all_cotangents", good, bad), stop_on_error=False, return_errors=True)
    for (argument, value, kind), outcome in zip(bad, outcomes, strict=True):
        shown = _shown(case, block_size=False, refused_argument=argument, refused_value=value)
        _judge_refusal(shown, kind, outcome)


def judge_checkpointed_refusals(student: Student, case: Mapping[str, Any]) -> None:
    """Raises: as store-all, and TypeError / ValueError for a block_size that is not an integer in [1, L]."""
    good = {"chain": _chain(case), "z0": case["z0"], "block_size": case["block_size"], "rng": RngSeed(case["seed"])}
    bad = _refusals(case, block_size=True)
    calls = _refusal_calls("checkpointed_cotangents", good, bad, matched=True)
    outcomes = student.batch(calls, stop_on_error=False, return_errors=True)
    for (argument, value, kind), outcome in zip(bad, outcomes, strict=True):
        shown = _shown(case, matched=True, refused_argument=argument, refused_value=value)
        _judge_refusal(shown, kind, outcome)


def _same_run(a: Record, b: Record) -> bool:
    return _counts(a) == _counts(b) and _bits_equal(a["cotangents"], b["cotangents"])


def _run_summary(run: Record) -> dict[str, Any]:
    return {"counts": _counts(run), "cotangents": run["cotangents"]}


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
    made += [Call("checkpointed_cotangents", (_chain(case), case["z0"], size, RngSeed(case["seed"])), kwargs)
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


def _judge_call_sequence(student: Student, sequence: Mapping[str, Any], name: str) -> None:
    """No call of a sequence depends on the calls before it.

    Two history checks, which any function without state passes whether its
    values are right or wrong (the values are judged by the other properties):
    a case met again returns the same counts and bits; and a case whose
    reference result differs from another's does not return that other
    case's result. The first catches a running total kept across calls (a
    module-level ledger or counter), the second a result kept from an earlier
    call (a cache keyed on too little).
    """
    calls = sequence["calls"]
    cases = [{key: call[key] for key in CASE_KEYS} for call in calls]
    if name == "store_all_cotangents":
        made = [Call(name, (_chain(case), case["z0"], RngSeed(case["seed"]))) for case in cases]
    else:
        made = [_checkpointed_call(case, call["matched"]) for case, call in zip(cases, calls, strict=True)]
    # The whole sequence in one exchange, in order in the same worker: its state carries over as alone.
    runs = student.batch(made)
    seen: list[tuple[dict[str, Any], Record, Any]] = []
    for position, (call, case, value) in enumerate(zip(calls, cases, runs, strict=True)):
        shown = {"calls": calls, "failing_call": position + 1}
        if name == "store_all_cotangents":
            want = ref.store_all_cotangents(_chain(case), case["z0"], np.random.default_rng(case["seed"]))
        else:
            want = _reference_replayed(case, call["matched"])
        run = _checked_run({**shown, **_shown(case)}, value)
        for earlier, (earlier_call, earlier_run, earlier_want) in enumerate(seen):
            same_inputs = _wire_equal_calls(earlier_call, call)
            if same_inputs and not _same_run(run, earlier_run):
                note = f"Call {position + 1} repeats call {earlier + 1}; it must return the same result."
                raise Mismatch(shown, _run_summary(earlier_run), _run_summary(run), note)
            # Only another chain, input or seed must change the result: the matched flag alone
            # need not (a replay that ignores it is wrong, but judged elsewhere).
            other_case = not _wire_equal_calls({k: earlier_call[k] for k in CASE_KEYS}, case)
            differs = earlier_want.cotangents.tobytes() != want.cotangents.tobytes()
            if other_case and differs and _same_run(run, earlier_run):
                note = (
                    f"Call {position + 1} returned exactly the result of call {earlier + 1}, whose chain, input or "
                    "seed differs: a result kept from an earlier call?"
                )
                expected = {"counts": (want.forward_evaluations, want.replayed_evaluations, want.peak_states),
                            "cotangents": want.cotangents}  # fmt: skip
                raise Mismatch(shown, expected, _run_summary(run), note)
        seen.append((call, run, want))


def _wire_equal_calls(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return a.keys() == b.keys() and all(
        _bits_equal(a[key], b[key]) if isinstance(a[key], np.ndarray) else a[key] == b[key] for key in a
    )


def judge_store_all_sequence(student: Student, sequence: Mapping[str, Any]) -> None:
    _judge_call_sequence(student, sequence, "store_all_cotangents")


def judge_checkpointed_sequence(student: Student, sequence: Mapping[str, Any]) -> None:
    _judge_call_sequence(student, sequence, "checkpointed_cotangents")


# --------------------------------------------------------------------------- arguments after a call, shared objects


def _plain(value: Any) -> Any:
    """A decoded generator state as the plain dicts numpy's ``bit_generator.state`` setter takes."""
    return {key: _plain(item) for key, item in value.items()} if isinstance(value, Mapping) else value


def _generator_state(watched: Any) -> Any:
    """The bit generator state of a watched ``Generator`` argument, or None."""
    if isinstance(watched, Record) and watched.type == "Generator" and "state" in watched.fields:
        return watched["state"]
    return None


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


def _rng_draws(state: Any, seed: int, width: int) -> int | None:
    """How many draws of ``width`` normals take ``default_rng(seed)`` to ``state`` (0 to 4), else None.

    The feedback says how far the caller's generator moved in the chain's own unit
    (one random layer's draw), not as PCG64 integers no student can read.
    """
    probe = np.random.default_rng(seed)
    for draws in range(5):
        if wire_equal(roundtrip(probe.bit_generator.state), state):
            return draws
        probe.standard_normal(width)
    return None


def _counter(watched: Any) -> Any:
    """``forward_evaluations`` of a watched chain argument (None if it came back as no chain)."""
    if isinstance(watched, Record) and watched.type == "StochasticChain" and "forward_evaluations" in watched.fields:
        return _count(watched["forward_evaluations"])
    return None


def _judge_left_arguments(
    shown: Mapping[str, Any],
    case: Mapping[str, Any],
    watched: Watched,
    reference: ref.ReplayRun,
    reference_rng: np.random.Generator,
) -> None:
    """z0 unchanged; the caller's rng and the chain's counter moved as the docstring says.

    The rng and the counter are judged only where the run's own values are right
    (derivatives within the tolerance, forward_evaluations as documented): a replay
    from the wrong stream also leaves the generator elsewhere, and extra work also
    moves the counter, and those mistakes already cost the value properties.
    """
    run = watched.value
    problem = _form_problem(run, case)
    if problem:
        # As every property of the cell: a value of the wrong form is judged nowhere else.
        raise Mismatch(shown, "a ReplayRun", run, problem)
    args = watched.args
    z0_after = args[1] if len(args) > 1 else None
    if not (isinstance(z0_after, np.ndarray) and _bits_equal(z0_after, case["z0"])):
        raise Mismatch(
            shown,
            case["z0"],
            z0_after,
            "z0 as the call left it: the caller's array must not be modified (update a copy, not z0 in place).",
        )
    if not _agrees(run["cotangents"], reference.cotangents):
        return
    want_state = roundtrip(reference_rng.bit_generator.state)
    got_state = _generator_state(args[-1] if args else None)
    if not wire_equal(want_state, got_state):
        draws = {"rng_draws_of_width_normals": _rng_draws(want_state, case["seed"], case["width"])}
        raise Mismatch(
            shown,
            draws,
            {"rng_draws_of_width_normals": _rng_draws(got_state, case["seed"], case["width"])},
            "How far the caller's rng moved from default_rng(seed) (None: another state). The forward pass draws "
            "once at the random layer and a replay from rng itself draws again; a matched replay draws from a "
            "copy set to the snapshot and never rewinds the caller's generator.",
        )
    if _count(run["forward_evaluations"]) != reference.forward_evaluations:
        return
    grew = _counter(args[0] if args else None)
    if grew != reference.forward_evaluations:
        raise Mismatch(
            shown,
            {"chain.forward_evaluations": reference.forward_evaluations},
            {"chain.forward_evaluations": grew},
            "The chain's counter after the call, on a fresh chain: it grows by every layer application of this "
            "run (do not reset or set it).",
        )


def judge_store_all_left_arguments(student: Student, case: Mapping[str, Any]) -> None:
    shown = _shown(case, block_size=False)
    watched = student.call_watch("store_all_cotangents", _chain(case), case["z0"], RngSeed(case["seed"]))
    reference_rng = np.random.default_rng(case["seed"])
    reference = ref.store_all_cotangents(_chain(case), case["z0"], reference_rng)
    _judge_left_arguments(shown, case, watched, reference, reference_rng)


def judge_checkpointed_left_arguments(student: Student, case: Mapping[str, Any]) -> None:
    made = [_checkpointed_call(case, matched) for matched in (True, False)]
    outcomes = student.batch([Call(c.fn, c.args, c.kwargs, watch=True) for c in made])
    for matched, watched in zip((True, False), outcomes, strict=True):
        shown = _shown(case, matched=matched)
        reference_rng = np.random.default_rng(case["seed"])
        reference = ref.checkpointed_cotangents(
            _chain(case), case["z0"], case["block_size"], reference_rng, matched=matched
        )
        _judge_left_arguments(shown, case, watched, reference, reference_rng)


def _call_arguments(call: Mapping[str, Any], z0: np.ndarray, chain: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The arguments of one call of a used-chain sequence (see ``strategies.used_chain_sequences``)."""
    name = call["function"]
    if name == "store_all_cotangents":
        return (chain, z0, RngSeed(call["seed"])), {}
    if name == "checkpointed_cotangents":
        return (chain, z0, call["block_size"], RngSeed(call["seed"])), {"matched": call["matched"]}
    return (chain, z0, call["block_size"], call["seed"]), {"matched": call["matched"]}


def _result_summary(value: Any) -> Any:
    """What a call returned, as the used-chain judge compares it (counts and derivatives)."""
    if isinstance(value, Record) and value.type == "ReplayRun" and tuple(value.fields) == _RUN_FIELDS:
        return _run_summary(value)
    if isinstance(value, Record) and value.type == "ReplayReport" and tuple(value.fields) == _REPORT_FIELDS:
        return {
            name: _result_summary(value[name]) if name in ("saved", "replayed") else _count(value[name])
            for name in _REPORT_FIELDS
        }
    return value


def _result_problem(value: Any, case: Mapping[str, Any]) -> str:
    """Why ``value`` is neither a well-formed ReplayRun nor a ReplayReport, or ``""``."""
    if isinstance(value, Record) and value.type == "ReplayReport":
        if tuple(value.fields) != _REPORT_FIELDS:
            return f"a ReplayReport has the fields {', '.join(_REPORT_FIELDS)}, in that order"
        return _form_problem(value["saved"], case) or _form_problem(value["replayed"], case)
    return _form_problem(value, case)


def _judge_used_chain(student: Student, sequence: Mapping[str, Any], function: str) -> None:
    """Each call of ``function`` on one chain that other calls use too answers as on a fresh chain.

    The sequence's calls (``store_all_cotangents``, ``checkpointed_cotangents``,
    ``replay_report``) all receive the same kept chain, so its counter carries what
    earlier calls applied. Only the calls of ``function`` are judged, each against
    the student's own call with the same arguments on a fresh chain: the same
    counts and derivatives, and the chain's counter grown by as much as that call
    grows a fresh chain's. The values themselves are judged by the other properties;
    here only their dependence on the chain's history is.
    """
    z0 = sequence["z0"]
    case = {key: sequence[key] for key in ("depth", "random_layer", "width", "chain_seed")}
    chain = student.keep(_chain(case), "chain")
    # One exchange per call of ``function``: the calls before it, then it on a fresh chain and on the used one.
    # The next exchange starts after its judgement, which may make calls of its own (_runs_change_z0).
    exchanges: list[list[tuple[int, str, Call]]] = [[]]
    for position, call in enumerate(sequence["calls"]):
        args, kwargs = _call_arguments(call, z0, chain)
        if call["function"] != function:
            exchanges[-1].append((position, "other", Call(call["function"], args, kwargs, watch=True)))
            continue
        fresh_args, _ = _call_arguments(call, z0, _chain(case))
        exchanges[-1].append((position, "fresh", Call(function, fresh_args, kwargs, watch=True)))
        exchanges[-1].append((position, "used", Call(function, args, kwargs, watch=True)))
        exchanges.append([])
    counter: Any = 0
    fresh: Any = None
    for exchange in exchanges:
        outcomes = student.batch([made for _, _, made in exchange], stop_on_error=False, return_errors=True)
        for (position, role, _), outcome in zip(exchange, outcomes, strict=True):
            if role == "other" and isinstance(outcome, StudentError):
                counter = None  # it may have applied some layers before it failed: the count is unknown
                continue
            if role == "other":
                counter = _counter(outcome.args[0] if outcome.args else None)
                continue
            if role == "fresh":
                fresh = _value(outcome)
                problem = _result_problem(fresh.value, {**case, "z0": z0})
                if problem:
                    raise Mismatch(
                        {**sequence, "failing_call": position + 1},
                        "a ReplayReport" if function == "replay_report" else "a ReplayRun",
                        fresh.value,
                        problem,
                    )
                continue
            counter = _judge_used_call(student, sequence, function, position, fresh, _value(outcome), counter)


def _judge_used_call(
    student: Student, sequence: Mapping[str, Any], function: str, position: int, fresh: Watched, used: Watched,
    counter: Any,
) -> Any:  # fmt: skip
    """The used-chain judgement of call ``position`` (see :func:`_judge_used_chain`); the chain's counter after it.

    ``fresh`` and ``used``: the watched call on a fresh chain and on the shared one; ``counter``: the shared
    chain's counter before the call (``None`` when unknown).
    """
    z0 = sequence["z0"]
    case = {key: sequence[key] for key in ("depth", "random_layer", "width", "chain_seed")}
    call = sequence["calls"][position]
    shown = {**sequence, "failing_call": position + 1}
    expected, got = _result_summary(fresh.value), _result_summary(used.value)
    if not wire_equal(expected, got):
        raise Mismatch(
            shown,
            expected,
            got,
            f"Call {position + 1} gets a chain that the calls before it used; it must return what the same "
            "call returns on a fresh chain (expected). Counts are this call's own: a running total read off "
            "chain.forward_evaluations includes the earlier calls.",
        )
    left = used.args[1] if len(used.args) > 1 else None
    changed = not (isinstance(left, np.ndarray) and _bits_equal(left, z0))
    if function == "replay_report" and changed and not _runs_change_z0(student, case, z0, call):
        # Its docstring's "arguments unmodified": z0 as the call left it (the chain's counter is below).
        # Charged only when the student's own runs leave z0 alone: a run that changes it in place is
        # that run's mistake, which its own cell's properties charge.
        raise Mismatch(shown, {"z0 after the call": z0}, {"z0 after the call": left},
                       f"Call {position + 1}: replay_report leaves z0 as it was given.")
    after = _counter(used.args[0] if used.args else None)
    if _is_count(after) and _is_count(counter):
        grown, fresh_growth = after - counter, _counter(fresh.args[0] if fresh.args else None)
        if grown != fresh_growth:
            raise Mismatch(
                shown,
                {"chain.forward_evaluations grows by": fresh_growth},
                {"chain.forward_evaluations grows by": grown},
                f"Call {position + 1}: the chain's counter grows by this call's layer applications, as it "
                "does on a fresh chain (do not reset or set it).",
            )
    return after


def _runs_change_z0(student: Student, case: Mapping[str, Any], z0: np.ndarray, call: Mapping[str, Any]) -> bool:
    """Whether the student's store-all or checkpointed run, called as ``call``'s report calls them, changes z0."""
    runs: tuple[tuple[str, tuple[Any, ...], dict[str, Any]], ...] = (
        ("store_all_cotangents", (_chain(case), z0, RngSeed(call["seed"])), {}),
        ("checkpointed_cotangents", (_chain(case), z0, call["block_size"], RngSeed(call["seed"])),
         {"matched": call["matched"]}),
    )
    for function, args, kwargs in runs:
        try:
            watched = student.call_watch(function, *args, **kwargs)
        except StudentError:
            return True  # a failing run is its own cell's business; the report is not charged for it
        left = watched.args[1] if len(watched.args) > 1 else None
        if not (isinstance(left, np.ndarray) and _bits_equal(left, z0)):
            return True
    return False


def judge_store_all_used_chain(student: Student, sequence: Mapping[str, Any]) -> None:
    _judge_used_chain(student, sequence, "store_all_cotangents")


def judge_checkpointed_used_chain(student: Student, sequence: Mapping[str, Any]) -> None:
    _judge_used_chain(student, sequence, "checkpointed_cotangents")


def judge_report_used_chain(student: Student, sequence: Mapping[str, Any]) -> None:
    _judge_used_chain(student, sequence, "replay_report")


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
        args = (_chain(case), case["z0"], case["block_size"], rng)
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
            raise Mismatch(
                shown,
                want.cotangents,
                got,
                "The second call's rng had drawn before: the forward pass draws from its state as given, and the "
                "replay must repeat those draws (snapshot rng.bit_generator.state), not the seed's first ones.",
            )


# --------------------------------------------------------------------------- first_mismatch


def _first_mismatch_judge(student: Student, pair: Mapping[str, Any], note: str, *, watch: bool = False) -> Any:
    """The pair, then the pair swapped, then the pair again: the index is symmetric and kept from no earlier call.

    With ``watch``, one more call of the pair, watched, goes in the same exchange; its :class:`Watched`
    is returned once the three indices are judged (``None`` without ``watch``).
    """
    saved, replayed = pair["saved"], pair["replayed"]
    want = ref.first_mismatch(saved, replayed)
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
            shown = dict(pair) if call == 0 else {"saved": a, "replayed": b, "call": call + 1}
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
        raise Mismatch(dict(pair), {"arrays after the call": (saved, replayed)}, {"arrays after the call": left},
                       "first_mismatch compares the arrays; it leaves both as they were given.")


def judge_first_mismatch_bits(student: Student, pair: Mapping[str, Any]) -> None:
    _first_mismatch_judge(
        student, pair, "Rows are compared by their bytes: 0.0 and -0.0 differ, two NaNs with the same bits agree."
    )


# --------------------------------------------------------------------------- replay_report


def _report_call(case: Mapping[str, Any], matched: bool, block_size: Any = None) -> Call:
    """``replay_report`` on ``case`` (with ``block_size`` in place of the case's, if given)."""
    k = case["block_size"] if block_size is None else block_size
    return Call("replay_report", (_chain(case), case["z0"], k, case["seed"]), {"matched": matched})


def _checked_report(case: Mapping[str, Any], matched: bool, report: Any) -> Record:
    """``report``, a call's value, if it is a ReplayReport; else the Mismatch saying so."""
    if not isinstance(report, Record) or report.type != "ReplayReport" or tuple(report.fields) != _REPORT_FIELDS:
        raise Mismatch(
            _shown(case, matched=matched),
            "a ReplayReport",
            report,
            "Return a ReplayReport (the record type defined in the notebook).",
        )
    return report


def _reports(student: Student, case: Mapping[str, Any]) -> Iterator[tuple[bool, Record]]:
    """``(matched, report)`` for matched True then False, both in one exchange; each checked when reached."""
    outcomes = student.batch([_report_call(case, matched) for matched in (True, False)])
    for matched, report in zip((True, False), outcomes, strict=True):
        yield matched, _checked_report(case, matched, report)


def _reference_report(case: Mapping[str, Any], matched: bool) -> ref.ReplayReport:
    return ref.replay_report(_chain(case), case["z0"], case["block_size"], case["seed"], matched=matched)


def judge_report_work(student: Student, case: Mapping[str, Any]) -> None:
    for matched, report in _reports(student, case):
        want = _reference_report(case, matched)
        expected = (want.block_size, want.matched, want.extra_forward_evaluations)
        got = (_count(report["block_size"]), report["matched"], _count(report["extra_forward_evaluations"]))
        if got != expected or not _is_count(got[0]) or not isinstance(got[1], bool) or not _is_count(got[2]):
            raise Mismatch(
                _shown(case, matched=matched),
                expected,
                got,
                "(block_size, matched, extra_forward_evaluations): the extra work is what replay adds to "
                "store-all, L - ceil(L/k).",
            )


def judge_report_peak(student: Student, case: Mapping[str, Any]) -> None:
    for matched, report in _reports(student, case):
        want = _reference_report(case, matched)
        expected = (want.saved_peak_states, want.replayed_peak_states)
        got = (_count(report["saved_peak_states"]), _count(report["replayed_peak_states"]))
        if got != expected or not all(_is_count(v) for v in got):
            raise Mismatch(
                _shown(case, matched=matched),
                expected,
                got,
                "(saved_peak_states, replayed_peak_states): L + 1 for store-all, ceil(L/k) + k for blocks of k.",
            )


def judge_report_mismatch(student: Student, case: Mapping[str, Any]) -> None:
    """The first mismatch, shown with whether each run agrees with the reference.

    The two flags tell the student where a wrong index comes from (the index
    alone is the same, e.g. ``depth - 1``, for several different mistakes).
    """
    for matched, report in _reports(student, case):
        want = _reference_report(case, matched)
        got_index = _count(report["first_mismatch"])
        if (got_index is None and want.first_mismatch is None) or (
            _is_count(got_index) and got_index == want.first_mismatch
        ):
            continue
        runs_agree = {}
        for name, reference in (("saved", want.saved), ("replayed", want.replayed)):
            run = report[name]
            well_formed = not _form_problem(run, case)
            runs_agree[f"{name}_agrees_with_reference"] = well_formed and _agrees(
                run["cotangents"], reference.cotangents
            )
        raise Mismatch(
            _shown(case, matched=matched),
            {
                "first_mismatch": want.first_mismatch,
                "saved_agrees_with_reference": True,
                "replayed_agrees_with_reference": True,
            },
            {"first_mismatch": got_index, **runs_agree},
            "first_mismatch of the two runs' cotangents: None when matched; when not, row e - 2 of the "
            "random layer's block [s, e) (its rule reads the last replayed state), or None if the random layer "
            "ends its block. The flags say whether your saved and replayed runs have the reference's derivatives.",
        )


def judge_report_runs(student: Student, case: Mapping[str, Any]) -> None:
    for matched, report in _reports(student, case):
        shown = _shown(case, matched=matched)
        want = _reference_report(case, matched)
        for name, reference in (("saved", want.saved), ("replayed", want.replayed)):
            run = report[name]
            problem = _form_problem(run, case)
            if problem:
                raise Mismatch(shown, f"{name}: a ReplayRun", run, problem)
            expected = (reference.forward_evaluations, reference.replayed_evaluations, reference.peak_states)
            if _counts(run) != expected:
                raise Mismatch(shown, expected, _counts(run), f"{name}: (forward, replayed, peak) of that run.")
            if not _agrees(run["cotangents"], reference.cotangents):
                raise Mismatch(
                    shown,
                    reference.cotangents,
                    run["cotangents"],
                    f"{name}.cotangents: each run gets its own fresh np.random.default_rng(seed).",
                )


def judge_report_arguments(student: Student, case: Mapping[str, Any]) -> None:
    """A numpy integer block_size is the same k; bad arguments raise as in checkpointed_cotangents.

    The numpy report is compared with the student's own report for the int
    ``k`` (the values are judged by the other properties); its ``block_size``
    field must be a Python int.
    """
    fields = ("block_size", "extra_forward_evaluations", "saved_peak_states", "replayed_peak_states", "first_mismatch")
    case = {**case, "block_size": int(case["block_size"])}  # a counterexample shows the numpy k
    k = case["block_size"]
    good = {"chain": _chain(case), "z0": case["z0"], "block_size": k, "seed": case["seed"]}
    bad = [("chain", None, "TypeError"), ("z0", list(map(float, case["z0"])), "ValueError")]
    bad += [("block_size", value, kind) for value, kind in _bad_block_sizes(case)]
    # Every call in one exchange: for each stream the int k, np.int64(k) and np.int32(k), then the refusals.
    numpy_sizes = (np.int64(k), np.int32(k))
    calls = [_report_call(case, matched, size) for matched in (True, False) for size in (k, *numpy_sizes)]
    calls += _refusal_calls("replay_report", good, bad, matched=True)
    outcomes = student.batch(calls, stop_on_error=False, return_errors=True)
    for matched, size in ((matched, size) for matched in (True, False) for size in (None, *numpy_sizes)):
        if size is None:
            own = _checked_report(case, matched, _value(next(outcomes)))
            continue
        shown = {**_shown(case, matched=matched), "block_size": size}
        report = next(outcomes)
        if isinstance(report, Unencodable):
            raise report
        if isinstance(report, StudentError):
            got = f"{report.type}: {report.message}"
            raise Mismatch(shown, "a ReplayReport", got, f"np.{type(size).__name__}(k) is a block size.")
        if not isinstance(report, Record) or report.type != "ReplayReport" or tuple(report.fields) != _REPORT_FIELDS:
            raise Mismatch(shown, "a ReplayReport", report, "Return a ReplayReport for a numpy integer block_size.")
        expected = tuple(_count(own[f]) for f in fields)
        counts = tuple(_count(report[f]) for f in fields)
        if counts != expected:
            note = f"({', '.join(fields)}): expected what your replay_report returns for block_size={k}."
            raise Mismatch(shown, expected, counts, note)
        # Checked after the values, so an answer wrong in a count is told that first.
        if type(report["block_size"]) is not int:
            raise Mismatch(
                shown, {"block_size": k}, {"block_size": report["block_size"]},
                "ReplayReport.block_size is a Python int, also for a numpy integer block_size: int(block_size).",
            )
    for (argument, value, kind), outcome in zip(bad, outcomes, strict=True):
        shown = _shown(case, matched=True, refused_argument=argument, refused_value=value)
        _judge_refusal(shown, kind, outcome)


# --------------------------------------------------------------------------- misconceptions


def _misconceptions(grade_id: str, judge: Callable[[Student, Any], None], unpack: Callable) -> list[Misconception]:
    """Catalogue entries that must lose in ``grade_id``, as what ``judge`` would report for them.

    ``unpack(shown)`` turns a counterexample's inputs back into the judge's
    argument. An entry that passes on those inputs reports nothing (its
    implementation raises, which the engine reads as "does not match"). One that
    fails reports its whole :class:`Mismatch`, so it explains the student's failure
    only where it fails the same check: a judge makes several calls on one case (one
    per refused argument, one per way of passing ``block_size``), and an entry that
    accepts a bad ``block_size`` does not explain an answer that accepts a bad ``z0``,
    although both report "no exception" on the same case.
    """
    found: list[Misconception] = []
    grouped = False
    answer_cell = grade_id.removesuffix("_tests")
    # Mistakes in this cell's own function first: when two entries report the same value,
    # the one in the function under test is the likelier explanation.
    entries = sorted(catalogue("ex5"), key=lambda entry: entry.answer_cell != answer_cell)
    for entry in entries:
        if grade_id not in entry.loses:
            continue
        in_group = entry.name in STREAM_GROUP
        if in_group and grouped:
            continue
        grouped = grouped or in_group

        def implementation(_entry: WrongAnswer = entry, **shown: Any) -> Any:
            try:
                judge(_local_student(_entry), unpack(shown))
            except Mismatch as mismatch:
                return mismatch
            raise _NoReport(_entry.name)

        name, advice = (_STREAM_NAME, _STREAM_ADVICE) if in_group else (entry.title, entry.advice)
        stands_for = [e for e in entries if e.name in STREAM_GROUP] if in_group else [entry]
        found.append(Misconception(name, advice, implementation, fails=fails_of(stands_for)))
    return found


def _unpack_case(shown: Mapping[str, Any]) -> dict[str, Any]:
    case, _ = _from_shown(shown)
    return case


def _unpack_pair(shown: Mapping[str, Any]) -> dict[str, Any]:
    return dict(shown)


@dataclass(frozen=True)
class _Spec:
    name: str
    description: str
    judge: Callable[[Student, Any], None]
    strategy: Any
    examples: tuple[Any, ...]
    unpack: Callable[[Mapping[str, Any]], Any] = _unpack_case
    max_examples: int = _EXAMPLES


def _property(grade_id: str, spec: _Spec) -> Property:
    misconceptions = _misconceptions(grade_id, spec.judge, spec.unpack)

    @hypothesis_property(
        spec.name,
        spec.description,
        given={"case": spec.strategy},
        max_examples=spec.max_examples,
        examples=[{"case": example} for example in spec.examples],
        misconceptions=misconceptions,
    )
    def check(student: Any, case: Any) -> None:
        spec.judge(student, case)

    return check


# --------------------------------------------------------------------------- form and error properties


def _store_all_form(student: Any, case: Mapping[str, Any]) -> None:
    shown = _shown(case, block_size=False)
    bad = case["z0"].astype(np.float32)
    short = np.zeros(case["width"] + 1)
    z0s = (case["z0"], bad, short)
    calls = [Call("store_all_cotangents", (_chain(case), z0, RngSeed(case["seed"]))) for z0 in z0s]
    outcomes = student.batch(calls, stop_on_error=False, return_errors=True)
    _checked_run(shown, _value(next(outcomes)))
    for z0, outcome in zip(z0s[1:], outcomes, strict=True):
        _judge_refusal({**shown, "z0": z0}, "ValueError", outcome)


def _checkpointed_form(student: Any, case: Mapping[str, Any]) -> None:
    refused = (0, case["depth"] + 1)
    calls = [_checkpointed_call(case, matched) for matched in (True, False)]
    calls += [_checkpointed_call(case, True, k) for k in refused]
    outcomes = student.batch(calls, stop_on_error=False, return_errors=True)
    for matched in (True, False):
        _checked_run(_shown(case, matched=matched), _value(next(outcomes)))
    for k, outcome in zip(refused, outcomes, strict=True):
        _judge_refusal(_shown({**case, "block_size": k}, matched=True), "ValueError", outcome)


def _first_mismatch_errors(student: Any, pair: Mapping[str, Any]) -> None:
    saved = pair["saved"]
    shorter = saved[:-1] if saved.shape[0] > 1 else saved[:, None]
    retyped = saved.astype(np.float64 if saved.dtype == np.float32 else np.float32)
    scalar = np.float64(1.0)
    pairs = ((saved, shorter), (saved, retyped), (scalar, scalar))
    calls = [Call("first_mismatch", arrays) for arrays in pairs]
    outcomes = student.batch(calls, stop_on_error=False, return_errors=True)
    for (a, b), outcome in zip(pairs, outcomes, strict=True):
        _judge_refusal({"saved": a, "replayed": b}, "ValueError", outcome)


def _plain_property(name: str, description: str, body: Callable, strategy: Any, examples: Sequence[Any]) -> Property:
    @hypothesis_property(
        name,
        description,
        given={"case": strategy},
        max_examples=_EXAMPLES // 3,
        examples=[{"case": example} for example in examples],
    )
    def check(student: Any, case: Any) -> None:
        body(student, case)

    return check


# --------------------------------------------------------------------------- the suites

_CASES = chain_cases()
_ALL_VISIBLE = (_VISIBLE_BLOCKS, _VISIBLE_ONE_BLOCK, _PREDICTION_R4, _PREDICTION_R7)
_VISIBLE_SEQUENCE = ((_VISIBLE_BLOCKS, True), (_VISIBLE_ONE_BLOCK, False), (_VISIBLE_BLOCKS, True))
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


def _used_chain_example(*calls: dict[str, Any]) -> dict[str, Any]:
    """The notebook's chain shared by ``calls`` (each gets the notebook's generator seed 2)."""
    chain = {key: _VISIBLE_BLOCKS[key] for key in ("depth", "random_layer", "width", "chain_seed", "z0")}
    return {**chain, "calls": [{"seed": 2, **call} for call in calls]}


_STORE_ALL_CALL = {"function": "store_all_cotangents"}
_CHECKPOINTED_CALL = {"function": "checkpointed_cotangents", "block_size": 4, "matched": True}
_REPORT_CALL = {"function": "replay_report", "block_size": 4, "matched": False}


STORE_ALL_SUITE = register(
    CellSuite(
        STORE_ALL_TESTS,
        points=POINTS[STORE_ALL_TESTS],
        properties=[
            _plain_property(
                "store_all_form",
                "store_all_cotangents returns a ReplayRun (float64 cotangents of shape (depth+1, width), integer "
                "counts) and raises ValueError for a z0 that is not float64 of shape (width,).",
                _store_all_form,
                _CASES,
                (_VISIBLE_STORE_ALL, _ONE_LAYER),
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
)

CHECKPOINTED_SUITE = register(
    CellSuite(
        CHECKPOINTED_TESTS,
        points=POINTS[CHECKPOINTED_TESTS],
        properties=[
            _plain_property(
                "checkpointed_form",
                "checkpointed_cotangents returns a ReplayRun of the documented form for both streams and raises "
                "ValueError for a block_size outside [1, depth].",
                _checkpointed_form,
                _CASES,
                (_VISIBLE_BLOCKS,),
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
)

FIRST_MISMATCH_SUITE = register(
    CellSuite(
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
)

REPLAY_REPORT_SUITE = register(
    CellSuite(
        REPORT_TESTS,
        points=POINTS[REPORT_TESTS],
        properties=[
            _property(
                REPORT_TESTS,
                _Spec(
                    "report_work",
                    "The report echoes block_size and matched, and its extra work is L - ceil(L/k) "
                    "forward evaluations, for both streams.",
                    judge_report_work,
                    _CASES,
                    (_VISIBLE_BLOCKS,),
                    max_examples=_REPORT_EXAMPLES,
                ),
            ),
            _property(
                REPORT_TESTS,
                _Spec(
                    "report_peak",
                    "The report's peaks are L + 1 (store-all) and ceil(L/k) + k (replay), for both streams.",
                    judge_report_peak,
                    _CASES,
                    (_VISIBLE_BLOCKS,),
                    max_examples=_REPORT_EXAMPLES,
                ),
            ),
            _property(
                REPORT_TESTS,
                _Spec(
                    "report_first_mismatch",
                    "The report's first mismatch is None for a matched stream and the reference's row "
                    "for an unmatched one.",
                    judge_report_mismatch,
                    _CASES,
                    (_VISIBLE_BLOCKS, _PREDICTION_R4, _PREDICTION_R7),
                    max_examples=_REPORT_EXAMPLES,
                ),
            ),
            _property(
                REPORT_TESTS,
                _Spec(
                    "report_runs",
                    "The report's saved and replayed runs are the store-all and checkpointed runs "
                    "on the same noise (derivatives and counts).",
                    judge_report_runs,
                    _CASES,
                    (_VISIBLE_BLOCKS,),
                    max_examples=_REPORT_EXAMPLES,
                ),
            ),
            _property(
                REPORT_TESTS,
                _Spec(
                    "report_arguments",
                    "replay_report takes a numpy integer block_size as that k, and raises as checkpointed_cotangents "
                    "for a bad chain, z0 or block_size.",
                    judge_report_arguments,
                    _CASES,
                    (_VISIBLE_BLOCKS,),
                    max_examples=_REFUSAL_EXAMPLES,
                ),
            ),
            _property(
                REPORT_TESTS,
                _Spec(
                    "report_used_chain",
                    "On a chain that earlier calls of the notebook's functions used, replay_report returns what it "
                    "returns on a fresh chain: its runs' counts are their own.",
                    judge_report_used_chain,
                    used_chain_sequences("replay_report"),
                    (_used_chain_example(_STORE_ALL_CALL, _REPORT_CALL),),
                    _unpack_pair,
                    max_examples=_SEQUENCE_EXAMPLES,
                ),
            ),
        ],
    )
)
