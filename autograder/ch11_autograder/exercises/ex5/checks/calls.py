"""The judges of the call contract Exercise 5's functions share: refusals, sequences of calls, the
arguments left as they were, and a chain or generator that earlier calls used.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from ch11_solutions import ex5_replay as ref

from ....api.suite import (
    Call,
    Mismatch,
    Record,
    RngSeed,
    Source,
    Student,
    StudentError,
    Unencodable,
    Watched,
    call_statement,
    pasteable,
    roundtrip,
    wire_equal,
)
from ..strategies import CASE_KEYS
from .shared import (
    _REPORT_FIELDS,
    _RUN_FIELDS,
    _agrees,
    _bits_equal,
    _chain,
    _chain_source,
    _checked_run,
    _checkpointed_call,
    _count,
    _counts,
    _form_problem,
    _is_count,
    _reference_replayed,
    _shown,
    _value,
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
    # z0[None, :] and z0[:, None]: the right dtype and size in another shape, refused too.
    return (list(map(float, z0)), None, z0.astype(np.float32), z0.astype(np.int64), z0[None, :], z0[:, None],
            np.zeros(z0.size + 1))


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


def _same_run(a: Record, b: Record) -> bool:
    return _counts(a) == _counts(b) and _bits_equal(a["cotangents"], b["cotangents"])


def _run_summary(run: Record) -> dict[str, Any]:
    return {"counts": _counts(run), "cotangents": run["cotangents"]}


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
    # Each call as the student pastes it, on a chain built in place: nothing is shared but what the function keeps.
    pasted = [call_statement(name, (_chain_source(case), *c.args[1:]), c.kwargs)
              for case, c in zip(cases, made, strict=True)]
    seen: list[tuple[dict[str, Any], Record, Any]] = []
    for position, (call, case, value) in enumerate(zip(calls, cases, runs, strict=True)):
        shown = {"calls": calls, "failing_call": position + 1}
        statements = tuple(pasted[: position + 1])
        if name == "store_all_cotangents":
            want = ref.store_all_cotangents(_chain(case), case["z0"], np.random.default_rng(case["seed"]))
        else:
            want = _reference_replayed(case, call["matched"])
        run = _checked_run({**shown, **_shown(case)}, value)
        for earlier, (earlier_call, earlier_run, earlier_want) in enumerate(seen):
            same_inputs = _wire_equal_calls(earlier_call, call)
            if same_inputs and not _same_run(run, earlier_run):
                note = f"Call {position + 1} repeats call {earlier + 1}; it must return the same result."
                raise Mismatch(shown, _run_summary(earlier_run), _run_summary(run), note, calls=statements)
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
                raise Mismatch(shown, expected, _run_summary(run), note, calls=statements)
        seen.append((call, run, want))


def _wire_equal_calls(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return a.keys() == b.keys() and all(
        _bits_equal(a[key], b[key]) if isinstance(a[key], np.ndarray) else a[key] == b[key] for key in a
    )


def _generator_state(watched: Any) -> Any:
    """The bit generator state of a watched ``Generator`` argument, or None."""
    if isinstance(watched, Record) and watched.type == "Generator" and "state" in watched.fields:
        return watched["state"]
    return None


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
    statement: str,
) -> None:
    """z0 unchanged; the caller's rng and the chain's counter moved as the docstring says.

    ``statement``: the call as the student pastes it, its chain, z0 and generator named ``chain``, ``z0`` and
    ``rng`` (:func:`left_arguments_call`); a failure shows it after the statements that set them up and before
    the argument it reads back.

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
    setup = (f"chain = {_chain_source(case).text}", f"z0 = {pasteable(case['z0'])}",
             f"rng = {pasteable(RngSeed(case['seed']))}", statement)
    z0_after = args[1] if len(args) > 1 else None
    if not (isinstance(z0_after, np.ndarray) and _bits_equal(z0_after, case["z0"])):
        raise Mismatch(
            shown,
            case["z0"],
            z0_after,
            "z0 as the call left it: the caller's array must not be modified (update a copy, not z0 in place).",
            calls=(*setup, "z0"),
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
            calls=(*setup, "rng.bit_generator.state"),
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
            calls=(*setup, "chain.forward_evaluations"),
        )


def left_arguments_call(function: str, *args: Any, **kwargs: Any) -> str:
    """``function`` called on the names :func:`_judge_left_arguments`' statements set up (``chain``, ``z0``,
    ``rng``), ``args`` between z0 and rng (a block size), ``kwargs`` after it."""
    return call_statement(function, (Source("chain"), Source("z0"), *args, Source("rng")), kwargs)


def _call_arguments(call: Mapping[str, Any], z0: Any, chain: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
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
    # The calls made on the shared chain as the student pastes them; one that raised is left out (pasted
    # into one cell it would stop the cell before the failing call).
    pasted = [f"chain = {_chain_source(case).text}", f"z0 = {pasteable(z0)}"]
    for exchange in exchanges:
        outcomes = student.batch([made for _, _, made in exchange], stop_on_error=False, return_errors=True)
        for (position, role, _), outcome in zip(exchange, outcomes, strict=True):
            if role == "other" and isinstance(outcome, StudentError):
                counter = None  # it may have applied some layers before it failed: the count is unknown
                continue
            if role == "other":
                pasted.append(_pasted_call(sequence["calls"][position]))
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
            counter = _judge_used_call(student, sequence, function, position, fresh, _value(outcome), counter,
                                       tuple(pasted))
            pasted.append(_pasted_call(sequence["calls"][position]))


def _pasted_call(call: Mapping[str, Any]) -> str:
    """One call of a used-chain sequence as the student pastes it, on the ``chain`` and ``z0`` set up before."""
    args, kwargs = _call_arguments(call, Source("z0"), Source("chain"))
    return call_statement(call["function"], args, kwargs)


def _judge_used_call(
    student: Student, sequence: Mapping[str, Any], function: str, position: int, fresh: Watched, used: Watched,
    counter: Any, before: tuple[str, ...] = (),
) -> Any:  # fmt: skip
    """The used-chain judgement of call ``position`` (see :func:`_judge_used_chain`); the chain's counter after it.

    ``fresh`` and ``used``: the watched call on a fresh chain and on the shared one; ``counter``: the shared
    chain's counter before the call (``None`` when unknown); ``before``: the statements that set up the chain
    and z0 and make the calls before this one, as a failure shows them to paste.
    """
    this = _pasted_call(sequence["calls"][position])
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
            calls=(*before, this),
        )
    left = used.args[1] if len(used.args) > 1 else None
    changed = not (isinstance(left, np.ndarray) and _bits_equal(left, z0))
    if function == "replay_report" and changed and not _runs_change_z0(student, case, z0, call):
        # Its docstring's "arguments unmodified": z0 as the call left it (the chain's counter is below).
        # Charged only when the student's own runs leave z0 alone: a run that changes it in place is
        # that run's mistake, which its own cell's properties charge.
        raise Mismatch(shown, {"z0 after the call": z0}, {"z0 after the call": left},
                       f"Call {position + 1}: replay_report leaves z0 as it was given.", calls=(*before, this, "z0"))
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
                calls=(*before, "before = chain.forward_evaluations", this, "chain.forward_evaluations - before"),
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
