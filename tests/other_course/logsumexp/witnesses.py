"""The log-sum-exp exercise's witnesses: for every clause of :data:`CONTRACT`, answers that break it alone.

See ``ch11_autograder/exercises/witness.py``. The mechanical ones come from the clause kinds; the
type and value promises per accepted input kind are generated from the table
(``Witnesses.with_generated``).
"""

from __future__ import annotations

from ch11_autograder.exercises.witness import (
    Family,
    Witnesses,
    by_hand,
    clause_lookup,
    keeps_state,
    mutates,
    other_exception,
    refused,
    wrapper,
)

from other_course import solutions as ref

from .contract import ANSWER_CELL, CONTRACT, FUNCTION, OVERFLOW, UNDERFLOW

__all__ = ["WITNESSES"]

_clause = clause_lookup(CONTRACT)
_F = ref.logsumexp

_KINDS = [Family("list", "type(x) is list"), Family("tuple", "type(x) is tuple"),
          Family("array", "isinstance(x, np.ndarray)")]
_BAD = [Family("empty", "len(x) == 0"),
        Family("non_finite", "len(x) > 0 and not np.all(np.isfinite(np.asarray(x, dtype=np.float64)))")]

_WITNESSES = [
    *refused(_clause(FUNCTION, "accepts"), _F, ANSWER_CELL, _KINDS),
    by_hand(_clause(FUNCTION, "returns"), "logsumexp_returns_a_one_element_list", ANSWER_CELL,
            wrapper(_F, result="[result]")),
    by_hand(_clause(FUNCTION, "returns"), "logsumexp_returns_a_0d_array", ANSWER_CELL,
            wrapper(_F, result="np.array(result)")),
    by_hand(_clause(FUNCTION, "tolerance"), "logsumexp_off_by_1e_9", ANSWER_CELL,
            wrapper(_F, result="result + 1e-9 * (1 + abs(result))")),
    by_hand(_clause(FUNCTION, "behaviour"), "logsumexp_plain_formula_beyond_the_limits", ANSWER_CELL,
            wrapper(_F, f"values = np.asarray(x, dtype=np.float64)\n"
                        f"if values.max() > {OVERFLOW} or values.max() < -{UNDERFLOW}:\n"
                        "    with np.errstate(over='ignore', divide='ignore'):\n"
                        "        return float(np.log(np.sum(np.exp(values))))")),
    mutates(_clause(FUNCTION, "purity"), _F, ANSWER_CELL, "zeroes_an_array_x",
            "x.fill(0.0) if isinstance(x, np.ndarray) else None", after=True),
    mutates(_clause(FUNCTION, "purity"), _F, ANSWER_CELL, "empties_a_list_x",
            "x.clear() if isinstance(x, list) else None", after=True),
    keeps_state(_clause(FUNCTION, "purity"), _F, ANSWER_CELL, "length", "len(x)"),
    *other_exception(_clause(FUNCTION, "raises", argument="x"), _F, ANSWER_CELL, _BAD),
]

WITNESSES = Witnesses(CONTRACT, tuple(_WITNESSES))
