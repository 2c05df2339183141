"""Properties checked over hypothesis examples: :func:`hypothesis_property`, under fixed settings.

Hypothesis settings are fixed for grading: ``derandomize=True``, ``database=None``,
``deadline=None``, the property's ``max_examples``, phases explicit, generate and shrink,
``too_slow`` suppressed (it depends on the machine), one bug reported, and a seed derived from
the property name so that the same submission always meets the same examples. The same seed
draws the inputs the engine probes misconceptions with (``Property.probe_inputs``).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import hypothesis
import hypothesis.internal.conjecture.providers
from hypothesis import HealthCheck, Phase, Verbosity
from hypothesis.strategies import SearchStrategy

from ..protocol import wire_equal
from .cell_suite import DEFAULT_TIME_BUDGET, Property
from .mismatch import Misconception, Mismatch
from .student import Student, _Aborted
from .worker_errors import StudentError

__all__ = [
    "MAX_EVIDENCE",
    "PROBE_POOL",
    "hypothesis_property",
]

#: Failing examples kept per property as evidence for misconception matching.
MAX_EVIDENCE = 50
#: Inputs a property draws to look for ones that tell two misconceptions apart.
PROBE_POOL = 60


# The engine's own (suite.run_property catches it), never a suite's: private, as before it had a module.
class _Raised(Exception):
    """The student's code raised while checking a hypothesis example."""

    def __init__(self, inputs: Mapping[str, Any], error: StudentError, call: str) -> None:
        super().__init__(str(error))
        self.inputs = dict(inputs)
        self.error = error
        self.call = call


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
    tests/autograder/test_hypothesis_properties.py fails.
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


