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
import functools
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
_BUILTINS = frozenset(dir(builtins))
_DROPPED = frozenset({tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER, tokenize.TYPE_COMMENT})
_STATEMENT_START = frozenset({tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT})

#: hash -> (first line, last line) of each place its tokens were found (1-based lines of the source).
Fingerprints = Mapping[int, tuple[tuple[int, int], ...]]


def normalized_tokens(source: str) -> list[tuple[str, int]]:
    """``(token, line)`` of ``source`` as :func:`fingerprints` compares them (see the module)."""
    raw: list[tokenize.TokenInfo] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            raw.append(tok)
    except (tokenize.TokenError, SyntaxError):  # unfinished or mis-indented: the tokens before it still count
        pass
    out: list[tuple[str, int]] = []
    previous = tokenize.NEWLINE  # the type of the last significant token (a statement starts the source)
    last_text = ""
    dropped_statement = False
    for index, tok in enumerate(raw):
        if tok.type in _DROPPED:
            continue
        if tok.type == tokenize.STRING and previous in _STATEMENT_START and _ends_statement(raw, index):
            dropped_statement = True  # a docstring or a bare string: words, not code (its NEWLINE goes too)
            continue
        if dropped_statement:
            dropped_statement = False
            if tok.type == tokenize.NEWLINE:
                continue
        if tok.type == tokenize.NAME:
            text = tok.string if (keyword.iskeyword(tok.string) or keyword.issoftkeyword(tok.string)
                                  or tok.string in _BUILTINS or last_text == ".") else "V"
        elif tok.type == tokenize.STRING:
            text = "S"
        elif tok.type == tokenize.NEWLINE:
            text = ";"
        elif tok.type == tokenize.INDENT:
            text = "{"
        elif tok.type == tokenize.DEDENT:
            text = "}"
        else:
            text = tok.string
        out.append((text, tok.start[0]))
        previous, last_text = tok.type, tok.string
    return out


def _ends_statement(raw: list[tokenize.TokenInfo], index: int) -> bool:
    """Whether the string token at ``index`` is followed directly by the end of its statement."""
    for tok in raw[index + 1:]:
        if tok.type in (tokenize.COMMENT, tokenize.NL):
            continue
        return tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER)
    return True


@functools.lru_cache(maxsize=65536)
def _token_id(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")


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
