"""What more than one of Exercise 5's cells uses: running the student and the reference, reading a
run, the catalogue entries as misconceptions and how a judge becomes a property.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from ch11_solutions import ex5_replay as ref
from trainable_harness import make_chain

from ....api.suite import (
    Call,
    Kept,
    Laid,
    Misconception,
    Mismatch,
    Property,
    Record,
    RngSeed,
    Source,
    Student,
    StudentError,
    call_statement,
    hypothesis_property,
    in_process_student,
    laid,
    layout_kind,
)
from ...catalogue import WrongAnswer, catalogue, fails_of
from ..contract import COTANGENT_RTOL
from ..strategies import CASE_KEYS, chain_cases, make_case

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
# A refusal property makes about twenty calls per example, a sequence three to five.
_REFUSAL_EXAMPLES = 6
_SEQUENCE_EXAMPLES = 12
_VISIBLE_BLOCKS = make_case(16, 5, 3, 11, [0.3, -0.2, 0.5], 4, 2)
# The prediction of the notebook: r = 4 gives the same rows as r = 5; r = 7 ends its block.
_PREDICTION_R4 = make_case(16, 4, 3, 11, [0.3, -0.2, 0.5], 4, 2)
_PREDICTION_R7 = make_case(16, 7, 3, 11, [0.3, -0.2, 0.5], 4, 2)


def _chain(case: Mapping[str, Any]):
    return make_chain(case["depth"], case["random_layer"], width=case["width"], seed=case["chain_seed"])


def _chain_source(case: Mapping[str, Any]) -> Source:
    """``case``'s chain as a notebook cell builds it (the statements a failure shows to paste)."""
    return Source(f"make_chain({case['depth']!r}, {case['random_layer']!r}, width={case['width']!r}, "
                  f"seed={case['chain_seed']!r})")


def _shown(case: Mapping[str, Any], *, block_size: bool = True, **extra: Any) -> dict[str, Any]:
    """The counterexample as the student reads it (and as a misconception implementation receives it)."""
    shown = {key: case[key] for key in CASE_KEYS if block_size or key != "block_size"}
    shown["z0"] = _sent_z0(case)  # as it was sent: the feedback's call rebuilds its memory layout
    shown.update(extra)
    return shown


def _from_shown(shown: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Inverse of :func:`_shown`: the case and the extra entries.

    A z0 shown in a memory layout of its own becomes the case's z0 and z0_layout.
    """
    case = {key: value for key, value in shown.items() if key in CASE_KEYS}
    case.setdefault("block_size", 1)
    case["z0_layout"] = None
    if isinstance(case.get("z0"), Laid):
        case["z0"], case["z0_layout"] = case["z0"].values, layout_kind(case["z0"])
    extra = {key: value for key, value in shown.items() if key not in CASE_KEYS}
    return case, extra


def _sent_z0(case: Mapping[str, Any]) -> np.ndarray | Laid:
    """z0 as the properties that check its accepted forms send it: in the case's drawn memory layout."""
    return laid(case["z0"], case.get("z0_layout"))


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


def _reference_saved(case: Mapping[str, Any]) -> np.ndarray:
    return ref.store_all_cotangents(_chain(case), case["z0"], np.random.default_rng(case["seed"])).cotangents


def _reference_replayed(case: Mapping[str, Any], matched: bool) -> ref.ReplayRun:
    return ref.checkpointed_cotangents(
        _chain(case), case["z0"], case["block_size"], np.random.default_rng(case["seed"]), matched=matched
    )


def _checkpointed_call(case: Mapping[str, Any], matched: bool, block_size: Any = None) -> Call:
    """``checkpointed_cotangents`` on ``case`` (with ``block_size`` in place of the case's, if given)."""
    k = case["block_size"] if block_size is None else block_size
    args = (_chain(case), _sent_z0(case), k, RngSeed(case["seed"]))
    return Call("checkpointed_cotangents", args, {"matched": matched})


# --------------------------------------------------------------------------- a write into a read-only z0

#: numpy's words when code writes into a read-only array.
_READ_ONLY_WRITE = "assignment destination is read-only"
_READ_ONLY_NOTE = (
    "z0 was given read-only and your code wrote into it: the caller's array must not be modified "
    "(update a copy, not z0 in place)."
)


def _judge_case(judge: Callable[[Student, Any], None], student: Student, case: Any) -> None:
    """``judge(student, case)``, where a write into a z0 sent read-only fails as a z0 left changed fails.

    The contract accepts z0 in any memory layout and leaves it as it was given. numpy refusing the
    write into a read-only z0 is that promise broken, seen on the one layout where numpy stops it: the
    failure is a :class:`Mismatch` on the case, with the call to paste and the note of the changed z0,
    so the catalogue entry that writes into z0 (run through this same function) explains it and is
    named, as it is where checkpointed_leaves_arguments finds a writeable z0 changed. Any other
    exception, and this one on a writeable z0, is the student's error as raised.
    """
    try:
        judge(student, case)
        return
    except StudentError as error:
        if not _wrote_into_read_only_z0(case, error):
            raise
        got = f"{error.type}: {error.message}"
    # Raised outside the handler, with no exception as its context: hypothesis tells failures apart by
    # their chain, which differs between a batched call and the same call made alone while it shrinks.
    made = student.made
    calls: tuple[str, ...] = ()
    if made is not None and not any(isinstance(a, Kept) for a in (*made[1], *made[2].values())):
        fn, args, kwargs = made
        calls = (call_statement(fn, (_chain_source(case), *args[1:]), kwargs),)
    shown = _shown(case, block_size=made is None or made[0] != "store_all_cotangents")
    raise Mismatch(shown, "z0 read, never written", got, _READ_ONLY_NOTE, calls=calls)


def _wrote_into_read_only_z0(case: Any, error: StudentError) -> bool:
    """Whether ``error`` is numpy's refusal to write into a read-only array, in a call given ``case``'s
    z0 read-only (a case of the chain cases, with its drawn ``z0_layout``)."""
    return (
        isinstance(case, Mapping) and case.get("z0_layout") == "read_only" and error.type == "ValueError"
        and error.message == _READ_ONLY_WRITE and all(key in case for key in CASE_KEYS)
    )  # fmt: skip


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
                _judge_case(judge, _local_student(_entry), unpack(shown))
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
    pair = dict(shown)
    for name in ("saved", "replayed"):
        if isinstance(pair.get(name), Laid):
            pair[name], pair[f"{name}_layout"] = pair[name].values, layout_kind(pair[name])
    return pair


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
        _judge_case(spec.judge, student, case)

    return check


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


def _used_chain_example(*calls: dict[str, Any]) -> dict[str, Any]:
    """The notebook's chain shared by ``calls`` (each gets the notebook's generator seed 2)."""
    chain = {key: _VISIBLE_BLOCKS[key] for key in ("depth", "random_layer", "width", "chain_seed", "z0")}
    return {**chain, "calls": [{"seed": 2, **call} for call in calls]}


_STORE_ALL_CALL = {"function": "store_all_cotangents"}
_CHECKPOINTED_CALL = {"function": "checkpointed_cotangents", "block_size": 4, "matched": True}
