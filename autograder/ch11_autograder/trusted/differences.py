"""What differs between an expected and an obtained value, said where their printed forms hide it.

Two values can print alike and still differ: NaNs whose payload bits differ, ``0.0`` and ``-0.0``
(in an array both print as ``0.``), floats a last bit apart inside a long array, a string with a
trailing space or a tab, a record whose differing field lies past the point where its repr is cut.
:func:`first_difference` walks both values together (records by field, dicts by key, lists, tuples
and tapes by position, arrays by dtype, shape, then index) and returns the first place they differ,
as a :class:`Difference` whose :meth:`~Difference.line` reads

    field total_error, index 3: expected 1.0, got 1.0000000000000002 (0x3ff0000000000000 vs 0x3ff0000000000001)

Floats are compared by their bits, so a NaN payload, a signed zero or a last-bit difference is
found and shown as the 64-bit (or 32-, 16-bit) pattern in hex. Strings are shown with their
whitespace made visible (:func:`visible_whitespace`). :func:`focused_value` renders a value that is
too long for one message around the differing place, eliding elsewhere, so the difference is never
cut off.

Pure functions of decoded wire values (``protocol`` types, numpy, builtins); no side effect.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..protocol import Record

__all__ = [
    "Difference",
    "Step",
    "first_difference",
    "float_bits",
    "focused_value",
    "visible_whitespace",
    "with_article",
]

#: One step into a value: ``("field", name)``, ``("key", key)``, ``("index", i)`` (a tuple of ints
#: for an array element), ``("node", i)`` (a tape node) or ``("parents", i)``.
Step = tuple[str, Any]

_WHITESPACE = {" ": "\u2420", "\t": "\u2409", "\n": "\u240a", "\r": "\u240d", "\x0b": "\u240b", "\x0c": "\u240c",
               "\u00a0": "\u237d"}
#: Longest rendering of one element in a difference line before it is cut in its middle.
MAX_PART_CHARS = 120


def visible_whitespace(text: str) -> str:
    """``repr``-like quoted text in which whitespace that would not show draws itself.

    Tabs, newlines, carriage returns, form feeds and no-break spaces are always shown (``␉ ␊ ␍ ␌ ⍽``);
    spaces are shown as ``␠`` at either end of the text and where two or more follow one another,
    single spaces between words are kept. Other characters are as ``repr`` shows them.
    """
    out: list[str] = []
    n = len(text)
    for i, char in enumerate(text):
        if char == " ":
            run_start = i
            while run_start > 0 and text[run_start - 1] == " ":
                run_start -= 1
            run_end = i
            while run_end + 1 < n and text[run_end + 1] == " ":
                run_end += 1
            lone_inner = run_start == run_end and 0 < i < n - 1
            out.append(" " if lone_inner else _WHITESPACE[" "])
        elif char in _WHITESPACE:
            out.append(_WHITESPACE[char])
        else:
            out.append(repr(char)[1:-1] if not char.isprintable() or char in "'\\" else char)
    return "'" + "".join(out) + "'"


def float_bits(value: float | np.floating) -> str:
    """The float's bit pattern in hex: 16 digits for a float64 (``0x7ff8000000000001``), 8 for a float32."""
    if isinstance(value, np.floating):
        width = value.dtype.itemsize
        as_int = int(np.asarray(value).view(f"u{width}"))
        return f"0x{as_int:0{width * 2}x}"
    return f"0x{struct.unpack('<Q', struct.pack('<d', float(value)))[0]:016x}"


def with_article(noun: str) -> str:
    """``a float``, ``an int``, ``None``: the noun with its indefinite article, by its first letter (``None`` as is)."""
    if noun == "None":
        return noun
    return f"{'an' if noun[:1].lower() in 'aeio' else 'a'} {noun}"


@dataclass(frozen=True)
class Difference:
    """The first place two values differ.

    Attributes:
        path: the steps from the whole value to the differing part (empty: the values themselves).
        what: for a difference of kind rather than of value, what differs (``"type"``, ``"dtype"``,
            ``"shape"``, ``"length"``, ``"keys"``, ``"fields"``); ``""`` for differing values.
        expected, got: the two parts as shown (strings with visible whitespace, floats by repr).
        bits: ``"(0x... vs 0x...)"`` when the parts are floats whose bits differ where it matters
            (a NaN, a zero, or a few units in the last place); ``""`` otherwise.
    """

    path: tuple[Step, ...]
    what: str
    expected: str
    got: str
    bits: str = ""

    def where(self) -> str:
        """The path in words: ``field total_error, index 3``; ``""`` for the values themselves."""
        return ", ".join(_step_words(step) for step in self.path)

    def line(self) -> str:
        """One line: where, then what was expected and what came (and the bits when they tell)."""
        where = self.where()
        head = f"{where}: " if where else ""
        if self.what:
            head += f"{self.what}: "
        bits = f" {self.bits}" if self.bits else ""
        return f"{head}expected {_cut(self.expected)}, got {_cut(self.got)}{bits}"

    def hidden_by_printing(self, expected_text: str, got_text: str) -> bool:
        """Whether the line tells a reader something the two renderings ``expected_text`` and ``got_text``
        do not: they print alike, the difference lies inside a compound value, or it is in the bits."""
        if expected_text == got_text or self.path or self.bits:
            return True
        if self.what:  # a kind that differs at the top prints differently already
            return False
        return self.expected != expected_text or self.got != got_text  # whitespace made visible


