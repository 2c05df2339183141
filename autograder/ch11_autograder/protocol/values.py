"""The wire format's values and limits: caps, errors, the value types, and equality of decoded values.

``Record``, ``RngSeed``, ``Once`` and ``Kept`` are what values become or are sent as;
:func:`wire_equal` is what equal means for decoded values, and a :class:`Record`'s ``==``
(a decoded dataclass compares field by field, arrays by dtype, shape and elements), so it
lives with the types. See the package docstring for the format.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

import numpy as np

#: Largest message, newline included, in bytes.
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
#: Bytes of a batch message that are not its calls' entries, at most (see ``make_call_entry``).
CALLS_FRAME_BYTES = 1024
#: Integers must satisfy ``abs(n) < 2**MAX_INT_BITS`` (128 bits holds a PCG64 state).
MAX_INT_BITS = 128
#: Longest string value, in characters.
MAX_STR_CHARS = 100_000
#: Most entries in one list, tuple, dict, record or tape.
MAX_CONTAINER_ITEMS = 100_000
#: Most elements in one array.
MAX_ARRAY_ELEMENTS = 1 << 20
#: Most dimensions of one array.
MAX_ARRAY_DIMS = 8
#: Deepest nesting of containers inside one value.
MAX_DEPTH = 32
#: Longest error message a reply carries, in characters (longer ones are truncated).
MAX_ERROR_MESSAGE_CHARS = 2000
#: Longest type, field or function name.
MAX_NAME_CHARS = 100
#: A watched call reports at most this many warnings, each as ``"Category: message"``.
MAX_WARNINGS = 8
MAX_WARNING_CHARS = 300

#: numpy dtypes that travel, by name, with their little-endian wire format.
DTYPES: Mapping[str, str] = MappingProxyType(
    {"float32": "<f4", "float64": "<f8", "int32": "<i4", "int64": "<i8", "bool": "|b1"}
)

#: Reasons a call can fail, as the worker reports them:
#: ``exception``: student code raised; ``not_defined``: no such top-level name;
#: ``not_callable``: the name is not a function; ``unencodable``: the return value
#: cannot travel; ``bad_request``: the worker could not read the request;
#: ``internal``: the worker itself failed; ``not_run``: a call of a batch that the worker did
#: not make (its budget was spent, or an earlier call failed under ``stop_on_error``); that
#: reply ends the batch.
ERROR_KINDS = ("exception", "not_defined", "not_callable", "unencodable", "bad_request", "internal", "not_run")

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_HEX_FLOAT = re.compile(r"-?(?:0x[0-9a-f](?:\.[0-9a-f]{1,13})?p[+-][0-9]{1,4}|inf|nan)\Z")
_INT_LIMIT = 1 << MAX_INT_BITS
_CELL_STATUSES = ("ok", "error", "skipped")


class ProtocolError(ValueError):
    """A message or value does not follow the wire format.

    Attributes:
        path: where in the message the problem is, e.g. ``value[2].fields.x``.
        problem: what is wrong there, in words a student can act on.
    """

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


class UnencodableValue(ProtocolError):
    """A Python value has no wire form (a set, a complex number, an object array, ...)."""


def truncate(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, marking the cut with ``...``."""
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 3)] + "..."


@dataclass(frozen=True, eq=False)
class Record:
    """A dataclass instance as received over the wire: its class name and its fields.

    The trusted side never turns this back into a class chosen by the sender.
    ``fields`` is read-only and keeps the sender's field order. Equality is
    structural (same ``type``, same field names, equal values; arrays compare
    by dtype, shape and elements, NaN equals NaN).
    """

    type: str
    fields: Mapping[str, Any]

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", MappingProxyType(dict(self.fields)))

    def __getitem__(self, name: str) -> Any:
        return self.fields[name]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Record):
            return NotImplemented
        return self.type == other.type and wire_equal(dict(self.fields), dict(other.fields))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={value!r}" for name, value in self.fields.items())
        return f"{self.type}({inner})"


@dataclass(frozen=True)
class RngSeed:
    """Request-only: the worker receives ``numpy.random.default_rng(seed)``.

    ``seed`` is a non-negative int below ``2**MAX_INT_BITS``. Its repr is what the student's code received, as
    source (``np.random.default_rng(7)``): feedback and pasted snippets show it so.
    """

    seed: int

    def __repr__(self) -> str:
        return f"np.random.default_rng({self.seed!r})"


@dataclass(frozen=True)
class Once:
    """Request-only: the worker receives a generator over ``items``, which can be iterated once.

    A contract that accepts any iterable must work with one; a list hides code that
    iterates its argument twice.
    """

    items: tuple[Any, ...]

    def __repr__(self) -> str:
        return f"iter({list(self.items)!r})"


#: Buffer orders and views an array argument can be sent in (request-only, :class:`Laid`).
LAYOUT_ORDERS = ("C", "F")
LAYOUT_VIEWS = ("none", "transposed", "strided")


def layout_problem(ndim: int, size: int, order: Any, view: Any, writeable: Any) -> str | None:
    """Why ``(order, view, writeable)`` is not a layout an array of ``ndim`` dimensions and ``size`` elements can
    be sent in, or None when it is one.

    The plain layout (C order, no view, writeable) is not one: a plain array is sent without a layout,
    so every array has one wire form.
    """
    if order not in LAYOUT_ORDERS:
        return f"order must be one of {', '.join(LAYOUT_ORDERS)}"
    if view not in LAYOUT_VIEWS:
        return f"view must be one of {', '.join(LAYOUT_VIEWS)}"
    if type(writeable) is not bool:
        return "writeable must be true or false"
    if (order, view, writeable) == ("C", "none", True):
        return "a C-ordered writeable array without a view is sent without a layout"
    if view == "transposed" and ndim < 2:
        return "a transposed view needs at least two dimensions"
    if view == "strided" and size << ndim > MAX_ARRAY_ELEMENTS:
        return f"a strided view's buffer (2**ndim times the elements) would exceed {MAX_ARRAY_ELEMENTS} elements"
    return None


