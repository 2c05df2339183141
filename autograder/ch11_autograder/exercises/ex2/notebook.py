"""Exercise 2: a binary32 finite-difference check of the opening gradient (chapter 11, Eq. 11.1)."""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable, Sequence

import numpy as np
from ch11_solutions import ex2_finite_difference as ref

from ..cells import answer, manual_answer, prose, readonly_code, solution_from, tests
from .contract import (
    ESTIMATE_CELL,
    ESTIMATE_TESTS,
    FIGURE,
    GRADED_HIGH,
    GRADED_K_MAX,
    GRADED_LOW,
    GRADIENT_CELL,
    GRADIENT_TESTS,
    INTERPRETATION,
    POINTS,
    SWEEP_CELL,
    SWEEP_TESTS,
    TOLERANCE_EXPONENT,
)

# Module-level names of the reference shown read-only: the choice types of the
# signatures and the limits the input checks use.
_CONTRACT_NAMES = ("Scheme", "Variable", "_SCHEMES", "_VARIABLES", "_F32", "_K_MAX")

_BEGIN = "### BEGIN SOLUTION"

# GENERIC_POINT is shown with a short comment of its own: the reference's comment
# states the measured optima and why (2, 3) misleads, which Task 5 asks students to find.
_GENERIC_POINT_SOURCE = '''
#: A generic point: 2.1 and 2.9 are not dyadic, so their float32 values carry full
#: 24-bit significands and rounding errors do not cancel by accident. Sweep here.
GENERIC_POINT: tuple[np.float32, np.float32] = (np.float32(2.1), np.float32(2.9))
'''


def _module_statements(names: Sequence[str]) -> str:
    """The reference's module-level assignments of ``names``, with the comments directly above them."""
    source = inspect.getsource(ref)
    lines = source.splitlines()
    chunks: list[str] = []
    for statement in ast.parse(source).body:
        if isinstance(statement, ast.Assign):
            targets = statement.targets
        elif isinstance(statement, ast.AnnAssign):
            targets = [statement.target]
        else:
            continue
        bound = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        if not bound & set(names):
            continue
        start = statement.lineno - 1
        while start > 0 and lines[start - 1].lstrip().startswith("#"):
            start -= 1
        chunks.append("\n".join(lines[start : statement.end_lineno]))
    if len(chunks) != len(names):
        raise RuntimeError(f"expected {len(names)} statements for {names} in the reference, found {len(chunks)}")
    return "\n".join(chunks)


def _sources(objects: Sequence[Callable]) -> str:
    return "\n\n\n".join(textwrap.dedent(inspect.getsource(o)).strip() for o in objects)


def _with_nested_helpers(function: Callable, helpers: Sequence[Callable]) -> str:
    """``function``'s answer source with ``helpers`` defined inside its own solution region.

    A top-level solution region of helpers would be released as a bare
    ``raise NotImplementedError()`` before the ``def`` and stop the untouched
    stub from running; nested, the released cell is the signature, the
    docstring and one stub body, while the source notebook runs the reference
    code verbatim.
    """
    source = solution_from([function])
    marker = f"    {_BEGIN}\n"
    if source.count(marker) != 1:
        raise ValueError(f"expected exactly one solution region in {function.__name__}")
    nested = textwrap.indent(_sources(helpers), "    ")
    return source.replace(marker, marker + nested + "\n\n", 1)


def _check_generic_point() -> None:
    namespace: dict = {"np": np}
    exec(_GENERIC_POINT_SOURCE, namespace)
    shown, want = namespace["GENERIC_POINT"], ref.GENERIC_POINT
    if [v.tobytes() for v in shown] != [v.tobytes() for v in want]:
        raise RuntimeError(f"the notebook's GENERIC_POINT {shown} is not the reference's {want}")


