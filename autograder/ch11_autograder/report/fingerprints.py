"""Winnowed fingerprints of Python source, over Python's own tokenizer (Schleimer, Wilkerson and Aiken,
"Winnowing: local algorithms for document fingerprinting", SIGMOD 2003: the method of MOSS).

:func:`fingerprints` reads a cell's source as tokens (:mod:`tokenize`, so a cell that does not parse still
gives the tokens before the error), normalized so that cosmetic changes do not count:

* comments, blank lines and docstrings (a string that is a statement by itself) are dropped;
* every name that is not a keyword, a builtin or an attribute (the name after a ``.``) becomes ``V``, so
  renamed variables and functions match; ``np.sum`` stays ``V.sum``, ``len`` stays ``len``;
* every string literal becomes ``S``; numbers and operators stay as written.

Every run of :data:`K` consecutive tokens is hashed (a polynomial hash over each token's stable 64-bit
digest: the same source gives the same fingerprints in every process, unlike Python's salted ``hash()``),
and winnowing keeps the rightmost smallest hash of every :data:`WINDOW` consecutive ones: any run of
``K + WINDOW - 1`` tokens two sources share gives both at least one common fingerprint, and a source of n
tokens has about ``2n / (WINDOW + 1)`` of them.

Each fingerprint keeps the source lines its tokens span, so a report can mark the lines two answers share.
"""

from __future__ import annotations

import builtins
import hashlib
import io
import keyword
import tokenize
from collections.abc import Mapping

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

__all__ = ["WINDOW", "Fingerprints", "K", "fingerprints", "normalized_tokens"]

#: Tokens per fingerprinted run (k-gram).
K = 8
#: Winnowing window, in k-grams.
WINDOW = 4
#: Multiplier of the polynomial hash (odd, so multiplication mod 2**64 loses no bits).
_BASE = np.uint64(0x9E3779B97F4A7C15)
#: Names that stay as written: keywords and builtins (every other name, not after a ``.``, becomes ``V``).
_KEPT_NAMES = frozenset(dir(builtins)) | frozenset(keyword.kwlist) | frozenset(keyword.softkwlist)
#: Token types written as one fixed text.
_FIXED = {tokenize.STRING: "S", tokenize.NEWLINE: ";", tokenize.INDENT: "{", tokenize.DEDENT: "}"}
_DROPPED = frozenset({tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER, tokenize.TYPE_COMMENT})
_STATEMENT_START = frozenset({tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT})

#: hash -> (first line, last line) of each place its tokens were found (1-based lines of the source).
Fingerprints = Mapping[int, tuple[tuple[int, int], ...]]


def normalized_tokens(source: str) -> list[tuple[str, int]]:
    """``(token, line)`` of ``source`` as :func:`fingerprints` compares them (see the module)."""
    out: list[tuple[str, int]] = []
    append = out.append
    previous = tokenize.NEWLINE  # the type of the last significant token (a statement starts the source)
    last_text = ""
    held: tuple[str, int] | None = None  # a string that starts a statement: a docstring if the statement ends
    try:
        for kind, text, (line, _), _, _ in tokenize.generate_tokens(io.StringIO(source).readline):
            if kind in _DROPPED:
                continue
            if held is not None:
                if kind == tokenize.NEWLINE:  # a docstring or a bare string: words, not code (its NEWLINE too)
                    held, previous, last_text = None, tokenize.NEWLINE, ""
                    continue
                append(held)
                held = None
            if kind == tokenize.NAME:
                append((text if text in _KEPT_NAMES or last_text == "." else "V", line))
            elif kind == tokenize.STRING and previous in _STATEMENT_START:
                held = ("S", line)
            else:
                append((_FIXED.get(kind, text), line))
            previous, last_text = kind, text
    except (tokenize.TokenError, SyntaxError):  # unfinished or mis-indented: the tokens before it still count
        pass
    return out


_IDS: dict[str, int] = {}


def _token_id(text: str) -> int:
    """A stable 64-bit id of a normalized token (kept: there are few distinct ones; numbers and attributes bound
    the rest by the class's code)."""
    found = _IDS.get(text)
    if found is None:
        found = int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(),
                               "little")
        if len(_IDS) < 1 << 20:
            _IDS[text] = found
    return found


def fingerprints(source: str, k: int = K, window: int = WINDOW) -> dict[int, tuple[tuple[int, int], ...]]:
    """The winnowed fingerprints of ``source``: hash -> the line spans where its k-gram occurs (see the module).

    A source of fewer than ``k`` tokens has none."""
    tokens = normalized_tokens(source)
    n = len(tokens) - k + 1
    if n <= 0:
        return {}
    ids = np.fromiter((_token_id(text) for text, _ in tokens), dtype=np.uint64, count=len(tokens))
    hashes = np.zeros(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(k):
            hashes = hashes * _BASE + ids[j:j + n]
    if n <= window:
        chosen = np.array([n - 1 - int(np.argmin(hashes[::-1]))])
    else:
        windows = sliding_window_view(hashes, window)
        # The rightmost minimum of each window (robust winnowing): ties keep the later position.
        chosen = np.unique(np.arange(len(windows)) + (window - 1 - np.argmin(windows[:, ::-1], axis=1)))
    lines = [line for _, line in tokens]
    spans: dict[int, list[tuple[int, int]]] = {}
    for position in chosen.tolist():
        spans.setdefault(int(hashes[position]), []).append((lines[position], lines[position + k - 1]))
    return {h: tuple(s) for h, s in spans.items()}
