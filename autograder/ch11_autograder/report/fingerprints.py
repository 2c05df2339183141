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

The tokens are :mod:`tokenize`'s, read where possible from the C tokenizer the compiler itself uses
(``_tokenize.TokenizerIter``, about seven times cheaper than tokenize's reading each line again in Python: the
similarity pass's main cost); where the two could differ (an error, characters that are no token, see
:func:`_compiler_tokens`), tokenize reads the source. Either way, the same tokens, lines and fingerprints.
"""

from __future__ import annotations

import _tokenize  # CPython's C tokenizer, the compiler's own (tokenize.py re-reads the source in Python)
import builtins
import hashlib
import io
import keyword
import re
import tokenize
from collections.abc import Iterator, Mapping
from operator import itemgetter

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
#: Characters that are no token: the C tokenizer gives them as an operator (type OP), tokenize as an error token.
_NO_TOKEN_CHARS = ("$", "?", "`", "!")
#: Text the C tokenizer reads otherwise than tokenize: line ends, form feed, NUL, a backslash at a line's end, ``<>``.
_READ_OTHERWISE = ("\r", "\x0c", "\x00", "\\\n", "<>")
#: A number run into a keyword (``1if``, ``0x1for``), where the C tokenizer warns (the run of number characters
#: may start earlier: a superset).
_WARNED = re.compile(r"[0-9][0-9a-fA-FxXoObBjJ_.]*(?:and|else|for|if|in|is|not|or)")

#: A token as the C tokenizer gives it: text, type, first and last line, first and last column, the line.
Token = tuple[str, int, int, int, int, int, str]
#: hash -> (first line, last line) of each place its tokens were found (1-based lines of the source).
Fingerprints = Mapping[int, tuple[tuple[int, int], ...]]


def _compiler_tokens(source: str) -> list[Token] | None:
    """The tokens of ``source`` from the C tokenizer, the compiler's own, as :func:`tokenize.generate_tokens`
    gives those :func:`normalized_tokens` reads; ``None`` where the two may differ (the caller then reads
    ``source`` with :mod:`tokenize`, which re-reads each line in Python and costs about seven times as much).

    Where they differ: the C tokenizer stops at the first error (tokenize reads on past a stray character or an
    unterminated string, and raises only at the end), warns of a number run into a keyword (``1if``), reads
    ``\\r``, form feeds, a backslash at a line's end and ``<>`` otherwise, gives ``$ ? ` !`` as operators,
    and puts the DEDENTs that close the source on its last line. It omits comments and blank lines (dropped
    anyway) and gives operators their exact type (only their text is read).
    """
    if any(text in source for text in _READ_OTHERWISE) or _WARNED.search(source):
        return None
    try:
        found = list(_tokenize.TokenizerIter(source))
    except Exception:  # a SyntaxError, or a warning made an error: tokenize reads on past it
        return None
    if any(char in source for char in _NO_TOKEN_CHARS) and tokenize.OP in map(itemgetter(1), found):
        return None  # a character that is no token, outside strings and comments
    last = len(found) - 1
    while last >= 0 and found[last][1] == tokenize.DEDENT:
        last -= 1
    if last >= 0 and found[last][1] != tokenize.NEWLINE:
        return None  # it stopped inside a line: an error, or brackets still open
    newlines = source.count("\n")
    after = found[last][2] if last >= 0 else 0  # the lines after the last statement's
    rest = source.rsplit("\n", newlines - after + 1)
    if any(line.strip() and not line.lstrip().startswith("#") for line in rest[1 if after else 0:]):
        return None  # it stopped at an error: code follows its last statement
    # tokenize reads on to the line after the last one, or stops at a last line of blanks with no newline
    tail = rest[-1]
    end = newlines + (1 if not tail or tail.strip(" \t") else 0) + (1 if tail else 0)
    for i in range(last + 1, len(found)):
        found[i] = ("", tokenize.DEDENT, end, end, 0, 0, "")
    return found


def _python_tokens(source: str) -> Iterator[Token]:
    """The tokens of ``source`` from :func:`tokenize.generate_tokens`, shaped as :func:`_compiler_tokens` gives
    them; iterating raises where tokenize does (the tokens before the error have been given)."""
    for kind, text, (line, _), _, _ in tokenize.generate_tokens(io.StringIO(source).readline):
        yield text, kind, line, 0, 0, 0, ""


def _normalized(source: str) -> tuple[list[str], list[int]]:
    """The texts and first lines of :func:`normalized_tokens`."""
    texts: list[str] = []
    lines: list[int] = []
    text_append, line_append = texts.append, lines.append
    previous = tokenize.NEWLINE  # the type of the last significant token (a statement starts the source)
    last_text = ""
    held = 0  # the line of a string that starts a statement: a docstring if the statement ends there
    found = _compiler_tokens(source)
    try:
        for text, kind, line, _, _, _, _ in found if found is not None else _python_tokens(source):
            if kind in _DROPPED:
                continue
            if held:
                if kind == tokenize.NEWLINE:  # a docstring or a bare string: words, not code (its NEWLINE too)
                    held, previous, last_text = 0, tokenize.NEWLINE, ""
                    continue
                text_append("S")
                line_append(held)
                held = 0
            if kind == tokenize.NAME:
                text_append(text if text in _KEPT_NAMES or last_text == "." else "V")
            elif kind == tokenize.STRING and previous in _STATEMENT_START:
                held = line
                previous, last_text = kind, text
                continue
            else:
                text_append(_FIXED.get(kind, text))
            line_append(line)
            previous, last_text = kind, text
    except (tokenize.TokenError, SyntaxError):  # unfinished or mis-indented: the tokens before it still count
        pass
    return texts, lines


def normalized_tokens(source: str) -> list[tuple[str, int]]:
    """``(token, line)`` of ``source`` as :func:`fingerprints` compares them (see the module)."""
    texts, lines = _normalized(source)
    return list(zip(texts, lines, strict=True))


class _TokenIds(dict[str, int]):
    """text -> a stable 64-bit id of a normalized token (kept: there are few distinct ones; numbers and
    attributes bound the rest by the class's code)."""

    def __missing__(self, text: str) -> int:
        found = int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(),
                               "little")
        if len(self) < 1 << 20:
            self[text] = found
        return found


_IDS = _TokenIds()


def fingerprints(source: str, k: int = K, window: int = WINDOW) -> dict[int, tuple[tuple[int, int], ...]]:
    """The winnowed fingerprints of ``source``: hash -> the line spans where its k-gram occurs (see the module).

    A source of fewer than ``k`` tokens has none."""
    texts, lines = _normalized(source)
    n = len(texts) - k + 1
    if n <= 0:
        return {}
    ids = np.fromiter(map(_IDS.__getitem__, texts), dtype=np.uint64, count=len(texts))
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
    spans: dict[int, list[tuple[int, int]]] = {}
    for position, value in zip(chosen.tolist(), hashes[chosen].tolist(), strict=True):
        spans.setdefault(value, []).append((lines[position], lines[position + k - 1]))
    return {h: tuple(s) for h, s in spans.items()}
