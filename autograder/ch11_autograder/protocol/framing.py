"""One message per line: strict ASCII JSON in, strict JSON out, at most ``MAX_MESSAGE_BYTES``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .decoding import _json_kind
from .values import MAX_MESSAGE_BYTES, ProtocolError, truncate


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
