"""The typed JSON wire format between the trusted grader and the verdict worker.

The worker runs student code inside the sandbox; the grader calls student
functions through it. Everything the worker sends is hostile data, so this
module has one job: turn Python values into a small, closed set of JSON shapes
and back, strictly, with size caps, and with an error that names *where* in a
value something was wrong (``value[2].fields.x``).

This file is self-contained: it imports only the standard library and numpy
(and, lazily, ``trainable_harness`` for tapes and chains). The sandbox shows it
to the worker next to the runtime scripts (see
``ch11_autograder.untrusted.launch.RUNTIME_READONLY_PATHS``); it must never
import anything else of ``ch11_autograder``.

Framing
    One message per line: UTF-8 JSON without raw newlines (``ensure_ascii``),
    terminated by ``\\n``, at most :data:`MAX_MESSAGE_BYTES` bytes including it.
    JSON floats and the constants NaN/Infinity are refused; every non-integer
    number travels as a tagged hex string, so values are exact.

Values (``encode_value`` / ``decode_value``)
    ==========================  ==================================================
    Python                      JSON
    ==========================  ==================================================
    None, bool, str             null, true/false, string (<= MAX_STR_CHARS)
    int                         integer, ``abs(n) < 2**MAX_INT_BITS``
    float                       ``{"t":"float","v":float.hex(x)}`` (incl. inf, nan)
    list                        array (<= MAX_CONTAINER_ITEMS entries)
    tuple                       ``{"t":"tuple","v":[...]}``
    dict with str keys          ``{"t":"dict","v":{key: value}}``
    range                       ``{"t":"range","start":a,"stop":b,"step":c}``
    numpy scalar                ``{"t":"scalar","dtype":d,"v":...}``
    numpy ndarray               ``{"t":"ndarray","dtype":d,"shape":[...],"data":b64}``
                                (C order, little endian, <= MAX_ARRAY_ELEMENTS)
    list of TapeNode (non-empty) ``{"t":"tape","nodes":[{"value":v,"parents":[[i,d],..]}]}``
    dataclass instance          ``{"t":"record","type":name,"fields":{...}}``
    ==========================  ==================================================

    ``d`` is one of :data:`DTYPES`. Decoding a record always gives a
    :class:`Record`, never an instance of a class the sender named.

    Only in *requests* (grader -> worker) three constructor tags exist:
    ``{"t":"once","v":[...]}`` (from :class:`Once`) becomes a generator over the
    items, which can be read once, as a student's caller might pass;
    ``{"t":"rng","seed":n}`` (from :class:`RngSeed`) becomes
    ``numpy.random.default_rng(n)`` in the worker, and ``{"t":"chain",...}``
    (from a ``trainable_harness.StochasticChain``) becomes a fresh
    ``StochasticChain`` with the same weights, biases, random layer, noise
    scale and width. Replies carrying them are refused.

Messages
    request   ``{"id":n,"op":"call","fn":name,"args":[...],"kwargs":{name: value}}``,
              optionally with ``"watch":true`` (reply with the arguments as the call left them)
              ``{"id":n,"op":"hello"}``
              ``{"id":n,"op":"defaults","fn":name}``: the default values the function declares,
              as ``{parameter: watch_form(default)}`` (in declaration order)
              ``{"id":n,"op":"keep","name":h,"value":value}``: the worker decodes ``value`` once
              and keeps it under ``h``; a top-level argument ``{"t":"kept","name":h}`` of a
              later call is that same object (so a suite can pass one chain to several calls)
              ``{"id":n,"op":"calls","calls":[{"fn":..,"args":..,"kwargs":..[,"watch":true]},..]}``,
              optionally with ``"budget_ms":b`` and ``"stop_on_error":true``: several calls in one
              message (see :func:`make_calls`); the worker answers them in order, one ordinary
              reply per call as it returns, call ``i`` (from 0) under id ``n + i``. It starts
              no call once ``b`` milliseconds have passed since it read the message, and (with
              ``stop_on_error``) none after a call whose reply is an error; the first call it
              does not make gets a ``not_run`` error reply, which ends the batch
    reply     ``{"id":n,"ok":true,"value":value}``, plus ``"args":[...],"kwargs":{...}`` for a
              watched call (each in :func:`watch_form`)
              ``{"id":n,"ok":false,"error":{"kind":k,"type":t,"message":m,"where":w}}``
    hello     ``{"id":n,"ok":true,"cells":[{"index":i,"status":s,"type":t,"message":m,"where":w}]}``

Nothing here uses pickle or eval, or imports or calls a name chosen by the
other side.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

__all__ = [
    "DTYPES",
    "ERROR_KINDS",
    "MAX_ARRAY_ELEMENTS",
    "MAX_CONTAINER_ITEMS",
    "MAX_DEPTH",
    "MAX_ERROR_MESSAGE_CHARS",
    "MAX_INT_BITS",
    "MAX_MESSAGE_BYTES",
    "MAX_STR_CHARS",
    "CallRequest",
    "CallsRequest",
    "CellOutcome",
    "DefaultsRequest",
    "ErrorInfo",
    "HelloReply",
    "HelloRequest",
    "KeepRequest",
    "Kept",
    "Once",
    "ProtocolError",
    "Record",
    "Reply",
    "RngSeed",
    "UnencodableValue",
    "decode_value",
    "describe_type",
    "dumps_message",
    "encode_value",
    "loads_message",
    "make_call",
    "make_call_entry",
    "make_calls",
    "make_defaults",
    "make_defaults_reply",
    "make_error",
    "make_hello",
    "make_hello_reply",
    "make_keep",
    "make_ok",
    "parse_reply",
    "parse_request",
    "roundtrip",
    "truncate",
    "watch_form",
    "wire_equal",
]

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

    ``seed`` is a non-negative int below ``2**MAX_INT_BITS``.
    """

    seed: int


@dataclass(frozen=True)
class Once:
    """Request-only: the worker receives a generator over ``items``, which can be iterated once.

    A contract that accepts any iterable must work with one; a list hides code that
    iterates its argument twice.
    """

    items: tuple[Any, ...]

    def __repr__(self) -> str:
        return f"iter({list(self.items)!r})"


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


# --------------------------------------------------------------------------- encoding


def _tape_node_class() -> type | None:
    try:
        from trainable_harness import TapeNode
    except ImportError:  # pragma: no cover - the harness is part of every grading environment
        return None
    return TapeNode


def _chain_class() -> type | None:
    try:
        from trainable_harness import StochasticChain
    except ImportError:  # pragma: no cover
        return None
    return StochasticChain