def cells() -> list:
    _check_generic_point()
    return [
        prose(
            "ex2-statement",
            r"""
            # Exercise 2 · A binary32 finite-difference check

            > *(Code.)* Implement a finite-difference check of the opening gradient in binary32.
            > Sweep the perturbation over powers of two and separate truncation error from
            > cancellation.

            The opening computation of the chapter,

            $$a=xy,\qquad b=a+x,\qquad c=ay,\qquad L=bc, \tag{11.1}$$

            has the gradient $(144, 132)$ at $(2, 3)$, which one reverse sweep delivers. A
            finite-difference check perturbs one input by a step $h$ and divides the change of
            $L$ by the step:

            $$\text{forward:}\ \ \frac{L(x+h, y) - L(x, y)}{h},\qquad
              \text{central:}\ \ \frac{L(x+h, y) - L(x-h, y)}{2h}.$$

            Section 11.6 warns that this "pays cancellation". In binary32 (unit roundoff
            $u = 2^{-24}$) the estimate carries two different errors:

            * **truncation**: even in exact arithmetic the quotient over two points is not the
              derivative. Forward: about $\tfrac h2 |L''|$; central: about $\tfrac{h^2}{6}|L'''|$.
              It shrinks as $h$ shrinks.
            * **rounding (cancellation)**: the two values of $L$ are rounded to binary32, each
              off by about $u|L|$, and they agree in their leading digits; the subtraction keeps
              only their rounding errors' difference and the division by $h$ magnifies it:
              about $u|L|/h$. It grows as $h$ shrinks.

            You will sweep $h = 2^{-k}$ and measure both parts separately, exactly, against the
            exact derivative.

            **The binary32 contract.** The harness evaluates Equation 11.1 in a declared format,
            always in the order $a, b, c, L$: `opening_objective(x, y, dtype=np.float32)`.
            Everything in your estimate must be one float32 operation after another. Under NumPy 2
            a single `np.float64` value (or an array created without `dtype=np.float32`) silently
            turns the whole computation into float64; a Python `float` constant does not (it
            adapts to the float32 operand), but a Python-float *input* that you never convert
            does. Check `.dtype` as you go.

            **The step actually applied.** In float32, `np.float32(2) + np.float32(2**-23)` rounds
            back to `2`: the nominal step $h$ is not always the step between the two evaluation
            points. The contract divides by the applied step, $h_\text{eff} = \mathrm{fl}(x+h) - x$
            (forward) or $\mathrm{fl}(x+h) - \mathrm{fl}(x-h)$ (central).
            """,
        ),
        readonly_code(
            "ex2-imports",
            """
            import math
            import numbers
            import operator
            import warnings
            from collections.abc import Iterable
            from dataclasses import dataclass
            from fractions import Fraction
            from typing import Literal

            import matplotlib.pyplot as plt
            import numpy as np

            from trainable_harness import opening_objective, opening_objective_exact, opening_tape, reverse_accumulate
            """,
        ),
        prose(
            "ex2-provided",
            """
            ## Provided: the contract's choices, input checks and the generic point

            Run the next cells; do not change them. The first fixes the choice types the
            signatures use and the input checks the docstrings ask for (use them, so that bad
            arguments raise what the contracts say). The second is the point to sweep at and the
            model's optimal exponents ($h = 2^{-12}$ forward, $2^{-8}$ central), which your figure
            marks. The third is the record your sweep returns.
            """,
        ),
        readonly_code(
            "ex2-contract",
            _module_statements(_CONTRACT_NAMES)
            + "\n\n\n"
            + _sources([ref._check_k, ref._check_choice, ref._to_float32, ref._exact]),
        ),
        readonly_code(
            "ex2-generic-point",
            _GENERIC_POINT_SOURCE.strip() + "\n\n\n" + _sources([ref.model_optimal_k]),
        ),
        readonly_code("ex2-fdsweep", inspect.getsource(ref.FDSweep)),
        prose(
            "ex2-task1",
            rf"""
            ## Task 1 · The gradient under check

            A check needs the truth. Return $(\partial L/\partial x, \partial L/\partial y)$ at the
            exact binary values of the inputs: pass `np.float32` values to get the gradient at the
            point a binary32 sweep actually uses ($2.1$ is not a float32; `np.float32(2.1)` is).

            `exact_partial` (a `Fraction`) is for your own use in Task 3; the grader checks that it
            returns a `Fraction` and raises as its docstring says, and checks the values through
            `exact_gradient`. The contract asks for the exact value rounded once; the grader
            accepts any value within a relative $2^{{-{TOLERANCE_EXPONENT}}}$ of it per component, so the chapter's
            reverse sweep in float64 (`reverse_accumulate(opening_tape(x, y))`, after the input
            checks) passes, while a sweep in float32 (relative error near $2^{{-24}}$) does not. The
            grader calls it at points with $0.25 \le x, y \le 8$, float32 values and others, Python
            and numpy floats and ints, several times in a row, and with bad arguments, and once at
            $(10^{{39}}, 2)$, a finite real beyond float32. It never calls where a component of the
            gradient is beyond the float64 range, such as $(10^{{308}}, 10^{{308}})$: the contract
            promises nothing there (raising `OverflowError`, as `float` of a huge `Fraction` does,
            and returning `inf` are both fine).
            """,
        ),
        answer(GRADIENT_CELL, solution_from([ref.exact_partial, ref.exact_gradient])),
        tests(
            GRADIENT_TESTS,
            POINTS[GRADIENT_TESTS],
            """
            gradient = exact_gradient(2.0, 3.0)
            assert isinstance(gradient, np.ndarray) and gradient.dtype == np.float64 and gradient.shape == (2,), f"return a float64 array of shape (2,), got {gradient!r}"
            assert gradient.tolist() == [144.0, 132.0], f"at (2, 3) the gradient is [144, 132], got {gradient.tolist()}"
            generic = exact_gradient(*GENERIC_POINT)
            want = np.array([137.75580617294293, 136.842295730209])
            assert np.allclose(generic, want, rtol=2.0**-TOLERANCE_EXPONENT, atol=0.0), f"at GENERIC_POINT (float32 2.1, 2.9) expected {want.tolist()}, got {generic.tolist()}; did you round the point or the arithmetic to float32?"
            print("visible checks passed")
            """.replace("TOLERANCE_EXPONENT", str(TOLERANCE_EXPONENT)),
        ),
        prose(
            "ex2-task2",
            rf"""
            ## Task 2 · One binary32 estimate

            Implement the estimate exactly as the docstring orders the operations: the grader
            compares the **bits** of your float32 result with the contract's, so the order is not
            a matter of taste, and the harness fixes the order inside $L$. Return an
            `np.float32` scalar, `nan` where the applied step is zero. Where the contract gives
            `nan`, any NaN passes: its sign and payload bits are not compared
            (`np.float32(np.nan)` and a float32 `0/0` are both right).

            The grader calls it at float32 points with ${GRADED_LOW:g} \le x, y \le {GRADED_HIGH:g}$
            (and at points such as 2.1 that are rounded first, numpy values and ints), with
            $1 \le k \le {GRADED_K_MAX}$ (Python or numpy integers; also the range's ends 0 and 149),
            both schemes and both inputs, mostly where a step rounds, with `scheme` and `wrt` left
            out, several times in a row, and with bad arguments, which must raise what the
            docstring says. It also calls it at a few points where $L$ overflows float32 (such as
            $x = 1$, $y = 6 \cdot 10^{{12}}$), where the same float32 operations give `inf`, `-inf` or
            `nan`, and checks that no call emits a warning, there or where the step vanishes.
            """,
        ),
        answer(ESTIMATE_CELL, _with_nested_helpers(ref.fd_estimate, [ref._step, ref._points])),
        tests(
            ESTIMATE_TESTS,
            POINTS[ESTIMATE_TESTS],
            """
            est = fd_estimate(*GENERIC_POINT, 12)
            assert isinstance(est, np.float32), f"return an np.float32 scalar, got {type(est).__name__} {est!r}: is a float64 value mixed in?"
            dyadic = fd_estimate(2.0, 3.0, 12)
            assert dyadic == np.float32(144.0), f"at (2, 3), k = 12 the binary32 forward quotient in x is exactly 144.0, got {dyadic!r}; 144.0087890625 means float64 arithmetic"
            assert np.isnan(fd_estimate(2.0, 3.0, 23)), "float32(2) + 2**-23 rounds back to 2: the applied step is 0 and the contract returns nan"
            rounded = fd_estimate(2.2, 3.0, 23)
            assert rounded == np.float32(128.0), f"at x = float32(2.2), k = 23 the sum x + h rounds up to x + 2**-22: divide by that applied step; expected 128.0, got {rounded!r}"
            central = fd_estimate(*GENERIC_POINT, 7, scheme="central", wrt="y")
            assert central == np.float32(136.84277), f"central quotient in y at GENERIC_POINT, k = 7: expected 136.84277, got {central!r}"
            forward_y = fd_estimate(*GENERIC_POINT, 11, scheme="forward", wrt="y")
            assert forward_y == np.float32(136.8125), f"forward quotient in y at GENERIC_POINT, k = 11: expected 136.8125, got {forward_y!r}"
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # the contract promises no warning
                overflowed = fd_estimate(1.0, 6e12, 1)
            assert overflowed == np.float32(np.inf), f"L(1.5, 6e12) overflows float32 and L(1, 6e12) does not: the float32 operations give inf, got {overflowed!r}"
            print("visible checks passed")
            """,
        ),
        prose(
            "ex2-task3",
            rf"""
            ## Task 3 · The sweep, split into truncation and rounding

            For each $k$, let $Q$ be the difference quotient over the **same two float32 evaluation
            points** your estimate used, computed exactly: `opening_objective_exact` evaluates $L$
            in rational arithmetic on the float32 values, and $Q$ divides their difference by the
            distance of the two points, taken exactly too. Wherever the grader sweeps, that distance
            is the float32 `h_eff` itself, so dividing by `Fraction(float(h_eff))` gives the same $Q$.
            Then

            * truncation error $= |Q - \partial L|$: the error of the formula;
            * rounding error $= |\text{{estimate}} - Q|$: what binary32 evaluation added;
            * total error $= |\text{{estimate}} - \partial L|$, at most their sum.

            `best_k` is the $k$ of the smallest total error, ties to the smallest $k$, never a
            `nan`. Fill in an `FDSweep` with the dtypes its docstring states.

            **How the grader compares.** `x, y, scheme, wrt, ks, h, h_eff, estimate` must match exactly
            (bits, dtypes; any NaN where the contract has `nan`); `best_k` must be the same $k$, as an
            `int` or a numpy integer (both earn the points), or `None`. The three errors and
            `exact` may come from float64 arithmetic instead of fractions: each may differ from the
            exact value rounded once by at most $2^{{-{TOLERANCE_EXPONENT}}}\,(\max|L|/h_\text{{eff}} + |\partial L|)$,
            with $\max|L|$ over the two evaluation points (and `exact`, a `float` or a `np.float64`, by a
            relative $2^{{-{TOLERANCE_EXPONENT}}}$).
            That is over a hundred times what float64 evaluation of $Q$ can be off by, and about a
            million times less than a quotient evaluated in float32 is off by: float32 cannot see
            the truncation error under its own rounding. Points and steps are as in Task 2, but only
            where the applied step is exact, so that `h_eff` is the distance of the two points: with
            $h \le$ the perturbed input for the forward scheme and $3h \le$ it for the central one
            (no $k = 0$ below 1: at $x$ = `np.float32(0.9299478)`, $k = 0$, forward, `h_eff` is 1.0
            while the points are $1 + 2^{{-24}}$ apart), and at the overflowing points of Task 2,
            where an estimate of `inf` or `-inf` has total and rounding errors `inf`. `ks` comes as a list, a tuple, a range, a generator (read it
            once) or a numpy array, or is left out with the other defaults.
            """,
        ),
        answer(
            SWEEP_CELL,
            _with_nested_helpers(ref.fd_sweep, [ref._step, ref._points, ref._best_k, ref._abs_float]),
        ),
        tests(
            SWEEP_TESTS,
            POINTS[SWEEP_TESTS],
            """
            sweep = fd_sweep(*GENERIC_POINT, range(1, 25), scheme="forward", wrt="x")
            assert isinstance(sweep, FDSweep), f"return an FDSweep, not {type(sweep).__name__}"
            for name, dtype in [("ks", np.int64), ("h", np.float32), ("h_eff", np.float32), ("estimate", np.float32),
                                ("total_error", np.float64), ("truncation_error", np.float64), ("rounding_error", np.float64)]:
                field = getattr(sweep, name)
                assert isinstance(field, np.ndarray) and field.dtype == dtype and field.shape == (24,), f"{name} must be a {np.dtype(dtype)} array of shape (24,), got {field!r}"
            assert sweep.best_k == 10, f"forward in x at GENERIC_POINT: the smallest total error is at k = 10, got best_k = {sweep.best_k}"
            ok = ~np.isnan(sweep.total_error)
            assert (sweep.total_error[ok] <= (sweep.truncation_error[ok] + sweep.rounding_error[ok]) * (1 + 2.0**-40)).all(), "total error must not exceed truncation + rounding (triangle inequality)"
            central = fd_sweep(*GENERIC_POINT, scheme="central", wrt="y")
            assert central.best_k == 7, f"central in y at GENERIC_POINT: expected best_k = 7, got {central.best_k}"
            dyadic = fd_sweep(2.0, 3.0, range(1, 25))
            assert dyadic.total_error[11] == 0.0 and dyadic.truncation_error[11] == 36 * 2.0**-12, f"at (2, 3), k = 12 the formula's error is 36 h = 36 * 2**-12 while the binary32 total error is 0; got truncation {dyadic.truncation_error[11]!r}, total {dyadic.total_error[11]!r}"
            assert dyadic.rounding_error[11] == 36 * 2.0**-12, f"at (2, 3), k = 12 rounding cancelled the truncation exactly: rounding error 36 * 2**-12, got {dyadic.rounding_error[11]!r}"
            assert dyadic.best_k == 12, f"at (2, 3) the total error is 0 for k = 12..20; ties go to the smallest k; got best_k = {dyadic.best_k}"
            assert np.isnan(dyadic.total_error[22]) and dyadic.h_eff[22] == 0, "at x = 2, k = 23 the step vanishes: h_eff 0, errors nan"
            print("visible checks passed")
            """,
        ),
        prose(
            "ex2-task4",
            r"""
            ## Task 4 · The figure

            Plot the error against $h$ on log-log axes for $k = 1, \dots, 24$: the total error
            together with its truncation and rounding parts, for the forward and the central
            scheme at `GENERIC_POINT`, and mark the model optima from `model_optimal_k` and the
            measured `best_k`. Perturb $y$: $L$ is only quadratic in $x$, so a central sweep in $x$
            has no truncation error to show. Add a panel with the forward sweep in $x$ at $(2, 3)$
            next to the same sweep at `GENERIC_POINT`. Zero errors have no place on a log axis:
            mark them separately.
            """,
        ),
        answer(
            FIGURE,
            r"""
            ### BEGIN SOLUTION
            ks = range(1, 25)
            colours = {"total": "#232D4B", "truncation": "#E57200", "rounding": "#5B8C5A"}
            fig, axes = plt.subplots(1, 3, figsize=(15, 5.2), sharey=True)


            def positive(errors):
                return np.where(errors > 0, errors, np.nan)  # a log axis has no place for 0: marked apart


            def draw_parts(axis, sweep, title):
                h = sweep.h.astype(np.float64)
                axis.plot(h, positive(sweep.total_error), marker="o", markersize=4, linewidth=4, alpha=0.35,
                          color=colours["total"], label="total error")
                axis.plot(h, positive(sweep.truncation_error), linewidth=1.5, color=colours["truncation"],
                          label="truncation error (exact $Q$ vs $\\partial L$)")
                axis.plot(h, positive(sweep.rounding_error), linewidth=1.5, color=colours["rounding"],
                          label="rounding error (binary32 vs exact $Q$)")
                model_k = model_optimal_k(sweep.scheme)
                axis.axvline(2.0**-model_k, color="#6b6b6b", linestyle=":", label=f"model optimum $h = 2^{{-{model_k:g}}}$")
                best = list(sweep.ks).index(sweep.best_k)
                axis.scatter([h[best]], [sweep.total_error[best]], s=140, marker="*", color="#9C2F2F", zorder=5,
                             label=f"measured best $k = {sweep.best_k}$")
                axis.set(xscale="log", yscale="log", xlabel="perturbation $h = 2^{-k}$", title=title)


            forward = fd_sweep(*GENERIC_POINT, ks, scheme="forward", wrt="y")
            central = fd_sweep(*GENERIC_POINT, ks, scheme="central", wrt="y")
            draw_parts(axes[0], forward, "forward in $y$ at (2.1, 2.9)")
            draw_parts(axes[1], central, "central in $y$ at (2.1, 2.9)")
            for axis, slope in ((axes[0], "+1"), (axes[1], "+2")):
                axis.text(0.97, 0.05, f"left arm: cancellation, slope $-1$\nright arm: truncation, slope ${slope}$",
                          transform=axis.transAxes, ha="right", fontsize=8, color="#444444")
            axes[0].set_ylabel("absolute error of the binary32 estimate")

            generic = fd_sweep(*GENERIC_POINT, ks, scheme="forward", wrt="x")
            dyadic = fd_sweep(2.0, 3.0, ks, scheme="forward", wrt="x")
            axis = axes[2]
            axis.plot(generic.h.astype(np.float64), positive(generic.total_error), marker="o", markersize=4,
                      color=colours["total"], label="total error at (2.1, 2.9)")
            axis.plot(dyadic.h.astype(np.float64), positive(dyadic.total_error), marker="s", markersize=4,
                      color="#9C2F2F", label="total error at (2, 3)")
            zero = dyadic.total_error == 0
            floor = 0.3 * np.nanmin(positive(np.concatenate([generic.total_error, dyadic.total_error])))
            axis.scatter(dyadic.h[zero].astype(np.float64), np.full(zero.sum(), floor), marker="v", color="#9C2F2F",
                         label=f"total error exactly 0 at (2, 3), k = {dyadic.ks[zero].min()}..{dyadic.ks[zero].max()}")
            axis.plot(dyadic.h.astype(np.float64), dyadic.truncation_error, color=colours["truncation"],
                      linewidth=1.5, label="truncation error at (2, 3): still $36h$")
            axis.axvline(2.0 ** -model_optimal_k("forward"), color="#6b6b6b", linestyle=":",
                         label="model optimum $h = 2^{-12}$")
            axis.set(xscale="log", yscale="log", xlabel="perturbation $h = 2^{-k}$",
                     title="forward in $x$: the dyadic point (2, 3) hides the V")
            for axis in axes:
                axis.grid(alpha=0.22)
                axis.legend(frameon=False, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
            plt.tight_layout()
            plt.show()
            ### END SOLUTION
            """,
        ),
        prose(
            "ex2-task5",
            r"""
            ## Task 5 · Reading the V

            In a short paragraph or a list, using your figure and your sweeps:

            1. Which arm of the V is truncation and which is cancellation? Give the slope of each
               arm on the log-log plot and say where the cancellation comes from.
            2. Why does the optimum sit near $h \approx u^{1/2}$ for the forward scheme and near
               $u^{1/3}$ for the central one? Compare with the measured `best_k` and say what shifts it.
            3. Why would a sweep at the chapter's point $(2, 3)$ mislead you? What does it show in
               $x$, and what is really happening to the truncation error there?
            4. Why did we perturb $y$ rather than $x$ for the central scheme?
            """,
        ),
        manual_answer(
            INTERPRETATION,
            POINTS[INTERPRETATION],
            r"""
            - (1 pt) The large-$h$ (small-$k$) arm is truncation: it follows the truncation part,
              slope $+1$ for forward ($\approx \tfrac h2|L_{vv}|$) and $+2$ for central
              ($\approx \tfrac{h^2}{6}|L_{vvv}|$). The small-$h$ (large-$k$) arm is rounding, slope
              $-1$: the two binary32 values of $L$ are each off by about $u|L|$ ($u=2^{-24}$) and
              agree in their leading digits, so the subtraction cancels them and leaves their
              rounding errors, which the division by $h$ magnifies: $\approx u|L|/h$. (Also accept:
              the rounding arm is a jagged staircase, not a smooth line; past $k\approx 22$ the
              step rounds or vanishes.)
            - (1 pt) Balancing the arms: forward $C h + u|L|/h$ is smallest at
              $h^* = \sqrt{u|L|/C} \propto u^{1/2} = 2^{-12}$; central $C h^2 + u|L|/h$ at
              $h^* = (u|L|/(2C))^{1/3} \propto u^{1/3} = 2^{-8}$. Measured at GENERIC_POINT: best
              $k$ = 10 (forward, $x$), 11 (forward, $y$), 7 (central, $y$), a few powers of two from
              12 and 8 because the constants ($|L|\approx 145$, $L_{xx}\approx 66$,
              $L_{yy}\approx 86$, $L_{yyy}\approx 26$) enter; the refined optima are $k \approx 10.4,
              10.6, 6.7$. Central reaches a smaller error (about $u^{2/3}$ vs $u^{1/2}$ relative).
            - (1 pt) At $(2,3)$ every value is dyadic: $L(2+h, 3) = 144 + 144h + 36h^2$ and binary32
              rounds away the $36h^2$ term exactly, so the rounding error is exactly minus the
              truncation error $36h$ and the total error is exactly 0 for $k = 12..20$: a flat floor
              with no optimum, which looks like a perfect derivative. The truncation error is still
              there ($36h$); the cancellation is accidental. A generic point is needed. (Also: at
              $k=23$ the step vanishes, $2 + 2^{-23}$ rounds to 2.)
            - (1 pt) $L = x^2(y^3+y^2)$ is quadratic in $x$, so the central quotient in $x$ over
              symmetric points is exact: no truncation arm, the error only grows as $h$ shrinks
              (best $k = 1$). $L$ is cubic in $y$, so a central sweep in $y$ shows the V.
            """,
        ),
    ]
