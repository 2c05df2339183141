"""Exercise 1: a third child at the shared node (chapter sections 11.1 and 11.3)."""

from __future__ import annotations

import ast
import inspect
import warnings
from pathlib import Path

from ch11_solutions import ex1_fanout as ref

from ...paths import CHAPTER_LISTINGS
from ..cells import answer, manual_answer, prose, readonly_code, solution_from, tests
from .contract import (
    CONTRIBUTIONS_CELL,
    CONTRIBUTIONS_TESTS,
    DERIVATION,
    FIGURE,
    GRADIENT_CELL,
    GRADIENT_TESTS,
    POINTS,
    TAPE_CELL,
    TAPE_TESTS,
)

# Module-level names of the reference that the notebook shows read-only: the tape
# layout every answer and every check refers to.
_LAYOUT_NAMES = ("EXTENDED_NODE_NAMES", "_X", "_CHILDREN_OF_A")

# The chapter's runnable listings (paths.CHAPTER_LISTINGS) carry listing [4] of section 11.1,
# the defective sweep the figure runs on the extended tape, verbatim (tests/examples checks them
# by sha256), so the notebook takes the sweep's text from there. Nothing graded depends on it.
_SWEEP_NAME = "overwrite_shared_node"
#: The one line the notebook adds to the chapter's sweep: what it is, for a student reading it.
_SWEEP_DOCSTRING = '"""The chapter\'s named wrong answer: assignment instead of addition at one node."""'


def _chapter_sweep_source(listings: Path = CHAPTER_LISTINGS) -> str:
    """The chapter's ``overwrite_shared_node`` as the notebook shows it: its docstring added.

    Cut from ``listings`` (the top-level function of that name, from ``def`` through its last
    line) when the notebook is built, not when this module is imported: the exercises package is
    imported where there is no ``examples/`` (an installed wheel, the grading image).

    Raises:
        FileNotFoundError: ``listings`` does not exist (not run from a checkout).
        RuntimeError: ``listings`` does not define exactly one top-level ``overwrite_shared_node``.
    """
    source = listings.read_text(encoding="utf-8")
    with warnings.catch_warnings():
        # The listings keep the chapter's "$k=\sqrt{64}$" label verbatim, an invalid escape
        # that compiling reports (DeprecationWarning on 3.11, SyntaxWarning from 3.12).
        warnings.simplefilter("ignore", (DeprecationWarning, SyntaxWarning))
        tree = ast.parse(source, filename=str(listings))
    found = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == _SWEEP_NAME]
    if len(found) != 1:
        raise RuntimeError(f"expected one top-level {_SWEEP_NAME} in {listings}, found {len(found)}")
    sweep = found[0]
    lines = source.splitlines()
    # The docstring goes where the body starts, after however many lines the signature takes.
    header = lines[sweep.lineno - 1 : sweep.body[0].lineno - 1]
    body = lines[sweep.body[0].lineno - 1 : sweep.end_lineno]
    return "\n".join([*header, f"    {_SWEEP_DOCSTRING}", *body])


def _layout_source() -> str:
    """The tape-layout assignments of the reference module, with their comments, cut from its source."""
    source = inspect.getsource(ref)
    lines = source.splitlines()
    tree = ast.parse(source)
    chunks: list[str] = []
    for statement in tree.body:
        targets: list[ast.expr] = []
        if isinstance(statement, ast.Assign):
            targets = statement.targets
        elif isinstance(statement, ast.AnnAssign):
            targets = [statement.target]
        names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        if not names & set(_LAYOUT_NAMES):
            continue
        start = statement.lineno - 1
        # Keep the comment block directly above the statement: it explains the name.
        while start > 0 and lines[start - 1].lstrip().startswith("#"):
            start -= 1
        chunks.append("\n".join(lines[start : statement.end_lineno]))
    if len(chunks) != len(_LAYOUT_NAMES):
        raise RuntimeError(f"expected {len(_LAYOUT_NAMES)} layout statements in the reference, found {len(chunks)}")
    return "\n".join(chunks)


