"""JSON wire forms back to Python values (``decode_value``): strict, capped, never a class the sender names."""

from __future__ import annotations

import base64
import binascii
import math
from typing import Any

import numpy as np

from .encoding import _chain_class, _key_repr, _tape_node_class
from .values import (
    _HEX_FLOAT,
    _INT_LIMIT,
    _NAME,
    DTYPES,
    MAX_ARRAY_DIMS,
    MAX_ARRAY_ELEMENTS,
    MAX_CONTAINER_ITEMS,
    MAX_DEPTH,
    MAX_INT_BITS,
    MAX_NAME_CHARS,
    MAX_STR_CHARS,
    ProtocolError,
    Record,
    _check_count,
    lay_out,
    layout_problem,
    truncate,
)


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


_ARRAY_KEYS = frozenset({"t", "dtype", "shape", "data"})
_LAID_ARRAY_KEYS = _ARRAY_KEYS | {"layout"}
_LAYOUT_KEYS = frozenset({"order", "view", "writeable"})


def _decode_array(obj: dict[str, Any], request: bool, path: str, depth: int) -> np.ndarray:
    layout = obj.get("layout")
    if layout is not None and not request:
        raise ProtocolError(f"{path}.layout", "an array layout may only be sent to the worker, not returned")
    _expect_keys(obj, set(_ARRAY_KEYS if layout is None else _LAID_ARRAY_KEYS), path)
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
    values = flat.astype(np.dtype(name), copy=True).reshape(tuple(shape))
    if layout is None:
        return values
    if not isinstance(layout, dict):
        raise ProtocolError(f"{path}.layout", f"expected an object, got {_json_kind(layout)}")
    _expect_keys(layout, set(_LAYOUT_KEYS), f"{path}.layout")
    order, view, writeable = layout["order"], layout["view"], layout["writeable"]
    problem = layout_problem(len(shape), size, order, view, writeable)
    if problem:
        raise ProtocolError(f"{path}.layout", problem)
    return lay_out(values, order, view, writeable)


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
