"""The typed JSON wire format between the trusted grader and the verdict worker.

The worker runs student code inside the sandbox; the grader calls student
functions through it. Everything the worker sends is hostile data, so this
module has one job: turn Python values into a small, closed set of JSON shapes
and back, strictly, with size caps, and with an error that names *where* in a
value something was wrong (``value[2].fields.x``).

This package is self-contained: it imports only the standard library and numpy
(and, lazily, ``trainable_harness`` for tapes and chains), and its modules import
each other only relatively. The sandbox shows its ``.py`` files to the worker next to
the runtime scripts, which load it by path under a private name (see
``ch11_autograder.untrusted.launch.RUNTIME_READONLY_PATHS``); it must never import
anything else of ``ch11_autograder``. Modules: ``values`` (limits, errors, the value
types, ``wire_equal``), ``encoding``, ``decoding``, ``framing``, ``messages``; every
public name is imported here, so ``from ch11_autograder.protocol import X`` is the way in.
How the grader compares a reference value with a student's (``roundtrip``) is the
grader's own: ``ch11_autograder.trusted.roundtrip``.

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

    Also only in requests, an ``ndarray`` may carry a fourth key,
    ``"layout":{"order":"C"|"F","view":"none"|"transposed"|"strided","writeable":b}``
    (from :class:`Laid`): the worker builds the array in that memory layout
    (``lay_out``: a Fortran-ordered buffer, a transposed view, every other element
    of a buffer twice as long, a read-only view), so a student's function meets
    every layout numpy gives. The data still travels in C order; a plain array
    (C, no view, writeable) is sent without the key, which is refused there, and
    an unknown order or view, a transposed view of fewer than two dimensions or a
    strided buffer over the element cap are refused.

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

from .decoding import decode_value
from .encoding import describe_type, encode_value, watch_form
from .framing import dumps_message, loads_message
from .messages import (
    CallRequest,
    CallsRequest,
    CellOutcome,
    DefaultsRequest,
    ErrorInfo,
    HelloReply,
    HelloRequest,
    KeepRequest,
    Reply,
    make_call,
    make_call_entry,
    make_calls,
    make_defaults,
    make_defaults_reply,
    make_error,
    make_hello,
    make_hello_reply,
    make_keep,
    make_ok,
    parse_reply,
    parse_request,
)
from .values import (
    CALLS_FRAME_BYTES,
    DTYPES,
    ERROR_KINDS,
    MAX_ARRAY_DIMS,
    MAX_ARRAY_ELEMENTS,
    MAX_CONTAINER_ITEMS,
    MAX_DEPTH,
    MAX_ERROR_MESSAGE_CHARS,
    MAX_INT_BITS,
    MAX_MESSAGE_BYTES,
    MAX_NAME_CHARS,
    MAX_STR_CHARS,
    MAX_WARNING_CHARS,
    MAX_WARNINGS,
    Kept,
    Laid,
    Once,
    ProtocolError,
    Record,
    RngSeed,
    UnencodableValue,
    truncate,
    wire_equal,
)

__all__ = [
    "CALLS_FRAME_BYTES",
    "DTYPES",
    "ERROR_KINDS",
    "MAX_ARRAY_DIMS",
    "MAX_ARRAY_ELEMENTS",
    "MAX_CONTAINER_ITEMS",
    "MAX_DEPTH",
    "MAX_ERROR_MESSAGE_CHARS",
    "MAX_INT_BITS",
    "MAX_MESSAGE_BYTES",
    "MAX_NAME_CHARS",
    "MAX_STR_CHARS",
    "MAX_WARNINGS",
    "MAX_WARNING_CHARS",
    "CallRequest",
    "CallsRequest",
    "CellOutcome",
    "DefaultsRequest",
    "ErrorInfo",
    "HelloReply",
    "HelloRequest",
    "KeepRequest",
    "Kept",
    "Laid",
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
    "truncate",
    "watch_form",
    "wire_equal",
]