def cells() -> list:
    return [
        prose(
            "ex1-statement",
            r"""
            # Exercise 1 · A third child at the shared node

            > *(Pencil.)* Add a third child $d=a^2$ to Equation 11.1 and replace the objective by
            > $L=bc+d$. Compute all three contributions into $\bar a$ before computing the input
            > gradients.

            The opening computation of the chapter,

            $$a=xy,\qquad b=a+x,\qquad c=ay,\qquad L=bc \tag{11.1}$$

            has one fan-out node: $a$ feeds $b$ and $c$. At $(x, y) = (2, 3)$ the two paths pay
            $18$ and $24$ into the cotangent $\bar a$, and only their sum, $42$, gives the correct
            input gradient $(144, 132)$. A sweep that lets the last contribution overwrite the
            others returns $(90, 96)$, although every local derivative in it is right.

            The graph chain rule (Equation 11.3) says what a correct sweep computes at every node:

            $$\bar z_v = \sum_{w\in\operatorname{children}(v)} \bar z_w\,\frac{\partial z_w}{\partial z_v}.$$

            Each term is one **contribution**: the child's cotangent times the local derivative on
            the edge. In this exercise $a$ gets a third child:

            $$a=xy,\qquad b=a+x,\qquad c=ay,\qquad d=a^2,\qquad L=bc+d.$$

            Now three debts are owed to $a$, and $\bar a$ is complete only when all three are paid.
            """,
        ),
        prose(
            "ex1-task1",
            r"""
            ## Task 1 · By hand

            Work at $(x, y) = (2, 3)$, in this order:

            1. the forward values $a, b, c, d, L$;
            2. every local derivative on an edge of the graph ($\partial b/\partial a$,
               $\partial b/\partial x$, $\partial c/\partial a$, $\partial c/\partial y$,
               $\partial d/\partial a$, $\partial L/\partial b$, $\partial L/\partial c$,
               $\partial L/\partial d$, $\partial a/\partial x$, $\partial a/\partial y$);
            3. the cotangents $\bar L, \bar b, \bar c, \bar d$;
            4. the three contributions into $\bar a$, each written as a product
               (cotangent of the child) $\times$ (local derivative), and their sum $\bar a$;
            5. only then $\bar x$ and $\bar y$, each as a sum over the children of $x$ and of $y$.

            Write it in the next cell (Markdown; $\LaTeX$ is welcome). The code tasks below check
            your numbers.
            """,
        ),
        manual_answer(
            DERIVATION,
            POINTS[DERIVATION],
            r"""
            Forward at $(2,3)$: $a=6$, $b=8$, $c=18$, $d=36$, $L=8\cdot 18+36=180$.

            - (1 pt) Local derivatives: $\partial b/\partial a=1$, $\partial b/\partial x=1$,
              $\partial c/\partial a=y=3$, $\partial c/\partial y=a=6$, $\partial d/\partial a=2a=12$,
              $\partial L/\partial b=c=18$, $\partial L/\partial c=b=8$, $\partial L/\partial d=1$,
              $\partial a/\partial x=y=3$, $\partial a/\partial y=x=2$.
              (Deduct the point for $\partial d/\partial a = a$ or for swapped factors of $bc$.)
            - (1 pt) The three contributions as products of the child's cotangent and the local
              derivative: via $b$: $\bar b\cdot 1 = 18\cdot 1 = 18$; via $c$: $\bar c\cdot y = 8\cdot 3 = 24$;
              via $d$: $\bar d\cdot 2a = 1\cdot 12 = 12$ (with $\bar b=18$, $\bar c=8$, $\bar d=1$).
            - (1 pt) The sum $\bar a = 18+24+12 = 54$, formed **before** $\bar x,\bar y$ (no point if
              only one or two contributions are carried into $\bar a$, i.e. last writer wins or a lost path).
            - (1 pt) $\bar x = \bar a\cdot y + \bar b\cdot 1 = 162 + 18 = 180$ and
              $\bar y = \bar a\cdot x + \bar c\cdot a = 108 + 48 = 156$. Both the path through $a$ and the
              direct edge ($x\to b$, $y\to c$) must appear. Check: $L = x^2y^3 + 2x^2y^2$ gives
              $\partial L/\partial x = 2xy^3+4xy^2 = 180$, $\partial L/\partial y = 3x^2y^2+4x^2y = 156$.
            """,
        ),
        prose(
            "ex1-code-intro",
            """
            ## The same computation in code

            The code tasks record the extended computation on the chapter's tape and let the
            harness's additive sweep, `reverse_accumulate`, do the rest. Run the next cells; do not
            change them. The first fixes the tape layout that every function below uses (node
            names by index, and the children of `a`); the second is the input check the contracts
            ask for; the third is the chapter's defective sweep (listing [4] of section 11.1), used
            only by the figure.
            """,
        ),
        readonly_code(
            "ex1-imports",
            """
            import math
            import numbers

            import matplotlib.pyplot as plt
            import numpy as np

            from trainable_harness import TapeNode, reverse_accumulate
            """,
        ),
        readonly_code("ex1-layout", _layout_source()),
        readonly_code("ex1-input-check", inspect.getsource(ref._finite_float)),
        readonly_code("ex1-overwrite-sweep", _chapter_sweep_source()),
        prose(
            "ex1-task2",
            """
            ## Task 2 · The extended tape

            Record $a, b, c, d, L$ at $(x, y)$ as a list of `TapeNode`, in the order of the contract
            below. Each node stores its value and one `(parent_index, local_derivative)` pair per
            parent, evaluated at the recorded values. The grader compares your tape node by node
            with the contract's tape at many points.
            """,
        ),
        answer(TAPE_CELL, solution_from([ref.extended_tape])),
        tests(
            TAPE_TESTS,
            POINTS[TAPE_TESTS],
            """
            tape = extended_tape(2.0, 3.0)
            assert isinstance(tape, list) and len(tape) == 7, f"the tape is a list of 7 nodes (x, y, a, b, c, d, L), got {tape!r}"
            assert all(isinstance(node, TapeNode) for node in tape), "every node must be a TapeNode"
            values = [node.value for node in tape]
            assert values == [2.0, 3.0, 6.0, 8.0, 18.0, 36.0, 180.0], f"node values at (2, 3): expected [2, 3, 6, 8, 18, 36, 180], got {values}"
            d_edges = tape[_D].parents
            assert {parent for parent, _ in d_edges} == {_A} and sum(local for _, local in d_edges) == 12.0, f"d = a**2 has one parent, a, with local derivative 2a = 12 at a = 6; got {d_edges}"
            assert sorted(parent for parent, _ in tape[_L].parents) == [_B, _C, _D], f"L = b*c + d is one node with parents b, c and d; got {tape[_L].parents}"
            gradient = reverse_accumulate(tape)[[_X, _Y]]
            assert list(gradient) == [180.0, 156.0], f"the additive sweep of your tape gives {list(gradient)}, expected [180, 156]"
            print("visible checks passed")
            """,
        ),
        prose(
            "ex1-task3",
            r"""
            ## Task 3 · The three contributions into $\bar a$

            Return the three terms of the graph chain rule at $a$, each one a child's cotangent
            times the local derivative of that child with respect to $a$. Their sum must be the
            $\bar a$ that the sweep accumulates. Read them off your tape and its sweep rather than
            from a formula: then they are, term by term, what the sweep adds.
            """,
        ),
        answer(CONTRIBUTIONS_CELL, solution_from([ref.contributions_into_a])),
        tests(
            CONTRIBUTIONS_TESTS,
            POINTS[CONTRIBUTIONS_TESTS],
            """
            parts = contributions_into_a(2.0, 3.0)
            assert isinstance(parts, np.ndarray) and parts.dtype == np.float64 and parts.shape == (3,), f"return a float64 array of shape (3,), got {parts!r}"
            assert list(parts) == [18.0, 24.0, 12.0], f"at (2, 3) the contributions (via b, via c, via d) are [18, 24, 12], got {list(parts)}"
            assert list(contributions_into_a(1.0, 2.0)) == [4.0, 6.0, 4.0], f"at (1, 2) the contributions are [4, 6, 4], got {list(contributions_into_a(1.0, 2.0))}"
            a_bar = reverse_accumulate(extended_tape(2.0, 3.0))[_A]
            assert parts.sum() == a_bar, f"the contributions must add up to the sweep's a-bar = {a_bar}, they add up to {parts.sum()}"
            print("visible checks passed")
            """,
        ),
        prose(
            "ex1-task4",
            """
            ## Task 4 · The input gradient

            Only now the gradient with respect to the inputs.
            """,
        ),
        answer(GRADIENT_CELL, solution_from([ref.input_gradient])),
        tests(
            GRADIENT_TESTS,
            POINTS[GRADIENT_TESTS],
            """
            gradient = input_gradient(2.0, 3.0)
            assert isinstance(gradient, np.ndarray) and gradient.dtype == np.float64 and gradient.shape == (2,), f"return a float64 array of shape (2,), got {gradient!r}"
            assert list(gradient) == [180.0, 156.0], f"at (2, 3) the gradient is [180, 156], got {list(gradient)}"
            assert list(input_gradient(1.0, 2.0)) == [32.0, 20.0], f"at (1, 2) the gradient is [32, 20], got {list(input_gradient(1.0, 2.0))}"
            print("visible checks passed")
            """,
        ),
        prose(
            "ex1-task5",
            r"""
            ## Task 5 · The figure

            Redraw Figure 11.1 for the extended graph at $(2, 3)$, in two panels. Left: $\bar a$ as a
            stack of its three contributions, next to what survives when the sweep overwrites $\bar a$
            instead of adding into it (one bar per child that happens to write last). Right: the input
            derivatives $\bar x, \bar y$ of the additive sweep next to those of the overwriting sweep
            for each of those orders. The provided `overwrite_shared_node` runs the defective sweep in
            the visiting order you give it; the children of `a` are incomparable, so any order of
            them is a valid reverse topological order.
            """,
        ),
        answer(
            FIGURE,
            """
            ### BEGIN SOLUTION
            x, y = 2.0, 3.0
            tape = extended_tape(x, y)
            parts = contributions_into_a(x, y)
            correct = input_gradient(x, y)
            # Reverse topological orders that differ only in which child of a is visited last.
            orders = {
                "b": (_L, _D, _C, _B, _A, _Y, _X),
                "c": (_L, _D, _B, _C, _A, _Y, _X),
                "d": (_L, _C, _B, _D, _A, _Y, _X),
            }
            overwritten = {last: overwrite_shared_node(tape, _A, order) for last, order in orders.items()}

            colours = {"b": "#232D4B", "c": "#E57200", "d": "#5B8C5A"}
            fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [1, 1.3]})
            bottom = 0.0
            for child, part in zip("bcd", parts):
                left.bar(0, part, bottom=bottom, color=colours[child], width=0.6, label=f"via {child}")
                left.text(0, bottom + part / 2, f"{part:g}", ha="center", va="center", color="white")
                bottom += part
            left.text(0, bottom, f"sum {bottom:g}", ha="center", va="bottom")
            for slot, (last, cot) in enumerate(overwritten.items(), start=1):
                left.bar(slot, cot[_A], color=colours[last], width=0.6, hatch="//", edgecolor="white")
                left.text(slot, cot[_A], f"{cot[_A]:g}", ha="center", va="bottom")
            left.set_ylim(0, 1.12 * bottom)
            left.set(
                xticks=range(4),
                xticklabels=["add", "overwrite,\\nb last", "overwrite,\\nc last", "overwrite,\\nd last"],
                ylabel=r"cotangent $\\bar a$ at (2, 3)",
                title=r"contributions into $\\bar a$",
            )
            left.legend(frameon=False, loc="upper right")

            labels = [r"$\\bar x$", r"$\\bar y$"]
            positions = np.arange(len(labels))
            width = 0.2
            right.bar(positions - 1.5 * width, correct, width, color="#232D4B", label="add contributions")
            shades = {"b": "#9C2F2F", "c": "#C76A6A", "d": "#E3A9A9"}
            for offset, (last, cot) in zip((-0.5, 0.5, 1.5), overwritten.items()):
                bars = right.bar(positions + offset * width, cot[[_X, _Y]], width, color=shades[last],
                                 label=f"last writer wins ({last} last)")
                right.bar_label(bars, fmt="%g", fontsize=8)
            right.bar_label(right.containers[0], fmt="%g", fontsize=8)
            right.set(xticks=positions, xticklabels=labels, ylabel="computed input derivative",
                      title="input gradient of $L = bc + d$")
            right.legend(frameon=False, fontsize=8)
            for axis in (left, right):
                axis.grid(axis="y", alpha=0.22)
                axis.set_axisbelow(True)
            plt.tight_layout()
            plt.show()
            ### END SOLUTION
            """,
        ),
    ]