def _encode_int(value: int, path: str) -> int:
    if not -_INT_LIMIT < value < _INT_LIMIT:
        raise UnencodableValue(path, f"the integer has {value.bit_length()} bits; at most {MAX_INT_BITS} can be sent")
    return value


def _encode_float(value: float) -> dict[str, Any]:
    return {"t": "float", "v": float(value).hex()}


def encode_value(value: Any, *, request: bool = False, path: str = "value", _depth: int = 0) -> Any:
    """The JSON-ready form of ``value`` (see the module docstring).

    Args:
        value: what to send.
        request: True when the grader encodes call arguments; only then are
            :class:`RngSeed` and ``StochasticChain`` sent as constructors
            (in replies a chain is an ordinary record).
        path: name of ``value`` in error messages.

    Raises:
        UnencodableValue: ``value`` or something inside it has no wire form or
            exceeds a cap; the message names its location and type.
    """
    if _depth > MAX_DEPTH:
        raise UnencodableValue(path, f"values nest deeper than {MAX_DEPTH} levels")
    if value is None or type(value) is bool:
        return value
    if isinstance(value, np.generic):
        return _encode_scalar(value, path)
    if isinstance(value, int):
        return _encode_int(int(value), path)
    if isinstance(value, float):
        return _encode_float(value)
    if isinstance(value, str):
        if len(value) > MAX_STR_CHARS:
            raise UnencodableValue(path, f"the string has {len(value)} characters; at most {MAX_STR_CHARS} can be sent")
        return str(value)
    if isinstance(value, np.ndarray):
        return _encode_array(value, path)
    if isinstance(value, range):
        return {
            "t": "range",
            "start": _encode_int(value.start, f"{path}.start"),
            "stop": _encode_int(value.stop, f"{path}.stop"),
            "step": _encode_int(value.step, f"{path}.step"),
        }
    if isinstance(value, Once):
        if not request:
            raise UnencodableValue(path, "a one-shot iterable can only be sent to the worker, not returned")
        return {"t": "once", "v": _encode_sequence(list(value.items), request=request, path=path, depth=_depth)}
    if isinstance(value, list | tuple):
        return _encode_sequence(value, request=request, path=path, depth=_depth)
    if isinstance(value, dict):
        return _encode_dict(value, request=request, path=path, depth=_depth)
    if isinstance(value, Record):
        return _encode_record(value.type, value.fields.items(), request=request, path=path, depth=_depth)
    if isinstance(value, RngSeed):
        if not request:
            raise UnencodableValue(path, "a random-generator seed can only be sent to the worker, not returned")
        seed = value.seed
        if type(seed) is not int or seed < 0:
            raise UnencodableValue(f"{path}.seed", f"a seed must be a non-negative int, got {seed!r}")
        return {"t": "rng", "seed": _encode_int(seed, f"{path}.seed")}
    chain_class = _chain_class()
    if request and chain_class is not None and isinstance(value, chain_class):
        return _encode_chain(value, path)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = ((f.name, getattr(value, f.name)) for f in dataclasses.fields(value))
        return _encode_record(type(value).__name__, items, request=request, path=path, depth=_depth)
    raise UnencodableValue(path, f"a value of type {describe_type(value)} cannot be sent; {_SENDABLE}")


_SENDABLE = (
    "send None, bool, int, float, str, list, tuple, dict with str keys, a numpy scalar or array "
    "(float32, float64, int32, int64, bool), a list of TapeNode, or a dataclass of these"
)


def describe_type(value: Any) -> str:
    """The qualified type name of ``value`` for messages (``set``, ``numpy.ma.MaskedArray``)."""
    cls = type(value)
    module = getattr(cls, "__module__", "") or ""
    name = getattr(cls, "__qualname__", None) or getattr(cls, "__name__", "?")
    if module in ("builtins", ""):
        return truncate(str(name), MAX_NAME_CHARS)
    return truncate(f"{module}.{name}", 2 * MAX_NAME_CHARS)


def _encode_scalar(value: np.generic, path: str) -> dict[str, Any]:
    name = value.dtype.name
    if name not in DTYPES:
        raise UnencodableValue(
            path, f"a numpy {name} scalar cannot be sent; use one of {', '.join(DTYPES)} (or a Python number)"
        )
    if name == "bool":
        payload: Any = bool(value)
    elif name.startswith("int"):
        payload = int(value)
    else:
        payload = float(value).hex()
    return {"t": "scalar", "dtype": name, "v": payload}


def _encode_array(value: np.ndarray, path: str) -> dict[str, Any]:
    if type(value) is not np.ndarray:
        raise UnencodableValue(path, f"a {describe_type(value)} cannot be sent; convert it with numpy.asarray")
    name = value.dtype.name
    if name not in DTYPES:
        raise UnencodableValue(path, f"a numpy array of dtype {name} cannot be sent; use one of {', '.join(DTYPES)}")
    if value.ndim > MAX_ARRAY_DIMS:
        raise UnencodableValue(path, f"the array has {value.ndim} dimensions; at most {MAX_ARRAY_DIMS} can be sent")
    if value.size > MAX_ARRAY_ELEMENTS:
        raise UnencodableValue(path, f"the array has {value.size} elements; at most {MAX_ARRAY_ELEMENTS} can be sent")
    raw = np.ascontiguousarray(value, dtype=np.dtype(DTYPES[name])).tobytes(order="C")
    return {
        "t": "ndarray",
        "dtype": name,
        "shape": [int(n) for n in value.shape],
        "data": base64.b64encode(raw).decode("ascii"),
    }


def _check_count(count: int, path: str, error: type[ProtocolError]) -> None:
    if count > MAX_CONTAINER_ITEMS:
        raise error(path, f"{count} entries; at most {MAX_CONTAINER_ITEMS} can be sent")


def _encode_sequence(value: Sequence[Any], *, request: bool, path: str, depth: int) -> Any:
    _check_count(len(value), path, UnencodableValue)
    tape_node = _tape_node_class()
    if value and tape_node is not None and all(isinstance(item, tape_node) for item in value):
        return {
            "t": "tape",
            "nodes": [_encode_node(node, request, f"{path}[{i}]", depth) for i, node in enumerate(value)],
        }
    items = [encode_value(item, request=request, path=f"{path}[{i}]", _depth=depth + 1) for i, item in enumerate(value)]
    if isinstance(value, tuple):
        return {"t": "tuple", "v": items}
    return items


