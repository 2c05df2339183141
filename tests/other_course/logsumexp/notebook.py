"""The log-sum-exp exercise's source notebook: statement, imports, answer cell, test cell."""

from __future__ import annotations

from typing import Any

from ch11_autograder.exercises.cells import answer, prose, readonly_code, solution_from, tests

from other_course import solutions as ref

from .contract import ANSWER_CELL, POINTS, TESTS

VISIBLE = """
assert abs(logsumexp([0.0, 0.0]) - math.log(2.0)) < 1e-12
assert abs(logsumexp(np.array([1000.0, 1000.0])) - (1000.0 + math.log(2.0))) < 1e-9
print("visible checks passed; the grader checks many more inputs")
"""


def cells() -> list[Any]:
    """The notebook's cells, in order."""
    return [
        prose("logsumexp_statement", r"""
            # Log-sum-exp without overflow

            Softmax, cross-entropy and log-likelihoods all need $\log \sum_i e^{x_i}$. Computed as
            written, $e^{x_i}$ overflows to `inf` once $x_i > 709$, and every $e^{x_i}$ underflows to
            `0` once all $x_i < -745$. Shifting by $m = \max_i x_i$ avoids both:

            $$\log \sum_i e^{x_i} = m + \log \sum_i e^{x_i - m}.$$

            Implement `logsumexp(x)` as its docstring says.
        """),
        readonly_code("logsumexp_imports", "import math\n\nimport numpy as np"),
        answer(ANSWER_CELL, solution_from([ref.logsumexp])),
        tests(TESTS, POINTS[TESTS], VISIBLE),
    ]
