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
Which tokens are kept, and how each reads, is then decided over the whole token sequence at once (numpy
arrays of token types; the texts looked up in C), not in a loop over the tokens in Python, which cost as much
again as tokenizing; :class:`FingerprintTable` holds many sources' fingerprints as flat arrays, which the
similarity pass sends between processes and compares as arrays.
"""

from __future__ import annotations

import _tokenize  # CPython's C tokenizer, the compiler's own (tokenize.py re-reads the source in Python)
import builtins
import functools
import hashlib
import io
import itertools
import keyword
import re
import tokenize
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import itemgetter

import numpy as np
from numpy.lib.stride_tricks import as_strided

__all__ = ["WINDOW", "FingerprintTable", "Fingerprints", "K", "fingerprints", "normalized_tokens", "spans", "winnowed"]

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


def _python_tokens(source: str) -> list[Token]:
    """The tokens of ``source`` from :func:`tokenize.generate_tokens`, shaped as :func:`_compiler_tokens` gives
    them (operators with their exact type, as the C tokenizer gives them), up to the first error (the tokens
    before it still count)."""
    out: list[Token] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            out.append((token.string, token.exact_type, token.start[0], 0, 0, 0, ""))
    except (tokenize.TokenError, SyntaxError):  # unfinished or mis-indented
        pass
    return out


def _table(kinds: Iterable[int]) -> np.ndarray:
    """A lookup table over token types: True for ``kinds`` (types beyond the table read its last entry, False)."""
    table = np.zeros(max(tokenize.tok_name) + 2, dtype=bool)
    table[list(kinds)] = True
    return table


_DROPPED_TYPES = _table(_DROPPED)
_STATEMENT_TYPES = _table(_STATEMENT_START)


def _kept(found: Sequence[Token]) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """The tokens of ``found`` :func:`normalized_tokens` keeps, decided over the whole sequence at once (a loop
    over the tokens in Python cost as much as tokenizing them): their texts as written, types, first lines,
    and whether each is a name after a ``.`` (an attribute, kept as written).

    A token is dropped when its type is (comments, blank lines, the tokenizer's markers), and so is a string
    that starts a statement and is the whole of it (a docstring or a bare string), with its NEWLINE: among the
    tokens not dropped by type, a STRING whose previous one starts a statement (or that is the first) and whose
    next one is a NEWLINE (or that is the last).
    """
    count = len(found)
    kinds = np.fromiter(map(itemgetter(1), found), dtype=np.intp, count=count)
    lines = np.fromiter(map(itemgetter(2), found), dtype=np.int64, count=count)
    significant = np.flatnonzero(~_DROPPED_TYPES[np.minimum(kinds, len(_DROPPED_TYPES) - 1)])
    kind = kinds[significant]
    previous = np.empty_like(kind)
    previous[:1] = tokenize.NEWLINE
    previous[1:] = kind[:-1]
    following = np.full_like(kind, tokenize.NEWLINE)
    following[:-1] = kind[1:]
    bare = ((kind == tokenize.STRING) & _STATEMENT_TYPES[np.minimum(previous, len(_STATEMENT_TYPES) - 1)]
            & (following == tokenize.NEWLINE))
    bare[1:] |= bare[:-1]  # the NEWLINE after each bare string
    after_dot = np.zeros(len(kind), dtype=bool)
    after_dot[1:] = kind[:-1] == tokenize.DOT  # both tokenizers give "." its exact type
    keep = ~bare
    where, kind = significant[keep], kind[keep]
    texts = list(map(itemgetter(0), map(found.__getitem__, where.tolist())))
    return texts, kind, lines[where], after_dot[keep] & (kind == tokenize.NAME)


def _tokens(source: str) -> list[Token]:
    found = _compiler_tokens(source)
    return found if found is not None else _python_tokens(source)


def normalized_tokens(source: str) -> list[tuple[str, int]]:
    """``(token, line)`` of ``source`` as :func:`fingerprints` compares them (see the module)."""
    texts, kinds, lines, attribute = _kept(_tokens(source))
    out = []
    for text, kind, line, attr in zip(texts, kinds.tolist(), lines.tolist(), attribute.tolist(), strict=True):
        if kind == tokenize.NAME:
            text = text if attr or text in _KEPT_NAMES else "V"
        out.append((_FIXED.get(kind, text), line))
    return out


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
#: The ids of the texts fixed by type, and of a renamed name.
_FIXED_IDS = {kind: _IDS[text] for kind, text in _FIXED.items()}
_RENAMED = _IDS["V"]


def _token_ids(found: Sequence[Token]) -> tuple[np.ndarray, np.ndarray]:
    """The ids and first lines of :func:`normalized_tokens` of the source ``found`` was read from, as arrays.

    Each kept token's text is looked up among the ids known (a lookup per token, in C); only the texts not
    known yet that are needed (not a string or a marker fixed by type, not a renamed name) are computed in
    Python, and known from then on."""
    texts, kinds, lines, attribute = _kept(found)
    ids = np.fromiter(map(_IDS.get, texts, repeat(0)), dtype=np.uint64, count=len(texts))
    unknown = ids == 0  # a text not seen before (or one whose id is 0, computed again)
    renamed = (kinds == tokenize.NAME) & ~attribute
    renamed[renamed] = ~np.fromiter(map(_KEPT_NAMES.__contains__, itertools.compress(texts, renamed)), dtype=bool)
    ids[renamed] = _RENAMED
    unknown &= ~renamed
    for kind, fixed in _FIXED_IDS.items():
        fixed_here = kinds == kind
        ids[fixed_here] = fixed
        unknown &= ~fixed_here
    for i in np.flatnonzero(unknown).tolist():
        ids[i] = _IDS[texts[i]]
    return ids, lines


def _windows(values: np.ndarray, width: int) -> np.ndarray:
    """Every run of ``width`` consecutive ``values``, one a row (a view, as ``sliding_window_view`` gives it)."""
    step = values.strides[0]
    return as_strided(values, (len(values) - width + 1, width), (step, step), writeable=False)


@functools.cache
def _powers(k: int) -> np.ndarray:
    """``_BASE ** (k - 1 - j)`` modulo 2**64 for ``j`` in ``range(k)``: a k-gram's polynomial hash is its ids'
    dot product with these (integer arithmetic wraps, as the hash means it to)."""
    powers = np.ones(k, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(k - 2, -1, -1):
            powers[j] = powers[j + 1] * _BASE
    powers.flags.writeable = False
    return powers


def winnowed(source: str, k: int = K, window: int = WINDOW) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The winnowed fingerprints of ``source`` as arrays, in the order of the source: each fingerprint's hash
    (uint64) and the first and last line of its k-gram (int64). :func:`fingerprints` is the same as a mapping."""
    ids, lines = _token_ids(_tokens(source))
    n = len(ids) - k + 1
    if n <= 0:
        return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    hashes = _windows(ids, k) @ _powers(k)  # sum of ids[i + j] * _BASE ** (k - 1 - j), modulo 2**64
    if n <= window:
        chosen = np.array([n - 1 - int(np.argmin(hashes[::-1]))])
    else:
        windows = _windows(hashes, window)
        # The rightmost minimum of each window (robust winnowing): ties keep the later position. The positions
        # never decrease from one window to the next, so each one chosen is kept once where it first appears.
        chosen = np.arange(len(windows)) + (window - 1 - np.argmin(windows[:, ::-1], axis=1))
        chosen = chosen[np.concatenate(([True], chosen[1:] != chosen[:-1]))]
    return hashes[chosen], lines[chosen], lines[chosen + k - 1]


def spans(hashes: np.ndarray, first: np.ndarray, last: np.ndarray) -> dict[int, tuple[tuple[int, int], ...]]:
    """:func:`winnowed`'s arrays as :func:`fingerprints` gives them: hash -> its line spans, in source order."""
    values = hashes.tolist()
    found = dict(zip(values, zip(zip(first.tolist(), last.tolist(), strict=True)), strict=True))
    if len(found) < len(values):  # a k-gram met again later: every place of it, in order (above: the last only)
        order = np.argsort(hashes, kind="stable")
        ordered = hashes[order]
        again = np.flatnonzero(ordered[1:] == ordered[:-1]) + 1
        for start in np.unique(np.searchsorted(ordered, ordered[again])).tolist():
            end = int(np.searchsorted(ordered, ordered[start], side="right"))
            at = order[start:end].tolist()
            found[values[at[0]]] = tuple((int(first[i]), int(last[i])) for i in at)
    return found


def fingerprints(source: str, k: int = K, window: int = WINDOW) -> dict[int, tuple[tuple[int, int], ...]]:
    """The winnowed fingerprints of ``source``: hash -> the line spans where its k-gram occurs (see the module).

    A source of fewer than ``k`` tokens has none."""
    return spans(*winnowed(source, k, window))


@dataclass(frozen=True)
class FingerprintTable:
    """The winnowed fingerprints of many sources in flat arrays (cheap to send between processes, and compared
    as arrays): source ``i``'s are ``hashes[offsets[i]:offsets[i + 1]]``, in :func:`winnowed`'s order, with the
    first and last lines of each."""

    offsets: np.ndarray
    hashes: np.ndarray
    first: np.ndarray
    last: np.ndarray

    @classmethod
    def of(cls, sources: Sequence[str]) -> FingerprintTable:
        """The table of ``sources``, in their order."""
        return cls.concatenate([cls._one(*winnowed(source)) for source in sources])

    @classmethod
    def _one(cls, hashes: np.ndarray, first: np.ndarray, last: np.ndarray) -> FingerprintTable:
        return cls(np.array([0, len(hashes)], dtype=np.int64), hashes, first, last)

    @classmethod
    def concatenate(cls, tables: Sequence[FingerprintTable]) -> FingerprintTable:
        """One table holding ``tables``' sources, in order."""
        sizes = [np.diff(t.offsets) for t in tables]
        offsets = np.zeros(sum(len(s) for s in sizes) + 1, dtype=np.int64)
        np.cumsum(np.concatenate([np.zeros(0, dtype=np.int64), *sizes]), out=offsets[1:])
        return cls(offsets, *(np.concatenate([np.zeros(0, dtype=dtype), *(getattr(t, name) for t in tables)])
                              for name, dtype in (("hashes", np.uint64), ("first", np.int64), ("last", np.int64))))

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def hashes_of(self, i: int) -> np.ndarray:
        return self.hashes[self.offsets[i]:self.offsets[i + 1]]

    def fingerprints(self, i: int) -> dict[int, tuple[tuple[int, int], ...]]:
        """Source ``i``'s :func:`fingerprints`."""
        where = slice(self.offsets[i], self.offsets[i + 1])
        return spans(self.hashes[where], self.first[where], self.last[where])

    def same(self, other: FingerprintTable) -> bool:
        """Whether ``other`` holds the same fingerprints (arrays compare element-wise, so ``==`` does not say)."""
        return all(np.array_equal(getattr(self, name), getattr(other, name))
                   for name in ("offsets", "hashes", "first", "last"))