def _encode_node(node: Any, request: bool, path: str, depth: int) -> dict[str, Any]:
    encoded_value = encode_value(node.value, request=request, path=f"{path}.value", _depth=depth + 2)
    parents = node.parents
    if not isinstance(parents, list | tuple):
        raise UnencodableValue(
            f"{path}.parents",
            f"parents is a {describe_type(parents)}; a tape node needs a sequence of (index, derivative) pairs",
        )
    _check_count(len(parents), f"{path}.parents", UnencodableValue)
    pairs = []
    for j, edge in enumerate(parents):
        edge_path = f"{path}.parents[{j}]"
        if not isinstance(edge, list | tuple) or len(edge) != 2:
            raise UnencodableValue(edge_path, "each parent entry must be a pair (parent_index, local_derivative)")
        pairs.append(
            [
                encode_value(edge[0], request=request, path=f"{edge_path}[0]", _depth=depth + 3),
                encode_value(edge[1], request=request, path=f"{edge_path}[1]", _depth=depth + 3),
            ]
        )
    return {"value": encoded_value, "parents": pairs}


def _encode_dict(value: dict[Any, Any], *, request: bool, path: str, depth: int) -> dict[str, Any]:
    _check_count(len(value), path, UnencodableValue)
    out: dict[str, Any] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise UnencodableValue(
                path,
                f"the dict has a key {truncate(repr(key), 60)} of type {describe_type(key)}; only str keys can be sent",
            )
        if len(key) > MAX_STR_CHARS:
            raise UnencodableValue(path, f"a dict key has {len(key)} characters; at most {MAX_STR_CHARS}")
        out[str(key)] = encode_value(item, request=request, path=f"{path}[{_key_repr(key)}]", _depth=depth + 1)
    return {"t": "dict", "v": out}


def _key_repr(key: str) -> str:
    return json.dumps(truncate(key, 40))


def _encode_record(type_name: str, items: Any, *, request: bool, path: str, depth: int) -> dict[str, Any]:
    type_name = truncate(str(type_name), MAX_NAME_CHARS)
    if not _NAME.match(type_name):
        raise UnencodableValue(path, f"the dataclass name {type_name!r} is not a Python identifier")
    fields: dict[str, Any] = {}
    for name, item in items:
        fields[name] = encode_value(item, request=request, path=f"{path}.fields.{name}", _depth=depth + 1)
    _check_count(len(fields), f"{path}.fields", UnencodableValue)
    return {"t": "record", "type": type_name, "fields": fields}


def _encode_chain(chain: Any, path: str) -> dict[str, Any]:
    return {
        "t": "chain",
        "weights": [_encode_float(w) for w in chain.weights],
        "biases": [_encode_float(b) for b in chain.biases],
        "random_layer": _encode_int(int(chain.random_layer), f"{path}.random_layer"),
        "noise_scale": _encode_float(chain.noise_scale),
        "width": _encode_int(int(chain.width), f"{path}.width"),
    }


# --------------------------------------------------------------------------- decoding


def _expect_keys(obj: dict[str, Any], keys: set[str], path: str) -> None:
    if set(obj) != keys:
        missing = sorted(keys - set(obj))
        extra = sorted(set(obj) - keys)
        parts = []
        if missing:
            parts.append("missing " + ", ".join(missing))
        if extra:
            parts.append("unexpected " + ", ".join(truncate(k, 40) for k in extra[:5]))
        raise ProtocolError(path, f"malformed {obj.get('t', 'object')!s:.40} entry ({'; '.join(parts)})")


def _decode_int(obj: Any, path: str) -> int:
    if type(obj) is not int:
        raise ProtocolError(path, f"expected an integer, got {_json_kind(obj)}")
    if not -_INT_LIMIT < obj < _INT_LIMIT:
        raise ProtocolError(path, f"integer out of range (more than {MAX_INT_BITS} bits)")
    return obj


def _decode_hex(obj: Any, path: str) -> float:
    if not isinstance(obj, str) or len(obj) > 40 or not _HEX_FLOAT.match(obj):
        raise ProtocolError(path, f"expected a float in hex notation, got {_json_kind(obj)}")
    try:
        return float.fromhex(obj)
    except (OverflowError, ValueError):
        raise ProtocolError(path, "float out of range") from None


def _decode_float(obj: Any, path: str) -> float:
    if not isinstance(obj, dict) or obj.get("t") != "float":
        raise ProtocolError(path, f"expected a float, got {_json_kind(obj)}")
    _expect_keys(obj, {"t", "v"}, path)
    return _decode_hex(obj["v"], f"{path}.v")


def _json_kind(obj: Any) -> str:
    if obj is None:
        return "null"
    if isinstance(obj, bool):
        return "a boolean"
    if isinstance(obj, int):
        return "an integer"
    if isinstance(obj, str):
        return "a string"
    if isinstance(obj, list):
        return "an array"
    if isinstance(obj, dict):
        tag = obj.get("t")
        return f"an object tagged {truncate(tag, 40)!r}" if isinstance(tag, str) else "an untagged object"
    return type(obj).__name__


def decode_value(obj: Any, *, request: bool = False, path: str = "value", _depth: int = 0) -> Any:
    """The Python value of the JSON form ``obj``; the inverse of :func:`encode_value`.

    Args:
        obj: parsed JSON (as returned by :func:`loads_message`).
        request: True in the worker decoding call arguments: the constructor
            tags ``rng`` and ``chain`` are accepted and built. False (replies
            on the trusted side): they are refused.
        path: name of ``obj`` in error messages.

    Returns:
        None, bool, int, float, str, list, tuple, dict, numpy scalar, numpy
        array (a fresh writable copy), list of TapeNode, :class:`Record`, and in
        requests also ``numpy.random.Generator`` or ``StochasticChain``.

    Raises:
        ProtocolError: unknown tag, wrong JSON type, missing or extra keys, a
            size cap exceeded, or an inconsistent array; names the location.
    """
    if _depth > MAX_DEPTH:
        raise ProtocolError(path, f"values nest deeper than {MAX_DEPTH} levels")
    if obj is None or isinstance(obj, bool):
        return obj
    if isinstance(obj, int):
        return _decode_int(obj, path)
    if isinstance(obj, str):
        if len(obj) > MAX_STR_CHARS:
            raise ProtocolError(path, f"string longer than {MAX_STR_CHARS} characters")
        return obj
    if isinstance(obj, list):
        _check_count(len(obj), path, ProtocolError)
        return [
            decode_value(item, request=request, path=f"{path}[{i}]", _depth=_depth + 1) for i, item in enumerate(obj)
        ]
    if not isinstance(obj, dict):
        raise ProtocolError(path, f"unexpected JSON value {_json_kind(obj)}")
    tag = obj.get("t")
    if not isinstance(tag, str):
        raise ProtocolError(path, "an object without a type tag 't'")
    decoder = _DECODERS.get(tag)
    if decoder is None or (tag in _REQUEST_ONLY and not request):
        if tag in _REQUEST_ONLY:
            raise ProtocolError(path, f"a {tag!r} value may only be sent to the worker, not returned")
        raise ProtocolError(path, f"unknown type tag {truncate(tag, 40)!r}")
    return decoder(obj, request, path, _depth)


