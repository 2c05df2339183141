"""Exercise 3's contract: the notebook, its cells' grade ids and points, and the graded depth range."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ...api.contract import Clause, Drawn, ends, layouts, scalars

NOTEBOOK = "ex3_block_length"

BEST_CELL = "ex3_best_block_length"
BEST_TESTS = "ex3_best_block_length_tests"
TABLE_CELL = "ex3_block_table"
TABLE_TESTS = "ex3_block_table_tests"
#: Only draws; the verdict worker does not run it.
FIGURE = "ex3_figure"
REPORT = "ex3_report"

#: Points of every graded cell, in notebook order.
POINTS: Mapping[str, int] = MappingProxyType({BEST_TESTS: 4, TABLE_TESTS: 2, REPORT: 3})

#: Largest depth the hidden suite passes to a student's function. A plain scan over
#: every k in 1..L answers in well under a second at this size (the reference's
#: constant-time method is not required), and the notebook's prose promises it.
GRADED_MAX_DEPTH = 20_000


# ---- the contract, clause by clause -----------------------------------------------------

_B = BEST_TESTS + "/"
_T = TABLE_TESTS + "/"

def _depths_hold(depth: int) -> Drawn:
    """depths of a form that can be read twice holding ``depth`` (a range end)."""
    return Drawn(f"holding_{depth}",
                 f"isinstance(depths, (list, tuple, range, np.ndarray)) and {depth} in list(depths)")


#: Every rule of the two docstrings, in docstring order, with the properties that fail when it is broken.
CONTRACT: tuple[Clause, ...] = (
    # best_block_length(depth)
    Clause("best_block_length", "behaviour", "peak ceil(L/k) + k, minimal over 1 <= k <= L",
           (_B + "visible_examples", _B + "minimum_peak", _B + "small_depths")),
    Clause("best_block_length", "behaviour", "replay L - ceil(L/k) for the returned k",
           (_B + "visible_examples", _B + "replay_count", _B + "small_depths")),
    Clause("best_block_length", "tie-break", "the smallest k among those with the minimum peak",
           (_B + "visible_examples", _B + "smallest_tied_k", _B + "small_depths")),
    Clause("best_block_length", "purity",
           "depends on depth alone: a cache is fine, results that depend on earlier calls are not (a float after "
           "the int of its value still raises)",
           (_B + "repeated_calls",)),
    # small_depths draws 1..40, minimum_peak 4..20 000 with 16, 64, 1000, 4096 and 20 000 first,
    # numpy_depths int64 and int32 depths.
    Clause("best_block_length", "accepts", "an int >= 1 (1..20 000 graded); numpy int32/int64 give the same record",
           (_B + "small_depths", _B + "minimum_peak", _B + "numpy_depths"), argument="depth",
           drawn=(*scalars("depth", "int", "int64", "int32"), *ends("depth", 1, GRADED_MAX_DEPTH))),
    # record_types draws the range's ends 1 and 20 000; numpy_depths holds a numpy depth's record, field
    # types included, to the Python int's.
    Clause("best_block_length", "returns", "a BlockChoice: Python int counts, depth L, sqrt_depth = math.sqrt(L), "
           "a float (np.float64 is one; np.float32 is not)",
           (_B + "record_types", _B + "visible_examples", _B + "numpy_depths"), ),
    # numpy_depths holds a numpy depth's record, sqrt_depth included, to the Python int's.
    Clause("best_block_length", "tolerance", "sqrt_depth within two units in the last place of math.sqrt(L) "
           "(L ** 0.5 and np.sqrt(L) accepted)", (_B + "record_types", _B + "numpy_depths")),
    Clause("best_block_length", "returns", "Python int counts for numpy depths too",
           (_B + "numpy_depths",)),
    # input_contract draws bools (True, False), floats below 1, at 1.0, whole and fractional above
    # (0.5, -3.0, 0.0, 1.0, 16.0, 16.5), str, None, a list, numpy bools and float32/float64 below
    # and above 1; depths 0, -1, -7 as Python int, int64 and int32. (A Fraction has no wire form.)
    Clause("best_block_length", "raises", "not an integer: bool, float, 16.0, str, None, list, numpy bool/floats",
           (_B + "input_contract",), argument="depth", raises="TypeError"),
    # input_contract draws 0, -1, -7, int64 0 and -1, int32 -3 (1 and up: small_depths).
    Clause("best_block_length", "raises", "depth < 1, Python or numpy integer",
           (_B + "input_contract",), argument="depth", raises="ValueError"),
    # block_table(depths=range(16, 4097))
    # accepts_iterables holds every other iterable's table to the list's.
    Clause("block_table", "behaviour", "best_block_length for each depth, in the order given, repeats kept",
           (_T + "visible_examples", _T + "order_and_repeats", _T + "matches_best_block_length",
            _T + "accepts_iterables")),
    # matches_best_block_length compares field types too, at the range's ends 1 and 20 000 among others.
    Clause("block_table", "returns", "a list of BlockChoice records, whatever iterable depths is",
           (_T + "visible_examples", _T + "accepts_iterables", _T + "matches_best_block_length")),
    Clause("block_table", "purity", "depends on depths alone, not on earlier calls",
           (_T + "repeated_calls",)),
    Clause("block_table", "purity", "depths left unchanged (a list not emptied, sorted or reordered)",
           (_T + "leaves_depths_unchanged",), argument="depths"),
    # Read from the signature (Student.defaults), not called: block_table() with a plain scan in
    # best_block_length takes longer than one call may. The docstring says so.
    Clause("block_table", "default", "range(16, 4097), declared in the signature: depths 16 through 4096",
           (_T + "default_depths",), argument="depths"),
    # accepts_iterables draws each named kind (generators as Once, empty ones too, int64 and int32
    # arrays); order_and_repeats lists.
    # accepts_iterables also sends numpy arrays strided and read-only (api.suite.laid).
    Clause("block_table", "accepts", "any iterable, read once, in order: list, tuple, range, generator, numpy ints "
           "(a one-dimensional array, in any memory layout)",
           (_T + "accepts_iterables", _T + "order_and_repeats"), argument="depths",
           drawn=(Drawn("list", "type(depths) is list"), Drawn("tuple", "type(depths) is tuple"),
                  Drawn("range", "type(depths) is range"), Drawn("numpy_array", "isinstance(depths, np.ndarray)"),
                  Drawn("generator", "not isinstance(depths, (list, tuple, range, np.ndarray))"),
                  _depths_hold(1), _depths_hold(GRADED_MAX_DEPTH), *layouts("depths", ndim=1))),
    Clause("block_table", "raises", "depths is not iterable (a lone depth)",
           (_T + "rejects_bad_depths",), argument="depths", raises="TypeError"),
    # rejects_bad_depths sends (1, n) and (n, 1) integer arrays: refused, not flattened.
    Clause("block_table", "raises", "as best_block_length, for the first bad depth in the order given (the rows "
           "of a 2-D array are not depths)",
           (_T + "rejects_bad_depths",), argument="depths", raises="TypeError", reshaped="(depths.size,)"),
    Clause("block_table", "raises", "as best_block_length, for the first bad depth in the order given",
           (_T + "rejects_bad_depths",), argument="depths", raises="ValueError"),
)
