"""Python values to their JSON wire form (``encode_value``), strictly, with caps and a path in every refusal."""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from .values import (
    _INT_LIMIT,
    _NAME,
    DTYPES,
    MAX_ARRAY_DIMS,
    MAX_ARRAY_ELEMENTS,
    MAX_DEPTH,
    MAX_INT_BITS,
    MAX_NAME_CHARS,
    MAX_STR_CHARS,
    Laid,
    Once,
    ProtocolError,
    Record,
    RngSeed,
    UnencodableValue,
    _check_count,
    truncate,
)


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
    if isinstance(value, Laid):
        if not request:
            raise UnencodableValue(path, "an array layout can only be sent to the worker, not returned")
        encoded = _encode_array(np.asarray(value.values), path)
        encoded["layout"] = {"order": value.order, "view": value.view, "writeable": value.writeable}
        return encoded
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
