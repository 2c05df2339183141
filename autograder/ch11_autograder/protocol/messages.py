"""The messages: requests the grader sends, replies the worker sends, each made and parsed here."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .decoding import _decode_int, _expect_keys, _json_kind, decode_value
from .encoding import encode_value, watch_form
from .framing import dumps_message
from .values import (
    _CELL_STATUSES,
    _NAME,
    CALLS_FRAME_BYTES,
    ERROR_KINDS,
    MAX_CONTAINER_ITEMS,
    MAX_ERROR_MESSAGE_CHARS,
    MAX_MESSAGE_BYTES,
    MAX_NAME_CHARS,
    MAX_WARNING_CHARS,
    MAX_WARNINGS,
    Kept,
    ProtocolError,
    UnencodableValue,
    _check_count,
    truncate,
)


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

    ``type`` is the exception class name for ``exception``, and for ``unencodable`` the
    qualified type name of the value the function returned (no exception was raised;
    ``message`` then says what of it cannot be sent); ``where`` is a
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
