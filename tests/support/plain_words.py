"""What a student page must not say: the grader's internal words, found in the real sources, and two slips.

A student page (the feedback page, the practice page, the Gradescope results) names the function and the
task in plain words. The forbidden patterns are built from what the grader really calls things, so that
a new grade id or a new internal class is covered without editing a list:

* every ``grade_id`` of the source notebooks (``ex2_fd_sweep_tests``), as a whole word;
* every class the grading package defines outside the exercises (``RngSeed``, ``CellVerdict``, ...),
  as ``<Name>`` (how an object the formatter does not know would print) and, for a name of two or more
  capitalised parts, as a bare word; and the error name a zero verdict's output carries;
* the engine's input names for bookkeeping as ``name=`` (``case=``, ``failing_call=``: the input names
  ``trusted.verdicts`` says a page words otherwise), and nbgrader's bare ``Out[n]`` prompt;
* three slips: a capital letter right after "a known mistake,", "a" before the name of a Python type or
  an array that starts with a vowel ("a int", "a ndarray"), the words a grader's sentence puts there, and a
  name from the code capitalised as a sentence's first word ("Exact_gradient raises").

:func:`offences` lists what a page's visible text breaks; :func:`grader_text` is the part of a feedback page
the grader writes (the top line, the contents, the cell headings, the verdicts), for pages whose cells hold
a hostile student's own words.
"""

from __future__ import annotations

import ast
import builtins
import functools
import html
import json
import re
from pathlib import Path

import ch11_autograder
from ch11_autograder.paths import SOURCE_DIR
from ch11_autograder.trusted import verdicts

PACKAGE = Path(ch11_autograder.__file__).resolve().parent
# Exercise folders define what students see (their notebooks' record types): not internal words.
_NOT_INTERNAL = ("exercises",)
_TWO_PARTS = re.compile(r"[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+")


@functools.cache
def grade_ids() -> frozenset[str]:
    """Every nbgrader grade id of the course's source notebooks."""
    ids = set()
    for path in SOURCE_DIR.glob("*.ipynb"):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            if grade_id:
                ids.add(grade_id)
    return frozenset(ids)


@functools.cache
def internal_class_names() -> frozenset[str]:
    """Every class the grading package defines, outside the exercises."""
    names = set()
    for path in PACKAGE.rglob("*.py"):
        if any(part in _NOT_INTERNAL for part in path.relative_to(PACKAGE).parts):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                names.add(node.name.lstrip("_"))
    return frozenset(name for name in names if name)


def _type_nouns() -> set[str]:
    """Names of Python's types, numpy's array and its scalar types, that start with a vowel sound."""
    import numpy as np

    names = {name for name in dir(builtins) if isinstance(getattr(builtins, name), type)}
    names |= {"array", "ndarray", "integer"} | {np.dtype(code).name for code in "bhilqBHILQefdg?"}
    return {name for name in names if name[:1].lower() in "aeio"}


def _zero_verdict_error_name() -> str:
    zero = verdicts.CellVerdict.from_results("g", 1, [("a", "a")], [verdicts.Failure("a", "a", "mismatch")])
    return str(verdicts.verdict_outputs(zero)[0]["ename"])


@functools.cache
def forbidden() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """(what it is, pattern) for every forbidden word (see the module docstring)."""
    found: list[tuple[str, re.Pattern[str]]] = []
    for grade_id in sorted(grade_ids()):
        found.append((f"grade id {grade_id}", re.compile(rf"\b{re.escape(grade_id)}\b")))
    for name in sorted(internal_class_names()):
        found.append((f"internal class <{name}>", re.compile(rf"<{re.escape(name)}>")))
        if _TWO_PARTS.fullmatch(name):
            found.append((f"internal class {name}", re.compile(rf"\b{re.escape(name)}\b")))
    ename = _zero_verdict_error_name()
    found.append((f"internal error name {ename}", re.compile(rf"\b{re.escape(ename)}\b")))
    for name in (verdicts._CASE_INPUT, verdicts._FAILING_CALL_INPUT):
        found.append((f"engine input {name}=", re.compile(rf"\b{re.escape(name)}=")))
    found.append(("bare Out[n] prompt", re.compile(r"\bOut\[\d*\]")))
    found.append(("capital after 'known mistake,'", re.compile(r"known mistake, [A-Z]")))
    found.append(("a name from the code capitalised", re.compile(r"\b[A-Z][a-z0-9]*_[a-z0-9_]+\(?")))
    nouns = sorted(_type_nouns())
    found.append(("'a' before a vowel", re.compile(rf"\ba (?:{'|'.join(map(re.escape, nouns))})\b")))
    return tuple(found)


def visible_text(page: str) -> str:
    """The text a reader of an HTML page sees: no tags, no style, entities resolved."""
    page = re.sub(r"<(style|script)\b.*?</\1>", " ", page, flags=re.S | re.I)
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


_GRADER_PARTS = re.compile(r'<p class="ch11-top[^"]*">.*?</p>|<div id="toc">.*?</div>|'
                           r'<span class="nbgrader-label">.*?</span>|<div class="ch11-verdict">.*?</div>', re.S)


def grader_text(page: str) -> str:
    """The visible text of what the grader writes on a feedback page (see the module docstring)."""
    return "\n".join(visible_text(part) for part in _GRADER_PARTS.findall(page))


def offences(text: str) -> list[str]:
    """What ``text`` (a page's visible text, or a plain-text page) says that a student page must not."""
    out = []
    for what, pattern in forbidden():
        match = pattern.search(text)
        if match:
            start = max(match.start() - 40, 0)
            out.append(f"{what}: ...{text[start:match.end() + 40]!r}...")
    return out