def _step_words(step: Step) -> str:
    kind, key = step
    if kind == "index" and isinstance(key, tuple):
        return f"index {', '.join(str(k) for k in key) if len(key) != 1 else key[0]}"
    if kind == "key":
        return f"key {key!r}"
    if kind == "node":
        return f"node #{key}"
    if kind == "parents":
        return f"parent edge {key}"
    return f"{kind} {key}"


def _cut(text: str, limit: int = MAX_PART_CHARS) -> str:
    if len(text) <= limit:
        return text
    half = (limit - 3) // 2
    return text[:half] + "..." + text[-half:]


def _type_noun(value: Any) -> str:
    if isinstance(value, Record):
        return value.type
    if isinstance(value, np.ndarray):
        return f"{value.dtype.name} array"
    if isinstance(value, np.generic):
        return f"np.{value.dtype.name}"
    if value is None:
        return "None"
    return type(value).__name__


Render = Callable[[Any], str]


def _shower(render: Render) -> Render:
    """How a differing part is shown: a string with its whitespace visible, anything else by ``render``."""
    return lambda value: visible_whitespace(value) if isinstance(value, str) else render(value)


def _float_like(value: Any) -> bool:
    return isinstance(value, float | np.floating) and not isinstance(value, bool)


def _bits_tell(a: float, b: float, a_bits: str, b_bits: str) -> bool:
    """Whether the hex patterns are worth showing: a NaN is involved, two zeros, or the two are close."""
    if a_bits == b_bits:
        return False
    if math.isnan(a) or math.isnan(b) or (a == 0.0 and b == 0.0):
        return True
    if math.isinf(a) or math.isinf(b):
        return False
    return abs(a - b) <= 4 * max(math.ulp(a), math.ulp(b))


def _float_difference(path: tuple[Step, ...], a: Any, b: Any, _show: Render) -> Difference | None:
    a_bits, b_bits = float_bits(a), float_bits(b)
    if a_bits == b_bits and type(a) is type(b):
        return None
    if type(a) is not type(b):
        return Difference(path, "type", with_article(_type_noun(a)), with_article(_type_noun(b)))
    bits = f"({a_bits} vs {b_bits})" if _bits_tell(float(a), float(b), a_bits, b_bits) else ""
    return Difference(path, "", _show(a), _show(b), bits)


def first_difference(expected: Any, got: Any, render: Render = repr) -> Difference | None:
    """The first place ``expected`` and ``got`` differ (see the module docstring); ``None`` when they are
    the same to the last bit. ``render`` shows the differing parts (strings have their whitespace shown)."""
    return _walk((), expected, got, _shower(render))


def _walk(path: tuple[Step, ...], a: Any, b: Any, _show: Render) -> Difference | None:
    if _float_like(a) and _float_like(b):
        return _float_difference(path, a, b, _show)
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return _array_difference(path, a, b, _show)
    if type(a) is not type(b):
        return Difference(path, "type", with_article(_type_noun(a)), with_article(_type_noun(b)))
    if isinstance(a, Record):
        if a.type != b.type:
            return Difference(path, "type", with_article(a.type), with_article(b.type))
        return _mapping_difference(path, dict(a.fields), dict(b.fields), "field", "fields", _show)
    if isinstance(a, dict):
        return _mapping_difference(path, a, b, "key", "keys", _show)
    if _is_tape(a) and _is_tape(b):
        return _sequence_difference(path, a, b, "node", _show)
    if type(a).__name__ == "TapeNode":
        return (_walk((*path, ("value", "")), a.value, b.value, _show)
                or _sequence_difference((*path, ("parents", "")), list(a.parents), list(b.parents), "index", _show))
    if isinstance(a, list | tuple):
        return _sequence_difference(path, a, b, "index", _show)
    if isinstance(a, np.generic):
        return None if a.tobytes() == b.tobytes() else Difference(path, "", _show(a), _show(b))
    try:
        same = bool(a == b)
    except Exception:  # a value whose comparison fails is shown as it is
        same = False
    return None if same else Difference(path, "", _show(a), _show(b))


