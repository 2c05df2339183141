"""A student's function rebuilt from its syntax tree for a catalogue draft (``ch11-grade catalogue draft``).

A catalogue entry runs in the grading process: the module that holds it is imported by every grading
run. Of a function definition, the decorators, the parameters' default values and the annotations are
evaluated when the ``def`` statement runs, that is at import; the body only when the function is
called, as grading called the student's. So :func:`rebuild` keeps the body as written (comments
dropped: ``ast.unparse``) and removes from the signature what would run at import:

* every decorator;
* every annotation (parameters and return): they carry no behaviour grading saw, and one may call anything;
* every default value that is not a literal (``ast.literal_eval`` refuses it), replaced by ``None``.

Each removal is listed (:attr:`Rebuilt.removed`) for the draft's header, the removed text shown escaped.
Identifiers outside ASCII (a Cyrillic ``а`` that reads as a Latin ``a``) are renamed to an ASCII spelling
that shows each such letter's code point (``vаlue`` -> ``v_u0430_lue``) and listed
(:attr:`Rebuilt.renamed`): the draft reads as what it does. String literals are written by
``ast.unparse`` as ``repr`` writes them, so control, bidi and zero-width characters in them are escapes.
Lines longer than :data:`WIDTH` are broken inside their brackets (:func:`wrap`), the syntax tree checked
unchanged.
"""

from __future__ import annotations

import ast
import copy
import io
import itertools
import tokenize
import unicodedata
from dataclasses import dataclass

from ..textsafe import escape

__all__ = ["WIDTH", "Rebuilt", "rebuild", "wrap"]

#: Longest line of a draft, where the code allows a break.
WIDTH = 100
#: Characters of a removed decorator, annotation or default shown in the header.
SHOWN_CHARS = 80


@dataclass(frozen=True)
class Rebuilt:
    """The rebuilt function: ``source``, what was removed from its signature and which identifiers were
    renamed (one line of text each, escaped), and whether some line stayed over :data:`WIDTH`."""

    source: str
    removed: tuple[str, ...]
    renamed: tuple[str, ...]
    long_lines: bool


def _shown(node: ast.AST) -> str:
    return "`" + escape(ast.unparse(node), limit=SHOWN_CHARS) + "`"


def _is_literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _strip_signature(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """Remove from ``node`` (in place) what runs at definition time; say what was removed."""
    removed = [f"decorator @{_shown(d)}" for d in node.decorator_list]
    node.decorator_list = []
    args = node.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, *(a for a in (args.vararg, args.kwarg) if a)]
    for arg in every:
        if arg.annotation is not None:
            removed.append(f"annotation of {arg.arg}: {_shown(arg.annotation)}")
            arg.annotation = None
    if node.returns is not None:
        removed.append(f"return annotation {_shown(node.returns)}")
        node.returns = None
    positional = [*args.posonlyargs, *args.args]
    owners = positional[len(positional) - len(args.defaults):]
    for i, (arg, default) in enumerate(zip(owners, args.defaults, strict=True)):
        if not _is_literal(default):
            removed.append(f"default of {arg.arg}: {_shown(default)}, now None")
            args.defaults[i] = ast.Constant(None)
    for i, (arg, kw_default) in enumerate(zip(args.kwonlyargs, args.kw_defaults, strict=True)):
        if kw_default is not None and not _is_literal(kw_default):
            removed.append(f"default of {arg.arg}: {_shown(kw_default)}, now None")
            args.kw_defaults[i] = ast.Constant(None)
    return removed


def _ascii_name(name: str) -> str:
    return "".join(char if char.isascii() else f"_u{ord(char):04x}_" for char in name)


def _rename_non_ascii(source: str) -> tuple[str, list[str]]:
    """``source`` with every identifier outside ASCII renamed (:func:`_ascii_name`), and the renamings."""
    lines = source.split("\n")
    found: dict[str, str] = {}
    # Right to left, so that earlier columns of a line stay where the tokenizer saw them.
    names = [t for t in tokenize.generate_tokens(io.StringIO(source).readline)
             if t.type == tokenize.NAME and not t.string.isascii()]
    for token in reversed(names):
        (row, col), (_erow, end) = token.start, token.end
        new = found.setdefault(token.string, _ascii_name(token.string))
        line = lines[row - 1]
        lines[row - 1] = line[:col] + new + line[end:]
    renamed = []
    for old, new in found.items():
        letters = ", ".join(f"U+{ord(c):04X} {unicodedata.name(c, 'unnamed')}" for c in dict.fromkeys(old)
                            if not c.isascii())
        renamed.append(f"{new} (an identifier with {letters})")
    return "\n".join(lines), renamed


def _pairs(source: str) -> list[tuple[tuple[int, int], tuple[int, int], list[tuple[int, int]]]]:
    """Every bracket pair of ``source``: (open, close, the commas directly inside), as (row, col)."""
    stack: list[tuple[tuple[int, int], list[tuple[int, int]]]] = []
    out = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.OP:
            continue
        if token.string in "([{":
            stack.append((token.start, []))
        elif token.string in ")]}" and stack:
            start, commas = stack.pop()
            out.append((start, token.start, commas))
        elif token.string == "," and stack:
            stack[-1][1].append(token.start)
    return out


def _break_once(source: str, width: int) -> str | None:
    """``source`` with the widest bracket pair of its first breakable long line broken, else ``None``."""
    lines = source.split("\n")
    pairs = _pairs(source)
    for row, line in enumerate(lines, 1):
        if len(line) <= width:
            continue
        inline = [p for p in pairs if p[0][0] == row and p[1][0] == row and p[1][1] > p[0][1] + 1]
        if not inline:
            continue
        (_r, open_col), (_r2, close_col), commas = max(inline, key=lambda p: (p[1][1] - p[0][1], -p[0][1]))
        indent = line[: len(line) - len(line.lstrip())]
        cuts = [open_col + 1, *(col + 1 for _row, col in commas), close_col]
        items = [line[a:b].strip() for a, b in itertools.pairwise(cuts)]
        broken = [line[: open_col + 1].rstrip(), *(indent + "    " + item for item in items if item),
                  indent + line[close_col:]]
        return "\n".join([*lines[: row - 1], *broken, *lines[row:]])
    return None


def wrap(source: str, width: int = WIDTH) -> str:
    """``source`` with lines over ``width`` broken inside their brackets (one item a line), where a line has
    brackets; the result parses to the same syntax tree (checked: else ``source`` is returned as it was)."""
    text = source
    for _ in range(10_000):  # each break leaves one bracket pair fewer on a single line: this ends
        broken = _break_once(text, width)
        if broken is None:
            break
        text = broken
    if ast.dump(ast.parse(text)) != ast.dump(ast.parse(source)):
        return source
    return text


def rebuild(node: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> Rebuilt:
    """The function ``node`` named ``name``, with nothing that runs at import (see the module docstring)."""
    tree = copy.deepcopy(node)
    removed = _strip_signature(tree)
    tree.name = name
    source, renamed = _rename_non_ascii(ast.unparse(ast.fix_missing_locations(tree)))
    source = wrap(source)
    return Rebuilt(source, tuple(removed), tuple(renamed), any(len(line) > WIDTH for line in source.split("\n")))
