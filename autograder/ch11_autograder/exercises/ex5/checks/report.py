"""The checks of the ``replay_report`` cell: work, peak, mismatch, runs and arguments."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
from ch11_solutions import ex5_replay as ref

from ....api.suite import Call, CellSuite, Mismatch, Record, Student, StudentError, Unencodable
from ..contract import POINTS, REPORT_TESTS
from ..strategies import used_chain_sequences
from .calls import _bad_block_sizes, _judge_refusal, _judge_used_chain, _refusal_calls
from .shared import (
    _CASES,
    _PREDICTION_R4,
    _PREDICTION_R7,
    _REFUSAL_EXAMPLES,
    _REPORT_FIELDS,
    _SEQUENCE_EXAMPLES,
    _STORE_ALL_CALL,
    _VISIBLE_BLOCKS,
    _agrees,
    _chain,
    _count,
    _counts,
    _form_problem,
    _is_count,
    _property,
    _sent_z0,
    _shown,
    _Spec,
    _unpack_pair,
    _used_chain_example,
    _value,
)

_REPORT_EXAMPLES = 20


def judge_report_used_chain(student: Student, sequence: Mapping[str, Any]) -> None:
    _judge_used_chain(student, sequence, "replay_report")


# --------------------------------------------------------------------------- replay_report


def _report_call(case: Mapping[str, Any], matched: bool, block_size: Any = None) -> Call:
    """``replay_report`` on ``case`` (with ``block_size`` in place of the case's, if given)."""
    k = case["block_size"] if block_size is None else block_size
    return Call("replay_report", (_chain(case), _sent_z0(case), k, case["seed"]), {"matched": matched})


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
    good = {"chain": _chain(case), "z0": _sent_z0(case), "block_size": k, "seed": case["seed"]}
    bad = [("chain", None, "TypeError"), ("z0", list(map(float, case["z0"])), "ValueError"),
           ("z0", case["z0"][None, :], "ValueError")]  # the right dtype and size, shape (1, width)
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


_REPORT_CALL = {"function": "replay_report", "block_size": 4, "matched": False}

REPLAY_REPORT_SUITE = CellSuite(
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
