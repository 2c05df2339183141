"""Running a suite: each property of a test cell checked against the student's code, and the cell's verdict.

This module (:func:`run_suite`, :func:`run_property`) and the modules it runs make the engine
behind the API hidden property suites are written against (``ch11_autograder.api.suite``):
``cell_suite`` (:class:`Property`, :class:`CellSuite`), ``mismatch`` (:class:`Mismatch`,
:class:`Misconception`, :func:`expect_equal`), ``student`` (:class:`Student`, the calls a check
makes), ``hypothesis_properties`` (:func:`hypothesis_property`) and ``misconception_naming``
(which catalogued mistake a failure is named after).

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
* Hypothesis settings are fixed for grading (``hypothesis_properties``), so that the same
  submission always meets the same examples.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from hypothesis.errors import Flaky

from ..protocol import CellOutcome
from ..textsafe import exception_text
from .cell_suite import CellSuite, Property
from .hypothesis_properties import _Raised
from .misconception_naming import confirm_names, mismatch_failure
from .mismatch import Mismatch
from .student import Session, Student, _Aborted, _Refused
from .verdicts import CellVerdict, Failure
from .worker_errors import NotDefined, StudentError, Unencodable

__all__ = [
    "VISIBLE_CHECKS",
    "run_property",
    "run_suite",
    "visible_checks_failure",
]

log = logging.getLogger(__name__)


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
        location = f" (at {error.where})" if error.where else ""
        detail = f"your code raised {exception_text(error.type, error.message)}{location}"
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
        made = student.made
        varies = student.answers_otherwise_again()
        student.made = made  # asked again as made: the call the failure is about
        failure = mismatch_failure(prop, exc, evidence=student.mismatches, student=student)
        return dataclasses.replace(failure, varies=True) if varies else failure
    except _Raised as exc:
        hint = _failed_cells_hint(session.report)
        return _student_failure(prop, exc.error, exc.inputs, exc.call, hint)
    except StudentError as exc:
        hint = _failed_cells_hint(session.report)
        return _student_failure(prop, exc, {}, student.last_call, hint)
    except Flaky as exc:
        found = _find(exc, (Mismatch, _Raised))
        if isinstance(found, Mismatch):  # the same inputs, another outcome: output that varies
            return dataclasses.replace(mismatch_failure(prop, found, _FLAKY_NOTE, student.mismatches, student),
                                       varies=True)
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
    detail = f"{exception_text(outcome.error_type, outcome.message)}{where}"
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
    return CellVerdict.from_results(suite.grade_id, suite.points, descriptions, confirm_names(suite, failures))