def _decode_tagged_float(obj: dict[str, Any], request: bool, path: str, depth: int) -> float:
    return _decode_float(obj, path)


def _decode_tuple(obj: dict[str, Any], request: bool, path: str, depth: int) -> tuple[Any, ...]:
    _expect_keys(obj, {"t", "v"}, path)
    items = obj["v"]
    if not isinstance(items, list):
        raise ProtocolError(f"{path}.v", f"expected an array, got {_json_kind(items)}")
    _check_count(len(items), path, ProtocolError)
    return tuple(
        decode_value(item, request=request, path=f"{path}[{i}]", _depth=depth + 1) for i, item in enumerate(items)
    )


def _decode_range(obj: dict[str, Any], request: bool, path: str, depth: int) -> range:
    _expect_keys(obj, {"t", "start", "stop", "step"}, path)
    start, stop, step = (_decode_int(obj[key], f"{path}.{key}") for key in ("start", "stop", "step"))
    if step == 0:
        raise ProtocolError(f"{path}.step", "a range's step cannot be 0")
    return range(start, stop, step)


def _decode_once(obj: dict[str, Any], request: bool, path: str, depth: int) -> Any:
    _expect_keys(obj, {"t", "v"}, path)
    items = obj["v"]
    if not isinstance(items, list):
        raise ProtocolError(f"{path}.v", f"expected an array, got {_json_kind(items)}")
    _check_count(len(items), path, ProtocolError)
    values = [
        decode_value(item, request=request, path=f"{path}[{i}]", _depth=depth + 1) for i, item in enumerate(items)
    ]
    return (value for value in values)


def _decode_dict(obj: dict[str, Any], request: bool, path: str, depth: int) -> dict[str, Any]:
    _expect_keys(obj, {"t", "v"}, path)
    items = obj["v"]
    if not isinstance(items, dict):
        raise ProtocolError(f"{path}.v", f"expected an object, got {_json_kind(items)}")
    _check_count(len(items), path, ProtocolError)
    return {
        key: decode_value(item, request=request, path=f"{path}[{_key_repr(key)}]", _depth=depth + 1)
        for key, item in items.items()
    }


def _decode_scalar(obj: dict[str, Any], request: bool, path: str, depth: int) -> np.generic:
    _expect_keys(obj, {"t", "dtype", "v"}, path)
    name = obj["dtype"]
    if not isinstance(name, str) or name not in DTYPES:
        raise ProtocolError(
            f"{path}.dtype", f"dtype must be one of {', '.join(DTYPES)}, got {truncate(str(name), 40)!r}"
        )
    payload = obj["v"]
    dtype = np.dtype(name)
    if name == "bool":
        if not isinstance(payload, bool):
            raise ProtocolError(f"{path}.v", f"expected a boolean, got {_json_kind(payload)}")
        return np.bool_(payload)
    if name.startswith("int"):
        number = _decode_int(payload, f"{path}.v")
        info = np.iinfo(dtype)
        if not info.min <= number <= info.max:
            raise ProtocolError(f"{path}.v", f"{number} does not fit in {name}")
        return dtype.type(number)
    value = _decode_hex(payload, f"{path}.v")
    scalar = dtype.type(value)
    if not (float(scalar) == value or (math.isnan(value) and math.isnan(float(scalar)))):
        raise ProtocolError(f"{path}.v", f"{payload} is not exactly representable in {name}")
    return scalar


