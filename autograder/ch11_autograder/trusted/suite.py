"""The engine behind the API hidden property suites are written against (``ch11_autograder.api.suite``).

A suite imports its names from the facade, never from here. It grades one autograded
test cell (by its nbgrader ``grade_id``)::

    from hypothesis import strategies as st
    from ch11_autograder.api.suite import CellSuite, Misconception, expect_equal, hypothesis_property, register

    @hypothesis_property(
        "doubles_integers",
        "double(x) returns 2 * x for every integer x.",
        given={"x": st.integers(-10**6, 10**6)},
        max_examples=50,
        misconceptions=[Misconception("adds instead of multiplies", "Use 2 * x, not x + 2.", lambda x: x + 2)],
    )
    def doubles_integers(student, x):
        expect_equal({"x": x}, 2 * x, student.call("double", x))

    register(CellSuite("double_tests", points=2, properties=[doubles_integers]))

Contracts:

* A check receives a :class:`Student` and calls the submission's top-level
  functions with ``student.call(name, *args, **kwargs)``; values come back
  decoded by ``ch11_autograder.protocol`` (dataclasses as ``Record``, tapes as
  lists of ``TapeNode``). The check computes the expected value itself in the
  trusted process (from ``ch11_solutions``) and raises :class:`Mismatch` on a
  wrong answer. Pass reference values through ``roundtrip`` (``trusted/roundtrip.py``; or use
  :func:`expect_equal`, which does) so they compare like the student's.
* An exception in the student's code fails the property with the inputs of
  the (shrunk) example. A call that times out, a worker crash or a malformed
  reply fails the property at once, without further calls or shrinking; the
  next property gets a fresh worker.
* Any other exception escaping a check is a bug in the suite: the property
  fails with kind ``internal`` (the student is told the grader had a problem)
  and the error is logged with its traceback for the instructor.
* A property scores nothing partial: it holds or it fails. The cell's score
  is ``points * held / total`` (``verdicts.score_for``).
* Hypothesis settings are fixed for grading: ``derandomize=True``,
  ``database=None``, ``deadline=None``, the property's ``max_examples``,
  phases explicit, generate and shrink, ``too_slow`` suppressed (it depends on
  the machine), one bug reported, and a seed derived from the property name so
  that the same submission always meets the same examples.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import hashlib
import inspect
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import hypothesis
import hypothesis.internal.conjecture.providers
from hypothesis import HealthCheck, Phase, Verbosity
from hypothesis.errors import Flaky
from hypothesis.strategies import SearchStrategy

from ..protocol import CellOutcome, Kept, ProtocolError, wire_equal
from ..untrusted.launch import SandboxUnavailable
from .roundtrip import roundtrip
from .signature import same_inputs
from .verdicts import CellVerdict, Failure, format_call
from .worker_client import Call, CallTimeout, NotDefined, NotRun, Outcome, StudentError, Unencodable, WorkerCrashed

__all__ = [
    "VISIBLE_CHECKS",
    "Call",
    "CellSuite",
    "Misconception",
    "Mismatch",
    "Property",
    "Replies",
    "Session",
    "Student",
    "Watched",
    "expect_equal",
    "hypothesis_property",
    "name_misconception",
    "run_property",
    "run_suite",
]

log = logging.getLogger(__name__)

#: Default wall-clock budget of one property, seconds (all its calls together).
DEFAULT_TIME_BUDGET = 60.0
#: Failing examples kept per property as evidence for misconception matching.
MAX_EVIDENCE = 50
#: Inputs a property draws to look for ones that tell two misconceptions apart.
PROBE_POOL = 60
#: Inputs, per rival misconception, on which the student's code must agree with the one named.
PROBES_PER_RIVAL = 3


class Mismatch(Exception):
    """Raised by a check when the student's answer is wrong.

    Args:
        inputs: the inputs that show it, name -> value, as the student would
            write them (shown in feedback).
        expected: the right answer.
        got: the student's answer.
        note: one optional sentence of explanation for the student.
    """

    def __init__(self, inputs: Mapping[str, Any], expected: Any, got: Any, note: str = "") -> None:
        self.inputs = dict(inputs)
        self.expected = expected
        self.got = got
        self.note = note
        super().__init__(f"mismatch for {sorted(self.inputs)}")


@dataclass(frozen=True)
class Misconception:
    """A named wrong implementation from the catalogue.

    Attributes:
        name: short name shown to the student, e.g. ``"last writer wins"``.
        advice: one or two sentences saying what to change.
        implementation: runs in the trusted process as
            ``implementation(**mismatch.inputs)`` and returns what a submission
            with this mistake would return as ``got``; or, where the mistake shows
            in a check made of several calls (one per argument refused, say), the
            whole :class:`Mismatch` such a submission would be reported with: it
            then explains a failure only when it fails on the same inputs (the
            same refused argument, the same call) with the same ``got``
            (``trusted.signature.same_inputs``), not merely somewhere in the property.
        function: the student's function whose output ``implementation`` predicts,
            called with the same keyword arguments; with it (and a property that can
            draw inputs) the engine checks, before naming this misconception, that the
            student's code agrees with it where it differs from every other one.
            ``""``: the misconception cannot be probed, and is named on the evidence alone.
    """

    name: str
    advice: str
    implementation: Callable[..., Any]
    function: str = ""


class Session(Protocol):
    """What the engine needs from a worker session; each method is ``WorkerSession``'s.

    Implemented by ``WorkerSession``, by wrappers of one (``exercises.witness.Renamed``), by
    ``InProcessSession`` (``trusted/in_process.py``) and by test doubles. ``call_many`` gives
    one outcome per call, in order: the ``Reply``, or the exception ``call`` would raise, not raised.
    """

    report: tuple[CellOutcome, ...]

    def call(self, fn: str, *args: Any, **kwargs: Any) -> Any: ...

    def call_watch(self, fn: str, *args: Any, **kwargs: Any) -> Any: ...

    def call_many(
        self, calls: Sequence[Call], *, stop_on_error: bool = False, deadline: float | None = None
    ) -> list[Outcome]: ...

    def keep(self, value: Any, label: str = "") -> Kept: ...

    def defaults(self, fn: str) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Watched:
    """A watched call: the value returned, the arguments as the call left them, the warnings it emitted.

    ``args``/``kwargs`` are decoded like return values (dataclasses as ``Record``,
    a numpy Generator as a ``Generator`` record of its bit generator's state,
    ``None`` for an argument without a wire form). Compare them with
    ``roundtrip`` of what was sent to see whether the call changed them.
    ``warnings``: each warning the call emitted, in order, as ``"Category: message"``
    (at most ``protocol.MAX_WARNINGS``).
    """

    value: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Property:
    """One checkable statement about the student's code.

    Attributes:
        name: identifier, unique within its suite, shown to students.
        description: one line for students, stating what must hold.
        check: ``check(student)``; returns on success, raises
            :class:`Mismatch` on a wrong answer.
        misconceptions: catalogued wrong implementations, tried in order
            when a :class:`Mismatch` is raised; one is named when it
            reproduces the student's output on every failing example seen.
        matches: ``matches(wrong_output, got)`` decides whether the student's
            output equals a misconception's (default: exact wire equality).
        time_budget: wall-clock seconds for the whole property; when spent,
            the property fails (kind ``budget``) before the next call.
        probe_inputs: inputs (keyword name -> value) among which the engine looks for
            ones that tell two misconceptions apart (see :func:`name_misconception`);
            called only when a misconception is about to be named. A
            :func:`hypothesis_property` draws them from its strategies.
    """

    name: str
    description: str
    check: Callable[[Student], None]
    misconceptions: tuple[Misconception, ...] = ()
    matches: Callable[[Any, Any], bool] = wire_equal
    time_budget: float = DEFAULT_TIME_BUDGET
    probe_inputs: Callable[[], Sequence[Mapping[str, Any]]] | None = None

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"property name {self.name!r} must be an identifier")
        if not self.description or "\n" in self.description:
            raise ValueError(f"property {self.name}: the description must be one non-empty line")
        object.__setattr__(self, "misconceptions", tuple(self.misconceptions))


@dataclass(frozen=True)
class CellSuite:
    """The properties that grade one autograded test cell.

    Attributes:
        grade_id: nbgrader ``grade_id`` of the test cell.
        points: the cell's points; must equal the gradebook's value.
        properties: at least one, with unique names; order is feedback order. Any
            sequence is accepted; it is stored as a tuple.
    """

    grade_id: str
    points: float
    properties: Sequence[Property] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        object.__setattr__(self, "properties", tuple(self.properties))
        object.__setattr__(self, "points", float(self.points))
        if not self.properties:
            raise ValueError(f"suite {self.grade_id}: needs at least one property")
        names = [p.name for p in self.properties]
        if len(set(names)) != len(names):
            raise ValueError(f"suite {self.grade_id}: property names must be unique, got {names}")
        if not self.points > 0:
            raise ValueError(f"suite {self.grade_id}: points must be > 0")


class _Aborted(BaseException):
    """Ends a property at once (timeout, crash, garbage, budget).

    A BaseException that is not an Exception: hypothesis lets it through
    without shrinking, so one hung call costs one timeout, not hundreds.
    """

    def __init__(self, kind: str, detail: str, call: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail
        self.call = call
        self.inputs: dict[str, Any] = {}


class _Refused(BaseException):
    """The sandbox refused to run the student's code: grading must stop, not score."""

    def __init__(self, error: SandboxUnavailable) -> None:
        super().__init__(str(error))
        self.error = error