def _is_tape(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(type(v).__name__ == "TapeNode" for v in value)


def _mapping_difference(path: tuple[Step, ...], a: dict, b: dict, step: str, what: str,
                        _show: Render) -> Difference | None:
    missing = [k for k in a if k not in b]
    extra = [k for k in b if k not in a]
    if missing or extra:
        def names(keys: list[Any]) -> str:
            return ", ".join(str(k) if step == "field" else repr(k) for k in keys) or "none"

        return Difference(path, what, names(list(a)), names(list(b)))
    for key in a:
        found = _walk((*path, (step, key)), a[key], b[key], _show)
        if found is not None:
            return found
    return None


def _sequence_difference(path: tuple[Step, ...], a: Sequence[Any], b: Sequence[Any], step: str,
                         _show: Render) -> Difference | None:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        found = _walk((*path, (step, i)), x, y, _show)
        if found is not None:
            return found
    if len(a) != len(b):
        return Difference(path, "length", str(len(a)), str(len(b)))
    return None


def _array_difference(path: tuple[Step, ...], a: np.ndarray, b: np.ndarray, _show: Render) -> Difference | None:
    if a.dtype != b.dtype:
        return Difference(path, "dtype", a.dtype.name, b.dtype.name)
    if a.shape != b.shape:
        return Difference(path, "shape", str(tuple(a.shape)), str(tuple(b.shape)))
    if a.dtype.hasobject:
        for index in np.ndindex(a.shape):
            found = _walk((*path, ("index", index)), a[index], b[index], _show)
            if found is not None:
                return found
        return None
    if a.size == 0:
        return None
    width = a.dtype.itemsize
    view = f"V{width}"
    differs = np.ascontiguousarray(a).view(view) != np.ascontiguousarray(b).view(view)
    if not differs.any():
        return None
    index = tuple(int(i) for i in np.argwhere(differs)[0])
    return _walk((*path, ("index", index)), _element(a, index), _element(b, index), _show)


def _element(array: np.ndarray, index: tuple[int, ...]) -> Any:
    """An array's element as a student would write it: a Python float or int where that loses nothing
    (float64, integers, bools), the numpy scalar otherwise (float32 keeps its own bits)."""
    element = array[index]
    return element.item() if array.dtype == np.float64 or array.dtype.kind in "iub" else element


def focused_value(value: Any, path: Sequence[Step], render: Callable[[Any], str], limit: int) -> str:
    """``render(value)`` when it fits in ``limit`` characters; otherwise the value rendered along
    ``path`` only: other fields, keys and items as ``...``, an array as the elements around the index,
    so that the part ``path`` leads to is shown whatever the value's size."""
    whole = render(value)
    if len(whole) < limit or not path:  # a rendering that reaches the limit may have been cut
        return whole
    return _focus(value, list(path), render)


def _neighbour(text: str) -> str:
    """An item beside the differing one: shown when short, else ``...`` (never cut in its middle)."""
    return text if len(text) <= 40 else "..."


def _focus(value: Any, path: list[Step], render: Callable[[Any], str]) -> str:
    if not path:
        return _cut(render(value))
    (kind, key), rest = path[0], path[1:]
    if isinstance(value, Record) and kind == "field":
        inner = [f"{name}={_focus(v, rest, render)}" if name == key else f"{name}=..." for name, v in
                 value.fields.items()]
        return f"{value.type}({', '.join(inner)})"
    if isinstance(value, dict) and kind == "key":
        return "{" + ", ".join(f"{k!r}: {_focus(v, rest, render)}" if k == key else f"{k!r}: ..."
                               for k, v in value.items()) + "}"
    if isinstance(value, np.ndarray) and kind == "index" and value.ndim >= 1:
        flat = np.ravel_multi_index(key, value.shape) if value.ndim > 1 else key[0]
        items = value.ravel()
        lo, hi = max(flat - 2, 0), min(flat + 3, items.size)
        shown = [render(items[i].item()) if value.dtype == np.float64 or value.dtype.kind in "iub" else
                 render(items[i]) for i in range(lo, hi)]
        head = "..., " if lo > 0 else ""
        tail = ", ..." if hi < items.size else ""
        return f"array([{head}{', '.join(shown)}{tail}], dtype={value.dtype.name}, shape={tuple(value.shape)})"
    if isinstance(value, list | tuple) and kind in ("index", "node") and isinstance(key, int) and key < len(value):
        lo, hi = max(key - 1, 0), min(key + 2, len(value))
        shown = [_focus(value[i], rest, render) if i == key else _neighbour(render(value[i])) for i in range(lo, hi)]
        head = "..., " if lo > 0 else ""
        tail = ", ..." if hi < len(value) else ""
        opening, closing = ("(", ")") if isinstance(value, tuple) else ("[", "]")
        return f"{opening}{head}{', '.join(shown)}{tail}{closing}"
    return _cut(render(value))