def _decode_array(obj: dict[str, Any], request: bool, path: str, depth: int) -> np.ndarray:
    _expect_keys(obj, {"t", "dtype", "shape", "data"}, path)
    name = obj["dtype"]
    if not isinstance(name, str) or name not in DTYPES:
        raise ProtocolError(
            f"{path}.dtype", f"dtype must be one of {', '.join(DTYPES)}, got {truncate(str(name), 40)!r}"
        )
    shape = obj["shape"]
    if not isinstance(shape, list) or len(shape) > MAX_ARRAY_DIMS:
        raise ProtocolError(f"{path}.shape", f"expected a list of at most {MAX_ARRAY_DIMS} sizes")
    size = 1
    for i, extent in enumerate(shape):
        if type(extent) is not int or extent < 0:
            raise ProtocolError(f"{path}.shape[{i}]", "each size must be a non-negative integer")
        size *= extent
        if size > MAX_ARRAY_ELEMENTS:
            raise ProtocolError(f"{path}.shape", f"more than {MAX_ARRAY_ELEMENTS} elements")
    data = obj["data"]
    if not isinstance(data, str):
        raise ProtocolError(f"{path}.data", f"expected a base64 string, got {_json_kind(data)}")
    try:
        raw = base64.b64decode(data.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise ProtocolError(f"{path}.data", "not valid base64") from None
    wire = np.dtype(DTYPES[name])
    if len(raw) != size * wire.itemsize:
        raise ProtocolError(
            f"{path}.data", f"{len(raw)} bytes for shape {tuple(shape)} of {name} (expected {size * wire.itemsize})"
        )
    if name == "bool" and raw.strip(b"\x00\x01"):
        raise ProtocolError(f"{path}.data", "boolean array bytes must be 0 or 1")
    flat = np.frombuffer(raw, dtype=wire)
    return flat.astype(np.dtype(name), copy=True).reshape(tuple(shape))


def _decode_tape(obj: dict[str, Any], request: bool, path: str, depth: int) -> list[Any]:
    _expect_keys(obj, {"t", "nodes"}, path)
    nodes = obj["nodes"]
    if not isinstance(nodes, list) or not nodes:
        raise ProtocolError(f"{path}.nodes", "expected a non-empty array of nodes")
    _check_count(len(nodes), f"{path}.nodes", ProtocolError)
    tape_node = _tape_node_class()
    if tape_node is None:  # pragma: no cover
        raise ProtocolError(path, "trainable_harness is not installed here, so tapes cannot be decoded")
    out = []
    for i, node in enumerate(nodes):
        node_path = f"{path}.nodes[{i}]"
        if not isinstance(node, dict):
            raise ProtocolError(node_path, f"expected a node object, got {_json_kind(node)}")
        _expect_keys(node, {"value", "parents"}, node_path)
        value = decode_value(node["value"], request=request, path=f"{node_path}.value", _depth=depth + 2)
        parents = node["parents"]
        if not isinstance(parents, list):
            raise ProtocolError(f"{node_path}.parents", f"expected an array of pairs, got {_json_kind(parents)}")
        _check_count(len(parents), f"{node_path}.parents", ProtocolError)
        edges = []
        for j, edge in enumerate(parents):
            edge_path = f"{node_path}.parents[{j}]"
            if not isinstance(edge, list) or len(edge) != 2:
                raise ProtocolError(edge_path, "expected a pair [parent_index, local_derivative]")
            edges.append(
                (
                    decode_value(edge[0], request=request, path=f"{edge_path}[0]", _depth=depth + 3),
                    decode_value(edge[1], request=request, path=f"{edge_path}[1]", _depth=depth + 3),
                )
            )
        out.append(tape_node(value, tuple(edges)))
    return out


def _decode_record(obj: dict[str, Any], request: bool, path: str, depth: int) -> Record:
    _expect_keys(obj, {"t", "type", "fields"}, path)
    type_name = obj["type"]
    if not isinstance(type_name, str) or len(type_name) > MAX_NAME_CHARS or not _NAME.match(type_name):
        raise ProtocolError(f"{path}.type", "a record type must be a Python identifier")
    fields = obj["fields"]
    if not isinstance(fields, dict):
        raise ProtocolError(f"{path}.fields", f"expected an object, got {_json_kind(fields)}")
    _check_count(len(fields), f"{path}.fields", ProtocolError)
    decoded = {}
    for name, item in fields.items():
        if len(name) > MAX_NAME_CHARS or not _NAME.match(name):
            raise ProtocolError(f"{path}.fields", f"field name {truncate(name, 40)!r} is not a Python identifier")
        decoded[name] = decode_value(item, request=request, path=f"{path}.fields.{name}", _depth=depth + 1)
    return Record(type_name, decoded)


def _decode_rng(obj: dict[str, Any], request: bool, path: str, depth: int) -> np.random.Generator:
    _expect_keys(obj, {"t", "seed"}, path)
    seed = _decode_int(obj["seed"], f"{path}.seed")
    if seed < 0:
        raise ProtocolError(f"{path}.seed", "a seed must be non-negative")
    return np.random.default_rng(seed)


def _decode_chain(obj: dict[str, Any], request: bool, path: str, depth: int) -> Any:
    _expect_keys(obj, {"t", "weights", "biases", "random_layer", "noise_scale", "width"}, path)
    lists = {}
    for key in ("weights", "biases"):
        items = obj[key]
        if not isinstance(items, list) or not items or len(items) > MAX_CONTAINER_ITEMS:
            raise ProtocolError(f"{path}.{key}", "expected a non-empty array of floats")
        lists[key] = tuple(_decode_float(item, f"{path}.{key}[{i}]") for i, item in enumerate(items))
    random_layer = _decode_int(obj["random_layer"], f"{path}.random_layer")
    noise_scale = _decode_float(obj["noise_scale"], f"{path}.noise_scale")
    width = _decode_int(obj["width"], f"{path}.width")
    chain_class = _chain_class()
    if chain_class is None:  # pragma: no cover
        raise ProtocolError(path, "trainable_harness is not installed here, so chains cannot be built")
    try:
        return chain_class(
            weights=lists["weights"],
            biases=lists["biases"],
            random_layer=random_layer,
            noise_scale=noise_scale,
            width=width,
        )
    except ValueError as exc:
        raise ProtocolError(path, f"invalid chain: {exc}") from None


_DECODERS = {
    "float": _decode_tagged_float,
    "tuple": _decode_tuple,
    "dict": _decode_dict,
    "scalar": _decode_scalar,
    "ndarray": _decode_array,
    "tape": _decode_tape,
    "record": _decode_record,
    "rng": _decode_rng,
    "chain": _decode_chain,
    "range": _decode_range,
    "once": _decode_once,
}
_REQUEST_ONLY = frozenset({"rng", "chain", "once"})


def roundtrip(value: Any) -> Any:
    """``value`` as the trusted side would receive it from the worker.

    Suites pass reference results through this so that they compare like with
    like (a reference dataclass becomes a :class:`Record`, a tuple stays a
    tuple, numpy scalars keep their dtype).
    """
    return decode_value(encode_value(value, request=False), request=False)


# --------------------------------------------------------------------------- framing


def _reject_float(text: str) -> Any:
    raise ValueError(f"bare JSON number {truncate(text, 30)} (floats must be tagged)")


def _reject_constant(text: str) -> Any:
    raise ValueError(f"JSON constant {text} is not allowed")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {truncate(key, 40)!r}")
        out[key] = value
    return out


def dumps_message(message: Mapping[str, Any]) -> bytes:
    """One framed message: compact ASCII JSON plus ``\\n``.

    Raises:
        ProtocolError: the framed message exceeds :data:`MAX_MESSAGE_BYTES`.
    """
    text = json.dumps(message, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    data = text.encode("ascii") + b"\n"
    if len(data) > MAX_MESSAGE_BYTES:
        raise ProtocolError("message", f"{len(data)} bytes; at most {MAX_MESSAGE_BYTES} can be sent")
    return data


def loads_message(line: bytes) -> dict[str, Any]:
    """Parse one framed message (the trailing newline is optional) into a JSON object.

    Raises:
        ProtocolError: too long, not UTF-8, not strict JSON (bare floats,
            NaN, duplicate keys), or not an object.
    """
    if len(line) > MAX_MESSAGE_BYTES:
        raise ProtocolError("message", f"longer than {MAX_MESSAGE_BYTES} bytes")
    try:
        text = line.decode("utf-8")
        obj = json.loads(
            text,
            parse_float=_reject_float,
            parse_constant=_reject_constant,
            object_pairs_hook=_no_duplicates,
        )
    except UnicodeDecodeError:
        raise ProtocolError("message", "not valid UTF-8") from None
    except RecursionError:
        raise ProtocolError("message", "JSON nested too deeply") from None
    except ValueError as exc:
        raise ProtocolError("message", f"not valid JSON ({truncate(str(exc), 200)})") from None
    if not isinstance(obj, dict):
        raise ProtocolError("message", f"expected a JSON object, got {_json_kind(obj)}")
    return obj


# --------------------------------------------------------------------------- messages


@dataclass(frozen=True)
class CallRequest:
    """``fn(*args, **kwargs)`` as the worker decoded it.

    Top-level arguments may be :class:`Kept` (the worker substitutes its kept
    object); ``watch`` asks for the arguments as the call left them.
    """

    id: int
    fn: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    watch: bool = False


@dataclass(frozen=True)
class CallsRequest:
    """Several calls in one message, made in order (see :func:`make_calls`).

    Each call carries its own id (the message's id plus its position). ``budget_ms``:
    no call starts once that many milliseconds have passed since the worker read the
    message (``None``: no budget); ``stop_on_error``: no call starts after one whose
    reply is an error.
    """

    id: int
    calls: tuple[CallRequest, ...]
    budget_ms: int | None = None
    stop_on_error: bool = False


@dataclass(frozen=True)
class DefaultsRequest:
    """Asks for the default values the student's function ``fn`` declares."""

    id: int
    fn: str


@dataclass(frozen=True)
class KeepRequest:
    """Keep the decoded ``value`` in the worker under ``name`` (replacing any earlier one)."""

    id: int
    name: str
    value: Any


@dataclass(frozen=True)
class HelloRequest:
    """Asks the worker for its per-cell execution report."""

    id: int


@dataclass(frozen=True)
class ErrorInfo:
    """Why a call failed (see :data:`ERROR_KINDS`).

    ``type`` is the exception class name for ``exception``; ``where`` is a
    location in the student's code as the worker names it, ``cell N, line M``
    (N counts the code cells the worker received, from 0), or ``""``.
    """

    kind: str
    type: str
    message: str
    where: str = ""


@dataclass(frozen=True)
class CellOutcome:
    """What happened to one code cell when the worker executed the submission.

    ``status`` is ``ok``, ``error`` (the cell raised ``error_type`` with
    ``message``) or ``skipped`` (e.g. a cell magic that is not Python).
    ``index`` counts the code cells the worker received, from 0.
    """

    index: int
    status: str
    error_type: str = ""
    message: str = ""
    where: str = ""


@dataclass(frozen=True)
class Reply:
    """A decoded reply: exactly one of ``value`` (when ``ok``) or ``error``.

    ``args``/``kwargs`` are set only for a watched call: the arguments as the
    call left them, each decoded from its :func:`watch_form` (``None`` where an
    argument had no wire form). ``warnings`` too: the warnings the call emitted, in
    order, each ``"Category: message"`` (at most :data:`MAX_WARNINGS`, each truncated).
    """

    id: int
    ok: bool
    value: Any = None
    error: ErrorInfo | None = None
    args: tuple[Any, ...] | None = None
    kwargs: dict[str, Any] | None = None
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class HelloReply:
    """The worker's answer to hello: one outcome per code cell, in order."""

    id: int
    cells: tuple[CellOutcome, ...]


def _encode_argument(value: Any, path: str) -> Any:
    if isinstance(value, Kept):
        if not _NAME.match(value.name):
            raise UnencodableValue(path, f"{value.name!r} is not a Python identifier")
        return {"t": "kept", "name": value.name}
    return encode_value(value, request=True, path=path)


def _call_entry(fn: str, args: Sequence[Any], kwargs: Mapping[str, Any], watch: bool, path: str) -> dict[str, Any]:
    if not _NAME.match(fn):
        raise ProtocolError(f"{path}fn", f"{fn!r} is not a Python identifier")
    entry: dict[str, Any] = {
        "fn": fn,
        "args": [_encode_argument(a, f"{path}args[{i}]") for i, a in enumerate(args)],
        "kwargs": {k: _encode_argument(v, f"{path}kwargs.{k}") for k, v in kwargs.items()},
    }
    if watch:
        entry["watch"] = True
    return entry


def make_call(
    call_id: int, fn: str, args: Sequence[Any], kwargs: Mapping[str, Any], *, watch: bool = False
) -> bytes:
    """Frame a call request (grader side); arguments are encoded with ``request=True``.

    A top-level :class:`Kept` argument names an object the worker keeps;
    ``watch`` asks the worker to send the arguments back as the call left them.
    """
    return dumps_message({"id": call_id, "op": "call", **_call_entry(fn, args, kwargs, watch, "")})


def make_call_entry(fn: str, args: Sequence[Any], kwargs: Mapping[str, Any], *, watch: bool = False) -> bytes:
    """One call of a batch, encoded as for :func:`make_call`, as compact ASCII JSON (no newline).

    Raises:
        ProtocolError: an argument has no wire form, or the entry alone is larger than a message.
    """
    data = json.dumps(
        _call_entry(fn, args, kwargs, watch, ""), ensure_ascii=True, allow_nan=False, separators=(",", ":")
    ).encode("ascii")
    limit = MAX_MESSAGE_BYTES - CALLS_FRAME_BYTES
    if len(data) > limit:
        raise ProtocolError("message", f"{len(data)} bytes; at most {limit} can be sent in one call")
    return data


def make_calls(
    first_id: int, entries: Sequence[bytes], *, budget_ms: int | None = None, stop_on_error: bool = False
) -> bytes:
    """Frame a batch of calls (grader side) from entries made by :func:`make_call_entry`.

    The message is the one ``dumps_message`` would make of
    ``{"id", "op": "calls", "calls": [...], "budget_ms"?, "stop_on_error"?}``; the entries
    are joined as they are, so a caller can measure them first and split a long batch
    into messages of at most :data:`MAX_MESSAGE_BYTES` and :data:`MAX_CONTAINER_ITEMS` calls.

    Raises:
        ProtocolError: no entries, too many, or the framed message is too large.
        ValueError: ``budget_ms`` is negative.
    """
    if not 0 < len(entries) <= MAX_CONTAINER_ITEMS:
        raise ProtocolError("message.calls", f"a batch holds 1 to {MAX_CONTAINER_ITEMS} calls, not {len(entries)}")
    head = f'{{"id":{int(first_id)},"op":"calls"'.encode("ascii")
    if budget_ms is not None:
        if budget_ms < 0:
            raise ValueError(f"budget_ms must be >= 0, got {budget_ms}")
        head += b',"budget_ms":%d' % budget_ms
    if stop_on_error:
        head += b',"stop_on_error":true'
    data = head + b',"calls":[' + b",".join(entries) + b"]}\n"
    if len(data) > MAX_MESSAGE_BYTES:
        raise ProtocolError("message", f"{len(data)} bytes; at most {MAX_MESSAGE_BYTES} can be sent")
    return data


def make_defaults(call_id: int, fn: str) -> bytes:
    """Frame a defaults request (grader side): the reply's value is ``{parameter: default}``."""
    if not _NAME.match(fn):
        raise ProtocolError("fn", f"{fn!r} is not a Python identifier")
    return dumps_message({"id": call_id, "op": "defaults", "fn": fn})


def make_keep(call_id: int, name: str, value: Any) -> bytes:
    """Frame a keep request (grader side): the worker keeps the decoded ``value`` under ``name``."""
    if not _NAME.match(name):
        raise ProtocolError("name", f"{name!r} is not a Python identifier")
    return dumps_message({"id": call_id, "op": "keep", "name": name, "value": encode_value(value, request=True)})


def watch_form(value: Any) -> Any:
    """The wire form of a value the grader asks to see but that no function returned (worker side).

    Used for arguments after a watched call and for declared defaults. Values that
    travel in replies are encoded as such; a numpy ``Generator`` becomes a
    ``Generator`` record of its bit generator's state (so a suite can tell how far a
    call advanced it); anything else becomes an ``Unencodable`` record naming its type.
    """
    if isinstance(value, np.random.Generator):
        value = Record("Generator", {"state": value.bit_generator.state})
    try:
        return encode_value(value, request=False, path="argument")
    except ProtocolError:
        return encode_value(Record("Unencodable", {"type": describe_type(value)}), request=False)


def make_defaults_reply(call_id: int, defaults: Mapping[str, Any]) -> bytes:
    """Frame the reply to a defaults request (worker side): ``{parameter: watch_form(default)}``."""
    _check_count(len(defaults), "value", UnencodableValue)
    return dumps_message(
        {"id": call_id, "ok": True, "value": {"t": "dict", "v": {k: watch_form(v) for k, v in defaults.items()}}}
    )


def make_hello(call_id: int) -> bytes:
    """Frame a hello request."""
    return dumps_message({"id": call_id, "op": "hello"})


def make_ok(
    call_id: int,
    value: Any,
    *,
    args: Sequence[Any] | None = None,
    kwargs: Mapping[str, Any] | None = None,
    warnings: Sequence[str] = (),
) -> bytes:
    """Frame a successful reply (worker side); ``args``/``kwargs``/``warnings`` for a watched call.

    Raises:
        UnencodableValue: ``value`` has no wire form; its path starts at ``value``.
        ProtocolError: the framed reply is too large.
    """
    message: dict[str, Any] = {"id": call_id, "ok": True, "value": encode_value(value, request=False)}
    if args is not None or kwargs is not None:
        message["args"] = [watch_form(a) for a in args or ()]
        message["kwargs"] = {k: watch_form(v) for k, v in (kwargs or {}).items()}
        message["warnings"] = [truncate(str(w), MAX_WARNING_CHARS) for w in list(warnings)[:MAX_WARNINGS]]
    return dumps_message(message)


def make_error(call_id: int, kind: str, type_name: str, message: str, where: str = "") -> bytes:
    """Frame a failed reply; the message is truncated to :data:`MAX_ERROR_MESSAGE_CHARS`."""
    if kind not in ERROR_KINDS:
        raise ValueError(f"unknown error kind {kind!r}")
    return dumps_message(
        {
            "id": call_id,
            "ok": False,
            "error": {
                "kind": kind,
                "type": truncate(type_name, MAX_NAME_CHARS),
                "message": truncate(message, MAX_ERROR_MESSAGE_CHARS),
                "where": truncate(where, MAX_NAME_CHARS),
            },
        }
    )


def make_hello_reply(call_id: int, cells: Sequence[CellOutcome]) -> bytes:
    """Frame the worker's execution report."""
    return dumps_message(
        {
            "id": call_id,
            "ok": True,
            "cells": [
                {
                    "index": c.index,
                    "status": c.status,
                    "type": truncate(c.error_type, MAX_NAME_CHARS),
                    "message": truncate(c.message, MAX_ERROR_MESSAGE_CHARS),
                    "where": truncate(c.where, MAX_NAME_CHARS),
                }
                for c in cells
            ],
        }
    )


def _message_id(message: Mapping[str, Any]) -> int:
    call_id = message.get("id")
    if type(call_id) is not int or not 0 <= call_id < 2**53:
        raise ProtocolError("message.id", "expected a non-negative integer id")
    return call_id


def _decode_argument(obj: Any, path: str) -> Any:
    if isinstance(obj, dict) and obj.get("t") == "kept":
        _expect_keys(obj, {"t", "name"}, path)
        name = obj["name"]
        if not isinstance(name, str) or len(name) > MAX_NAME_CHARS or not _NAME.match(name):
            raise ProtocolError(f"{path}.name", "expected a Python identifier")
        return Kept(name)
    return decode_value(obj, request=True, path=path)


def parse_request(
    message: Mapping[str, Any],
) -> CallRequest | CallsRequest | HelloRequest | KeepRequest | DefaultsRequest:
    """Decode a request (worker side), building rng and chain arguments.

    Top-level ``kept`` arguments decode to :class:`Kept` markers, which the
    worker replaces by the objects it keeps.

    Raises:
        ProtocolError: the request is malformed.
    """
    call_id = _message_id(message)
    op = message.get("op")
    if op == "hello":
        _expect_keys(dict(message), {"id", "op"}, "message")
        return HelloRequest(call_id)
    if op == "defaults":
        _expect_keys(dict(message), {"id", "op", "fn"}, "message")
        fn = message["fn"]
        if not isinstance(fn, str) or len(fn) > MAX_NAME_CHARS or not _NAME.match(fn):
            raise ProtocolError("message.fn", "expected a Python identifier")
        return DefaultsRequest(call_id, fn)
    if op == "keep":
        _expect_keys(dict(message), {"id", "op", "name", "value"}, "message")
        name = message["name"]
        if not isinstance(name, str) or len(name) > MAX_NAME_CHARS or not _NAME.match(name):
            raise ProtocolError("message.name", "expected a Python identifier")
        return KeepRequest(call_id, name, decode_value(message["value"], request=True, path="value"))
    if op == "calls":
        return _parse_calls(call_id, message)
    if op != "call":
        raise ProtocolError("message.op", f"unknown operation {truncate(str(op), 40)!r}")
    return _parse_call(call_id, message, {"id", "op"}, "message")


def _parse_call(call_id: int, fields: Mapping[str, Any], framing: set[str], path: str) -> CallRequest:
    """One call's ``fn``, ``args``, ``kwargs`` and ``watch`` (``framing``: the other keys allowed)."""
    watch = fields.get("watch", False)
    if watch is not True and "watch" in fields:
        raise ProtocolError(f"{path}.watch", "expected true (or no watch key)")
    _expect_keys(dict(fields), framing | {"fn", "args", "kwargs"} | ({"watch"} if watch else set()), path)
    fn = fields["fn"]
    if not isinstance(fn, str) or len(fn) > MAX_NAME_CHARS or not _NAME.match(fn):
        raise ProtocolError(f"{path}.fn", "expected a Python identifier")
    args = fields["args"]
    kwargs = fields["kwargs"]
    if not isinstance(args, list):
        raise ProtocolError(f"{path}.args", "expected an array")
    if not isinstance(kwargs, dict):
        raise ProtocolError(f"{path}.kwargs", "expected an object")
    for key in kwargs:
        if not _NAME.match(key):
            raise ProtocolError(f"{path}.kwargs", f"{truncate(key, 40)!r} is not a Python identifier")
    # Argument paths are relative to the call, as make_call names them (args[0], kwargs.x).
    prefix = "" if path == "message" else f"{path}."
    return CallRequest(
        id=call_id,
        fn=fn,
        args=tuple(_decode_argument(a, f"{prefix}args[{i}]") for i, a in enumerate(args)),
        kwargs={k: _decode_argument(v, f"{prefix}kwargs.{k}") for k, v in kwargs.items()},
        watch=watch,
    )


def _parse_calls(call_id: int, message: Mapping[str, Any]) -> CallsRequest:
    keys = {"id", "op", "calls"} | ({"budget_ms"} & set(message)) | ({"stop_on_error"} & set(message))
    _expect_keys(dict(message), keys, "message")
    stop_on_error = message.get("stop_on_error", False)
    if stop_on_error is not True and "stop_on_error" in message:
        raise ProtocolError("message.stop_on_error", "expected true (or no stop_on_error key)")
    budget_ms = message.get("budget_ms")
    if budget_ms is not None and (type(budget_ms) is not int or not 0 <= budget_ms < 2**53):
        raise ProtocolError("message.budget_ms", "expected a non-negative integer")
    calls = message["calls"]
    if not isinstance(calls, list) or not 0 < len(calls) <= MAX_CONTAINER_ITEMS:
        raise ProtocolError("message.calls", f"expected an array of 1 to {MAX_CONTAINER_ITEMS} calls")
    if call_id + len(calls) > 2**53:
        raise ProtocolError("message.id", "the calls' ids would run past 2**53")
    decoded = []
    for i, entry in enumerate(calls):
        if not isinstance(entry, dict):
            raise ProtocolError(f"message.calls[{i}]", f"expected an object, got {_json_kind(entry)}")
        decoded.append(_parse_call(call_id + i, entry, set(), f"message.calls[{i}]"))
    return CallsRequest(call_id, tuple(decoded), budget_ms, stop_on_error is True)


def _bounded_str(obj: Any, path: str, limit: int) -> str:
    if not isinstance(obj, str):
        raise ProtocolError(path, f"expected a string, got {_json_kind(obj)}")
    return truncate(obj, limit)


def parse_reply(message: Mapping[str, Any]) -> Reply | HelloReply:
    """Decode a reply (trusted side). Values are decoded with ``request=False``.

    Over-long error texts are truncated rather than refused; everything else
    that deviates from the format raises.

    Raises:
        ProtocolError: the reply is malformed; the path names the place.
    """
    call_id = _message_id(message)
    ok = message.get("ok")
    if ok is True and "cells" in message:
        _expect_keys(dict(message), {"id", "ok", "cells"}, "message")
        cells = message["cells"]
        if not isinstance(cells, list) or len(cells) > MAX_CONTAINER_ITEMS:
            raise ProtocolError("message.cells", "expected an array of cell outcomes")
        outcomes = []
        for i, cell in enumerate(cells):
            path = f"message.cells[{i}]"
            if not isinstance(cell, dict):
                raise ProtocolError(path, "expected an object")
            _expect_keys(cell, {"index", "status", "type", "message", "where"}, path)
            index = _decode_int(cell["index"], f"{path}.index")
            status = cell["status"]
            if status not in _CELL_STATUSES:
                raise ProtocolError(f"{path}.status", f"expected one of {', '.join(_CELL_STATUSES)}")
            outcomes.append(
                CellOutcome(
                    index=index,
                    status=status,
                    error_type=_bounded_str(cell["type"], f"{path}.type", MAX_NAME_CHARS),
                    message=_bounded_str(cell["message"], f"{path}.message", MAX_ERROR_MESSAGE_CHARS),
                    where=_bounded_str(cell["where"], f"{path}.where", MAX_NAME_CHARS),
                )
            )
        return HelloReply(call_id, tuple(outcomes))
    if ok is True and ("args" in message or "kwargs" in message):
        _expect_keys(dict(message), {"id", "ok", "value", "args", "kwargs", "warnings"}, "message")
        args, kwargs, warned = message["args"], message["kwargs"], message["warnings"]
        if not isinstance(warned, list) or len(warned) > MAX_WARNINGS:
            raise ProtocolError("message.warnings", f"expected an array of at most {MAX_WARNINGS} strings")
        if not isinstance(args, list) or len(args) > MAX_CONTAINER_ITEMS:
            raise ProtocolError("message.args", "expected an array")
        if not isinstance(kwargs, dict) or not all(_NAME.match(k) for k in kwargs):
            raise ProtocolError("message.kwargs", "expected an object keyed by identifiers")
        return Reply(
            call_id,
            True,
            value=decode_value(message["value"], request=False),
            args=tuple(decode_value(a, request=False, path=f"message.args[{i}]") for i, a in enumerate(args)),
            kwargs={k: decode_value(v, request=False, path=f"message.kwargs.{k}") for k, v in kwargs.items()},
            warnings=tuple(
                _bounded_str(w, f"message.warnings[{i}]", MAX_WARNING_CHARS) for i, w in enumerate(warned)
            ),
        )
    if ok is True:
        _expect_keys(dict(message), {"id", "ok", "value"}, "message")
        return Reply(call_id, True, value=decode_value(message["value"], request=False))
    if ok is False:
        _expect_keys(dict(message), {"id", "ok", "error"}, "message")
        error = message["error"]
        if not isinstance(error, dict):
            raise ProtocolError("message.error", "expected an object")
        _expect_keys(error, {"kind", "type", "message", "where"}, "message.error")
        kind = error["kind"]
        if kind not in ERROR_KINDS:
            raise ProtocolError("message.error.kind", f"expected one of {', '.join(ERROR_KINDS)}")
        return Reply(
            call_id,
            False,
            error=ErrorInfo(
                kind=kind,
                type=_bounded_str(error["type"], "message.error.type", MAX_NAME_CHARS),
                message=_bounded_str(error["message"], "message.error.message", MAX_ERROR_MESSAGE_CHARS),
                where=_bounded_str(error["where"], "message.error.where", MAX_NAME_CHARS),
            ),
        )
    raise ProtocolError("message.ok", "expected true or false")