class _Raised(Exception):
    """The student's code raised while checking a hypothesis example."""

    def __init__(self, inputs: Mapping[str, Any], error: StudentError, call: str) -> None:
        super().__init__(str(error))
        self.inputs = dict(inputs)
        self.error = error
        self.call = call


class Student:
    """The student's code as a check sees it.

    ``call(name, *args, **kwargs)`` runs a top-level function of the
    submission in the sandboxed worker and returns its decoded value. It
    raises ``StudentError`` (and subclasses) when the student's code fails;
    timeouts, crashes and garbage end the property immediately.
    """

    def __init__(self, session: Session, time_budget: float) -> None:
        self._session = session
        self._deadline = time.monotonic() + time_budget
        self._budget = time_budget
        # The call being made, formatted only when a failure reads it: formatting every call's
        # arguments cost more than encoding them (most calls succeed and are never shown).
        self._last_call: str | tuple[str, tuple[Any, ...], dict[str, Any]] = ""
        #: Every mismatch seen while hypothesis searched and shrunk (evidence for misconceptions).
        self.mismatches: list[Mismatch] = []

    @property
    def last_call(self) -> str:
        """The most recent call as feedback shows it, ``fn(0, y=1.5)`` (see ``verdicts.format_call``)."""
        if not isinstance(self._last_call, str):
            self._last_call = format_call(*self._last_call)
        return self._last_call

    @property
    def report(self) -> tuple[CellOutcome, ...]:
        """How the submission's cells ran in the worker (see ``CellOutcome``)."""
        return self._session.report

    def call(self, fn: str, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` in the student's code; see the class docstring."""
        return self._guarded((fn, args, kwargs), lambda: self._session.call(fn, *args, **kwargs))

    def call_watch(self, fn: str, *args: Any, **kwargs: Any) -> Watched:
        """As :meth:`call`, also returning the arguments as the call left them (purity checks)."""
        return _watched(self._guarded((fn, args, kwargs), lambda: self._session.call_watch(fn, *args, **kwargs)))

    def defaults(self, fn: str) -> dict[str, Any]:
        """The default values the student's ``fn`` declares (parameter -> value); nothing is called.

        For default clauses whose default is too costly to call through the worker
        (``block_table()`` over 4081 depths with a plain scan): the declared value is
        what a call without the argument uses.
        """
        return self._guarded(f"(reading the defaults of {fn})", lambda: self._session.defaults(fn))

    def keep(self, value: Any, label: str = "") -> Kept:
        """Keep ``value`` in the worker; every call given the result receives that same object.

        Use it to check that a function does not depend on earlier calls through a shared
        object (a chain whose counters it reads, a generator it consumes). ``label`` is how
        the object reads in feedback (``chain``).
        """
        return self._guarded(f"(preparing {label or 'an argument'})", lambda: self._session.keep(value, label))

    def batch(self, calls: Sequence[Call], *, stop_on_error: bool = True, return_errors: bool = False) -> Replies:
        """Several calls in one exchange with the worker, taken one at a time in order: THE way to batch calls.

        ``calls`` are :class:`Call` records (``Call("double", (3,))``; ``watch=True`` for a
        watched call, ``timeout`` for a limit other than the session's). The calls are made in
        order in the same worker, so state one leaves behind (on a kept object, in the
        student's globals) is what the next one sees. Nothing is sent until the first is taken.

        Read the result with :meth:`Replies.take` or by iterating it (``for got in ...``,
        ``next(replies)``, ``a, b = student.batch(...)``): each is what :meth:`call` (or
        :meth:`call_watch`, for a watched call) would have done at that point, raising
        included: the call's ``StudentError``, or the end of the property at its timeout,
        crash, malformed reply or the spent budget, only when taken. So a check that stops
        at a wrong answer reports it even when a later call of the exchange raised, hung or
        ended the worker: that later outcome is never taken. The later calls were made,
        though: their time counts against the budget, a hang among them costs its limit and a
        fresh worker, and state they leave in the student's code is what later calls meet.

        Args:
            stop_on_error: how the calls travel, never what a take gives. True when a
                ``StudentError`` ends the check: the worker makes no call after an error, and
                the calls after it are sent again, in a new exchange, only if taken. False when
                errors are expected answers (with ``return_errors``, or a check that catches
                them): every call travels in the one exchange.
            return_errors: a call's ``StudentError`` (and ``NotDefined``, ``Unencodable``) is
                taken as its value instead of raised, as when each single call is wrapped in
                ``try``/``except StudentError``.
        """
        return Replies(self, list(calls), stop_on_error, return_errors)

    def _send(self, calls: list[Call], stop_on_error: bool) -> list[Outcome | None]:
        """The outcomes of ``calls`` made in one exchange (``None`` each: made one at a time when taken).

        Once the property has recorded a mismatch (hypothesis replays and shrinks a failure), the calls
        are made one at a time as they are taken, so that from then on no call after a wrong answer is
        made at all."""
        if self.mismatches:
            return [None] * len(calls)
        head = calls[0]
        return self._guarded(
            (head.fn, tuple(head.args), dict(head.kwargs)),
            lambda: self._session.call_many(calls, stop_on_error=stop_on_error, deadline=self._deadline),
        )

    def _taken(self, call: Call, outcome: Outcome | None) -> Any:
        """What :meth:`call` or :meth:`call_watch` gives for ``call``, from its outcome in a batch."""
        if outcome is None:
            if call.watch:
                return self.call_watch(call.fn, *call.args, **call.kwargs)
            return self.call(call.fn, *call.args, **call.kwargs)
        self._last_call = (call.fn, tuple(call.args), dict(call.kwargs))
        if isinstance(outcome, NotRun):
            # Only a spent budget leaves a taken call unmade: a stopped batch is sent again first.
            raise self._over_budget()
        if isinstance(outcome, StudentError):
            raise outcome
        if isinstance(outcome, BaseException):
            raise self._aborted(outcome) from None
        return _watched(outcome) if call.watch else outcome.value

    def _over_budget(self) -> _Aborted:
        return _Aborted(
            "budget",
            f"checking this property took longer than {self._budget:g} s in total, so the grader stopped "
            "(your code is much slower than needed)",
            self.last_call,
        )

    def _aborted(self, exc: BaseException) -> BaseException:
        """What ends the property when a call's exchange failed with ``exc`` (``exc`` itself otherwise)."""
        if isinstance(exc, CallTimeout):
            return _Aborted("timeout", str(exc), self.last_call)
        if isinstance(exc, WorkerCrashed):
            return _Aborted("crash", str(exc), self.last_call)
        if isinstance(exc, ProtocolError):
            return _Aborted("protocol", f"the grader could not read the reply from your code ({exc})", self.last_call)
        if isinstance(exc, SandboxUnavailable):
            return _Refused(exc)
        return exc

    def _guarded(self, call: str | tuple[str, tuple[Any, ...], dict[str, Any]], exchange: Callable[[], Any]) -> Any:
        self._last_call = call
        if time.monotonic() > self._deadline:
            raise self._over_budget()
        try:
            return exchange()
        except (CallTimeout, WorkerCrashed, ProtocolError, SandboxUnavailable) as exc:
            raise self._aborted(exc) from None


class Replies:
    """The calls of one :meth:`Student.batch`, taken one at a time in order (``len()``: how many).

    An iterator: ``next(replies)`` and ``for got in replies`` take the calls not yet taken.
    """

    def __init__(self, student: Student, calls: list[Call], stop_on_error: bool, return_errors: bool) -> None:
        self._student = student
        self._calls = calls
        self._stop_on_error = stop_on_error
        self._return_errors = return_errors
        self._outcomes: list[Outcome | None] = []
        self._next = 0

    def __len__(self) -> int:
        return len(self._calls)

    def __iter__(self) -> Replies:
        return self

    def __next__(self) -> Any:
        if self._next == len(self._calls):
            raise StopIteration
        return self.take()

    def take(self) -> Any:
        """The next call's value (a :class:`Watched` for a watched call), as :meth:`Student.call` gives it.

        Raises what that call would raise alone: its ``StudentError`` (returned instead
        under ``return_errors``), or the end of the property at it (timeout, crash,
        malformed reply, spent budget).

        Raises:
            IndexError: every call was taken already (a bug in the suite).
        """
        index = self._next
        if index == len(self._calls):
            raise IndexError(f"all {index} calls of this batch were taken")
        self._next += 1
        outcome = self._outcomes[index] if index < len(self._outcomes) else None
        if index == len(self._outcomes) or (isinstance(outcome, NotRun) and outcome.reason == "stopped"):
            # First taken, or after an error the check went on from (or a fatal ending it caught):
            # the rest goes now, as the next single call would.
            self._outcomes[index:] = self._student._send(self._calls[index:], self._stop_on_error)
        try:
            return self._student._taken(self._calls[index], self._outcomes[index])
        except StudentError as exc:
            if not self._return_errors:
                raise
            return exc


def _watched(reply: Any) -> Watched:
    """A watched call's reply (``protocol.Reply``) as a check reads it."""
    return Watched(reply.value, tuple(reply.args or ()), dict(reply.kwargs or {}), tuple(reply.warnings))


def expect_equal(
    inputs: Mapping[str, Any],
    expected: Any,
    got: Any,
    *,
    note: str = "",
    matches: Callable[[Any, Any], bool] = wire_equal,
) -> None:
    """Raise :class:`Mismatch` unless ``matches(roundtrip(expected), got)``.

    ``expected`` is passed through ``roundtrip`` first, so a reference
    dataclass compares with the student's ``Record`` and numpy types keep
    their dtypes.
    """
    wire_expected = roundtrip(expected)
    if not matches(wire_expected, got):
        raise Mismatch(inputs, wire_expected, got, note)


@contextlib.contextmanager
def _without_local_constants() -> Iterator[None]:
    """Stop hypothesis from mixing constants of locally imported modules into its examples.

    Hypothesis (>= 6.131) sometimes draws literals found in the source of
    "local" modules currently imported (anything outside site-packages and the
    standard library, e.g. an editable install of this package). The examples
    would then depend on which modules a process happened to import and on
    whether the grader is installed editable or as a wheel, and hypothesis
    would write a cache into the working directory (the course root). Grading
    must depend on the submission only, so during a property the pool of
    local constants is empty. The hook is internal to hypothesis (pinned in
    requirements/lock.txt); if it moves, this is a no-op and
    tests/autograder/test_verdicts.py fails.
    """
    providers = getattr(hypothesis.internal.conjecture, "providers", None)
    original = getattr(providers, "_get_local_constants", None)
    empty = getattr(providers, "Constants", None)
    if providers is None or original is None or empty is None:
        yield
        return
    nothing = empty()
    providers._get_local_constants = lambda: nothing
    try:
        yield
    finally:
        providers._get_local_constants = original


def _stable_seed(name: str) -> int:
    return int.from_bytes(hashlib.sha256(f"ch11-property:{name}".encode()).digest()[:8], "big")


def hypothesis_property(
    name: str,
    description: str,
    *,
    given: Mapping[str, SearchStrategy[Any]],
    max_examples: int = 100,
    examples: Sequence[Mapping[str, Any]] = (),
    misconceptions: Iterable[Misconception] = (),
    suppress_health_check: Iterable[HealthCheck] = (),
    matches: Callable[[Any, Any], bool] = wire_equal,
    time_budget: float = DEFAULT_TIME_BUDGET,
) -> Callable[[Callable[..., None]], Property]:
    """Decorator: a :class:`Property` from ``body(student, **drawn)`` run under ``@given``.

    Args:
        name, description, misconceptions, matches, time_budget: as for :class:`Property`.
        given: keyword name -> strategy; the body receives the drawn values.
        max_examples: generated examples (fixed: part of the grading contract).
        examples: explicit examples tried first (e.g. the chapter's pitfalls).
        suppress_health_check: health checks to silence besides ``too_slow``.

    The body raises :class:`Mismatch` (usually via :func:`expect_equal`).
    On failure hypothesis shrinks, and the failure reported is the minimal one.
    """
    strategies = dict(given)
    if "student" in strategies:
        raise ValueError(f"property {name}: 'student' is the body's first parameter, not a drawn value")
    explicit = [dict(example) for example in examples]
    for example in explicit:
        if set(example) != set(strategies):
            raise ValueError(f"property {name}: example {sorted(example)} must name exactly {sorted(strategies)}")
    suppressed = [HealthCheck.too_slow, *suppress_health_check]

    def decorate(body: Callable[..., None]) -> Property:
        def check(student: Student) -> None:
            def run_example(**drawn: Any) -> None:
                try:
                    body(student, **drawn)
                except Mismatch as exc:
                    if len(student.mismatches) < MAX_EVIDENCE:
                        student.mismatches.append(exc)
                    raise
                except StudentError as exc:
                    raise _Raised(drawn, exc, student.last_call) from None
                except _Aborted as exc:
                    exc.inputs = dict(drawn)
                    raise

            test = hypothesis.given(**strategies)(run_example)
            for example in reversed(explicit):
                test = hypothesis.example(**example)(test)
            test = hypothesis.settings(
                derandomize=True,
                database=None,
                deadline=None,
                max_examples=max_examples,
                phases=(Phase.explicit, Phase.generate, Phase.shrink),
                suppress_health_check=suppressed,
                report_multiple_bugs=False,
                verbosity=Verbosity.quiet,
                print_blob=False,
            )(test)
            test = hypothesis.seed(_stable_seed(name))(test)
            with _without_local_constants():
                test()

        return Property(
            name=name,
            description=description,
            check=check,
            misconceptions=tuple(misconceptions),
            matches=matches,
            time_budget=time_budget,
            probe_inputs=lambda: [*explicit, *_draw(strategies, name, PROBE_POOL)],
        )

    return decorate


def _draw(strategies: Mapping[str, SearchStrategy[Any]], name: str, count: int) -> list[dict[str, Any]]:
    """``count`` inputs drawn from ``strategies``, the same ones every time for the same ``name``."""
    drawn: list[dict[str, Any]] = []

    @hypothesis.settings(
        derandomize=True,
        database=None,
        deadline=None,
        max_examples=count,
        phases=(Phase.generate,),
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
    )
    @hypothesis.seed(_stable_seed("probe:" + name))
    @hypothesis.given(**strategies)
    def collect(**values: Any) -> None:
        drawn.append(values)

    with _without_local_constants():
        collect()
    return drawn


def _failed_cells_hint(report: Sequence[CellOutcome]) -> str:
    failed = [c for c in report if c.status == "error"]
    if not failed:
        return ""
    first = failed[0]
    where = f" at {first.where}" if first.where else ""
    more = f" (and {len(failed) - 1} more cells)" if len(failed) > 1 else ""
    return (
        f" When the grader ran your notebook, a cell raised {first.error_type}: {first.message}{where}{more}; "
        "definitions after that point in the cell were not made."
    )


def _student_failure(prop: Property, error: StudentError, inputs: Mapping[str, Any], call: str, hint: str) -> Failure:
    if isinstance(error, NotDefined):
        detail = f"{error}.{hint}"
    elif isinstance(error, Unencodable):
        detail = str(error)
    else:
        detail = f"your code raised {error}"
        return Failure(prop.name, prop.description, "error", inputs=inputs, detail=detail, call=call,
                       raised=error.type, where=error.where)
    return Failure(prop.name, prop.description, "error", inputs=inputs, detail=detail, call=call)


def _find(exc: BaseException, kinds: tuple[type[BaseException], ...]) -> BaseException | None:
    if isinstance(exc, kinds):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _find(inner, kinds)
            if found is not None:
                return found
    context = exc.__cause__ or exc.__context__
    if context is not None and context is not exc and isinstance(context, kinds):
        return context
    return None


def _predicts(prop: Property, wrong: Misconception, inputs: Mapping[str, Any], got: Any) -> bool:
    ran, output = _output(wrong, inputs)
    if isinstance(output, Mismatch):  # the entry's whole failure: the same inputs, then the same value
        if not same_inputs(output.inputs, inputs):
            return False
        output = output.got
    try:
        return ran and bool(prop.matches(output, got))
    except Exception:  # outputs the property's matcher cannot compare do not match
        return False


def _same_output(prop: Property, first: Any, second: Any) -> bool:
    """Two misconceptions' outputs agree: the same value, or the same failure (inputs and value)."""
    if isinstance(first, Mismatch) or isinstance(second, Mismatch):
        if not (isinstance(first, Mismatch) and isinstance(second, Mismatch)):
            return False
        if not same_inputs(first.inputs, second.inputs):
            return False
        first, second = first.got, second.got
    return bool(prop.matches(first, second))


def _explains(prop: Property, wrong: Misconception, mismatch: Mismatch) -> bool:
    return _predicts(prop, wrong, mismatch.inputs, mismatch.got)


def _output(wrong: Misconception, inputs: Mapping[str, Any]) -> tuple[bool, Any]:
    """``(True, output)`` of ``wrong`` on ``inputs``, or ``(False, None)`` when it cannot run on them.

    The entry runs on copies: an entry whose mistake is to change its argument (emptying
    the caller's list) must not change the inputs the feedback shows or the next one sees.
    """
    try:
        output = wrong.implementation(**copy.deepcopy(dict(inputs)))
        if isinstance(output, Mismatch):
            return True, Mismatch(output.inputs, output.expected, roundtrip(output.got), output.note)
        return True, roundtrip(output)
    except Exception:  # a catalogue entry that cannot run on these inputs does not explain them
        return False, None


def _separating(
    prop: Property, first: Misconception, second: Misconception, pool: Sequence[Mapping[str, Any]], limit: int
) -> list[Mapping[str, Any]]:
    """Up to ``limit`` inputs of ``pool`` on which ``first`` and ``second`` both run and disagree."""
    found = []
    for inputs in pool:
        ran_first, out_first = _output(first, inputs)
        ran_second, out_second = _output(second, inputs)
        if ran_first and ran_second and not _same_output(prop, out_first, out_second):
            found.append(inputs)
            if len(found) == limit:
                break
    return found


def name_misconception(
    prop: Property, evidence: Sequence[Mismatch], student: Student | None = None
) -> Misconception | None:
    """The catalogued mistake the failing examples show, if it is the only explanation; else ``None``.

    A candidate must reproduce the student's output on every failing example seen
    (``evidence``, the reported one first): that rules out every misconception that
    disagrees with the student somewhere, and an uncatalogued mistake shows as no
    candidate at all. Agreeing there is not enough when two mistakes agree on every
    example the search happened to try (``3 * x`` and ``x + 2`` at ``x = 1``): then each
    other candidate is set against it on up to :data:`PROBES_PER_RIVAL` inputs, drawn by
    the property, where the two disagree, and the student's code must answer as the one
    named does there. A rival that cannot be told apart on the drawn inputs, or a
    candidate that cannot be probed (no ``function``, no ``student``, or a property that
    draws no inputs), leaves the failure ambiguous: nothing is named. Candidates are tried
    in order; one the student's code contradicts gives way to the next.
    """
    candidates = [w for w in prop.misconceptions if all(_explains(prop, w, example) for example in evidence)]
    if len(candidates) <= 1:
        return candidates[0] if candidates else None
    if student is None or prop.probe_inputs is None or not all(w.function for w in candidates):
        return None
    pool = prop.probe_inputs()
    for wrong in candidates:
        if _agrees_where_rivals_differ(prop, wrong, candidates, pool, student):
            return wrong
    return None


def _agrees_where_rivals_differ(
    prop: Property,
    wrong: Misconception,
    candidates: Sequence[Misconception],
    pool: Sequence[Mapping[str, Any]],
    student: Student,
) -> bool:
    for rival in candidates:
        if rival is wrong:
            continue
        probes = _separating(prop, wrong, rival, pool, PROBES_PER_RIVAL)
        if not probes:
            return False  # the same output everywhere we can look: either could be the student's
        for inputs in probes:
            if not _student_agrees(prop, wrong, inputs, student):
                return False
    return True


def _student_agrees(prop: Property, wrong: Misconception, inputs: Mapping[str, Any], student: Student) -> bool:
    try:
        # Positional where the stub's signature allows: the student may have renamed a parameter.
        bound = inspect.signature(wrong.implementation).bind(**inputs)
        got = student.call(wrong.function, *bound.args, **bound.kwargs)
    except (TypeError, ValueError, StudentError, _Aborted):
        return False
    return _predicts(prop, wrong, inputs, got)


def _mismatch_failure(
    prop: Property,
    mismatch: Mismatch,
    note: str = "",
    evidence: Sequence[Mismatch] = (),
    student: Student | None = None,
) -> Failure:
    """The failure for ``mismatch``, naming a misconception only when it is the only explanation.

    See :func:`name_misconception`: the reported counterexample and every other failing
    example seen while searching (``evidence``) must agree with it, and, where the student's
    code can be probed, so must the inputs that tell it apart from the other misconceptions.
    """
    wrong = name_misconception(prop, [mismatch, *evidence], student)
    name, advice = (wrong.name, wrong.advice) if wrong is not None else ("", "")
    notes = " ".join(text for text in (mismatch.note, note) if text)
    return Failure(
        prop.name,
        prop.description,
        "mismatch",
        inputs=mismatch.inputs,
        expected=mismatch.expected,
        got=mismatch.got,
        note=notes,
        misconception=name,
        advice=advice,
    )


_FLAKY_NOTE = (
    "This failure did not repeat when the same inputs were tried again: "
    "your function may depend on hidden state or randomness."
)


def run_property(prop: Property, session: Session, logger: logging.Logger | None = None) -> Failure | None:
    """Check one property against the student's code; ``None`` when it holds.

    ``logger`` receives the traceback of a suite bug (default: this module's logger).

    Raises:
        SandboxUnavailable: the sandbox refused to start the worker; nothing may
            be scored (the caller, and nbgrader, report the submission as failed).
    """
    student = Student(session, prop.time_budget)
    hint = ""
    try:
        prop.check(student)
    except _Refused as exc:
        raise exc.error from None
    except _Aborted as exc:
        return Failure(prop.name, prop.description, exc.kind, inputs=exc.inputs, detail=exc.detail, call=exc.call)
    except Mismatch as exc:
        return _mismatch_failure(prop, exc, evidence=student.mismatches, student=student)
    except _Raised as exc:
        hint = _failed_cells_hint(session.report)
        return _student_failure(prop, exc.error, exc.inputs, exc.call, hint)
    except StudentError as exc:
        hint = _failed_cells_hint(session.report)
        return _student_failure(prop, exc, {}, student.last_call, hint)
    except Flaky as exc:
        found = _find(exc, (Mismatch, _Raised))
        if isinstance(found, Mismatch):
            return _mismatch_failure(prop, found, _FLAKY_NOTE, student.mismatches, student)
        if isinstance(found, _Raised):
            failure = _student_failure(prop, found.error, found.inputs, found.call, "")
            return dataclasses.replace(failure, note=_FLAKY_NOTE)
        return _internal_failure(prop, exc, logger or log)
    except Exception as exc:
        return _internal_failure(prop, exc, logger or log)
    return None


def _internal_failure(prop: Property, exc: BaseException, logger: logging.Logger) -> Failure:
    logger.error("property %s raised an unexpected error (a bug in the suite)", prop.name, exc_info=exc)
    return Failure(
        prop.name,
        prop.description,
        "internal",
        detail="the grader could not check this property because of a problem on its side; "
        "your instructor has been notified",
    )


#: The property that stands for a test cell's visible checks, run verbatim in the worker.
VISIBLE_CHECKS = "visible_checks"
VISIBLE_CHECKS_DESCRIPTION = "the checks shown in this cell of the notebook pass when run as written."


def visible_checks_failure(outcome: CellOutcome) -> Failure | None:
    """The failure of a cell's visible checks, from how the worker ran them (``None``: they passed)."""
    if outcome.status != "error":
        return None
    where = f" ({outcome.where})" if outcome.where else ""
    detail = f"{outcome.error_type}: {outcome.message}{where}" if outcome.message else f"{outcome.error_type}{where}"
    return Failure(property=VISIBLE_CHECKS, description=VISIBLE_CHECKS_DESCRIPTION, kind="error", detail=detail,
                   raised=outcome.error_type, where=outcome.where)


def run_suite(
    suite: CellSuite,
    session: Session,
    points: float | None = None,
    logger: logging.Logger | None = None,
    *,
    visible: CellOutcome | None = None,
) -> CellVerdict:
    """Run every property of ``suite`` in order and return the cell's verdict.

    Args:
        points: the cell's points from the gradebook; must equal ``suite.points``
            when given (a mismatch is a configuration error).
        logger: receives tracebacks of suite bugs.
        visible: how the worker ran the cell's visible checks (see
            ``submission_cells.worker_cells``). When they raised, they count as one more
            property of the cell, :data:`VISIBLE_CHECKS`, listed first and failed, so the
            cell cannot score full marks. When they passed, nothing is added: passing the
            notebook's own checks is the floor every answer stands on, and the properties'
            weights (the scoring a docstring may promise, such as one point per mark) stay
            as they are. ``None`` (no visible checks, or the worker never ran the cells,
            in which case every property fails anyway): nothing is added either.

    Raises:
        ValueError: ``points`` disagrees with the suite.
    """
    if points is not None and float(points) != suite.points:
        raise ValueError(
            f"suite {suite.grade_id} declares {suite.points:g} points but the notebook cell has {float(points):g}"
        )
    descriptions = [(p.name, p.description) for p in suite.properties]
    failures = []
    failure = visible_checks_failure(visible) if visible is not None else None
    if failure is not None:
        descriptions.insert(0, (VISIBLE_CHECKS, VISIBLE_CHECKS_DESCRIPTION))
        failures.append(failure)
    for prop in suite.properties:
        failure = run_property(prop, session, logger)
        if failure is not None:
            failures.append(failure)
    return CellVerdict.from_results(suite.grade_id, suite.points, descriptions, failures)