def lay_out(values: np.ndarray, order: str, view: str, writeable: bool) -> np.ndarray:
    """``values`` (same dtype, shape and elements) in the memory layout ``(order, view, writeable)``.

    ``order``: the order of the buffer holding the elements (``"F"``: ``np.array(values, order="F")``).
    ``view``: ``"none"``, the buffer itself; ``"transposed"``, the transpose of a buffer that holds the
    transpose; ``"strided"``, every other element, along every axis, of a buffer twice as long in each
    dimension whose other elements are duplicates (``np.repeat``). ``writeable`` False: a read-only view
    (``np.broadcast_to`` to its own shape), which numpy refuses to write into. :meth:`Laid.source` spells
    the same steps as source. The caller checks the layout first (:func:`layout_problem`).
    """
    memory: Literal["C", "F"] = "F" if order == "F" else "C"
    if view == "transposed":
        out = np.array(values.T, order=memory).T
    elif view == "strided":
        buffer = values
        for axis in range(values.ndim):
            buffer = np.repeat(buffer, 2, axis=axis)
        out = np.array(buffer, order=memory)[(slice(None, None, 2),) * values.ndim]
    else:
        out = np.array(values, order=memory)
    return out if writeable else np.broadcast_to(out, out.shape)


@dataclass(frozen=True, eq=False)
class Laid:
    """Request-only: the worker receives ``values`` in another memory layout (:func:`lay_out`).

    An array argument a contract accepts is accepted in every layout numpy gives: Fortran order, a
    transposed view, a strided view of a larger buffer, a read-only array. A plain ``numpy.ndarray``
    argument always arrives C-ordered and writeable; a ``Laid`` one arrives as :meth:`array` builds it.

    Attributes:
        values: the elements (a numpy array of a dtype that travels; its own layout does not matter).
        order, view, writeable: see :func:`lay_out`; not the plain layout (C, none, writeable).
    """

    values: np.ndarray
    order: str = "C"
    view: str = "none"
    writeable: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.values, np.ndarray):
            raise TypeError("Laid needs a numpy array")
        problem = layout_problem(self.values.ndim, self.values.size, self.order, self.view, self.writeable)
        if problem:
            raise ValueError(problem)

    def array(self) -> np.ndarray:
        """The array the worker passes (built here as the worker builds it)."""
        return lay_out(self.values, self.order, self.view, self.writeable)

    def source(self, values: str) -> str:
        """Source that builds this layout from ``values``, the source of a C-ordered array (numpy as ``np``).

        An empty array's nested list does not say its shape, so ``values`` is then reshaped to it.
        """
        if self.values.size == 0:
            values = f"{values}.reshape({tuple(self.values.shape)!r})"
        order = f", order={self.order!r}" if self.order != "C" else ""
        if self.view == "transposed":
            # np.array's default order ("K") would keep the transpose's own order: C is spelt out.
            text = f"np.array({values}.T, order={self.order!r}).T"
        elif self.view == "strided":
            buffer = values
            for axis in range(self.values.ndim):
                buffer = f"np.repeat({buffer}, 2, axis={axis})"
            text = f"np.array({buffer}{order})[{', '.join(['::2'] * self.values.ndim)}]"
        else:
            text = f"np.array({values}{order})"
        return text if self.writeable else f"np.broadcast_to({text}, {tuple(self.values.shape)!r})"

    def __repr__(self) -> str:
        return self.source(f"np.array({self.values.tolist()!r}, dtype=np.{self.values.dtype.name})")


@dataclass(frozen=True)
class Kept:
    """Request-only, top-level arguments only: the object the worker keeps under ``name``.

    Made by the grader's session (``WorkerSession.keep``); ``label`` is how the
    value reads in feedback (e.g. ``"chain"``), never sent.
    """

    name: str
    label: str = ""

    def __repr__(self) -> str:
        return self.label or f"<kept {self.name}>"


def wire_equal(a: Any, b: Any) -> bool:
    """Structural equality of decoded wire values.

    Python ints and floats compare by value (``2 == 2.0``), but bool is not a
    number here; NaN equals NaN; numpy scalars and arrays must agree in dtype
    (and shape) and elementwise; lists, tuples, dicts, records and tapes
    compare entry by entry and a list never equals a tuple.
    """
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return False
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        if a.dtype.kind == "f":
            return bool(np.array_equal(a, b, equal_nan=True))
        return bool(np.array_equal(a, b))
    if isinstance(a, np.generic) or isinstance(b, np.generic):
        if not (isinstance(a, np.generic) and isinstance(b, np.generic)) or a.dtype != b.dtype:
            return False
        return _number_equal(a.item(), b.item())
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return _number_equal(a, b)
    if type(a) is not type(b):
        # A TapeNode list is a list; TapeNode and Record are dataclass-like.
        return False
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(wire_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(wire_equal(a[k], b[k]) for k in a)
    if isinstance(a, Record):
        return a == b
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return all(wire_equal(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    return bool(a == b)


def _number_equal(x: Any, y: Any) -> bool:
    if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
        return True
    return bool(x == y)


def _check_count(count: int, path: str, error: type[ProtocolError]) -> None:
    if count > MAX_CONTAINER_ITEMS:
        raise error(path, f"{count} entries; at most {MAX_CONTAINER_ITEMS} can be sent")
