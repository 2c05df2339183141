"""The pages a student fetches with ``nbgrader fetch_feedback`` before (and instead of) the feedback.

Every page is self-contained HTML: inline style, no script, no remote resource. Everything a
student named that reaches a page is shown escaped (``textsafe.escape_html``: control, bidi and
zero-width characters as visible escapes, then HTML-escaped). A status page says where one submission
stands (queued with its position and expected wait, being graded, refused with the reason,
replaced by a newer submission), with the student's attempts left in the window and the due date
(:mod:`.budget`); it names no other student and shows no other submission.
The practice feedback pages (``properties`` and ``score`` levels of :class:`.policy.ServePolicy`)
are built here too, from the verdict records the trusted grader leaves in the autograded
notebook's cell metadata (``ch11_verdict``): property names, what each checks (its one-line
description, the contract clause), outcomes, the named misconception and its advice, points, and
for a task still raising the stub's ``NotImplementedError`` the one "not answered" line the full
page has; never counterexample inputs or values.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ..textsafe import escape_html
from ..trusted.verdict_page import all_passed_line, not_answered_short
from ..trusted.verdicts import (
    FIRST_TO_FIX,
    VERDICT_METADATA_KEY,
    full_marks_line,
    known_mistake_sentence,
    not_answered_line,
    task_name,
)
from .budget import Budget, budget_note
from .queue import Submission

__all__ = ["feedback_page", "page_json", "pages_digest", "status_page", "wait_text"]

_STYLE = ("body{font-family:sans-serif;max-width:46em;margin:2em auto;padding:0 1em;line-height:1.45}"
          "table{border-collapse:collapse}td,th{border:1px solid #bbb;padding:.25em .6em;text-align:left}"
          ".passed{color:#176917}.failed{color:#a01515}.note{color:#555}"
          ".headline{font-weight:bold;padding:.35em .6em;border-radius:3px}"
          ".full{background:#dff0d8;color:#1d5a1d}.fix{background:#fcf8e3;color:#6b4e0b;border-left:4px solid #d9a300}")
_FETCH_AGAIN = ("This page is replaced by your feedback when grading finishes: run "
                "<code>nbgrader fetch_feedback</code> again (or refresh the Assignments tab).")


def _page(title: str, body: str) -> str:
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
            f"<title>{escape_html(title)}</title><style>{_STYLE}</style></head>\n<body>\n{body}\n</body></html>\n")


def wait_text(seconds: float) -> str:
    """``about 2 minutes``, ``less than a minute``: a coarse wait (a page does not change every second)."""
    if seconds < 60:
        return "less than a minute"
    minutes = math.ceil(seconds / 60)
    return f"about {minutes} minute{'s' if minutes != 1 else ''}"


def _when(moment: float | None) -> str:
    return "" if moment is None else time.strftime("%H:%M UTC", time.gmtime(moment))


def status_page(sub: Submission, notebook: str, *, position: int = 0, expected_wait: float = 0.0,
                budget: Budget | None = None) -> str:
    """The status page of ``sub`` for ``notebook`` (its state decides the text; see the module); ``budget``: the
    student's attempts and the due date, stated below."""
    stamp = escape_html(sub.stamp)
    head = f"<h1>{escape_html(notebook)}: your submission of {stamp}</h1>\n"
    if sub.state == "queued":
        body = (f"<p><strong>Queued</strong>: position {position} in the grading queue, expected wait "
                f"{wait_text(expected_wait)}.</p><p class=\"note\">{_FETCH_AGAIN}</p>")
    elif sub.state == "grading":
        body = (f"<p><strong>Being graded</strong> since {_when(sub.started)}.</p>"
                f"<p class=\"note\">{_FETCH_AGAIN}</p>")
    elif sub.state == "superseded":
        body = ("<p><strong>Replaced</strong>: you submitted again before this submission was graded; only your "
                "newest submission is graded. Fetch feedback again for it.</p>")
    elif sub.state == "refused":
        body = (f"<p><strong>Not graded</strong>: {escape_html(sub.reason or 'refused')}.</p>"
                "<p class=\"note\">Your instructor's official grading after the due date is not affected.</p>")
    elif not sub.spent:  # done without grades, for the grader's own reasons
        body = (f"<p><strong>Could not be graded</strong>: {escape_html(sub.reason or 'unknown cause')}.</p>"
                "<p class=\"note\">This was a failure of the grader, not of your notebook: it did not use up an "
                "attempt. Submit again; if it happens again, tell your instructor.</p>")
    else:  # done, but without a page of its own (the grading failed)
        body = (f"<p><strong>Could not be graded</strong>: {escape_html(sub.reason or 'unknown cause')}.</p>"
                "<p class=\"note\">Fix the notebook and submit again.</p>")
    return _page(f"{notebook}: submission status", head + body + budget_note(budget))


def feedback_page(notebook: str, stamp: str, level: str, nb: Mapping[str, Any], score: float | None,
                  max_score: float | None, budget: Budget | None = None) -> str:
    """The practice feedback of one autograded notebook at ``level`` ``properties`` or ``score`` (``budget``: as
    :func:`status_page`'s).

    As the full page: one line at the top (every autograded check passed, or the first thing to fix), a
    contents list naming each test cell's function, and per cell one highlighted line first, the failed
    checks (one row per cause: a check failing on the same call with the same outcome as one above says
    so), then the passed checks folded."""
    records = [record for cell in nb.get("cells", [])
               if isinstance(record := (cell.get("metadata") or {}).get(VERDICT_METADATA_KEY), dict)]
    rows = [_cell_rows(record, level) for record in records]
    total = "" if score is None else f"<p>Autograded points of the whole submission: {score:g} / {max_score:g}</p>"
    contents = ""
    if len(records) > 1:
        contents = "<ol>" + "".join(
            f'<li>{escape_html(_task(r))}: {_num(r.get("score"))} / '
            f'{_num(r.get("points"))} points</li>' for r in records) + "</ol>"
    body = (f"<h1>{escape_html(notebook)}: practice feedback for your submission of {escape_html(stamp)}</h1>\n"
            f"{_top_line(records, level)}{total}\n{contents}\n"
            + ("\n".join(rows) or "<p>No autograded cell in this notebook.</p>") +
            "\n<p class=\"note\">Practice feedback before the due date; your official grade comes from the "
            "grading after it.</p>" + budget_note(budget))
    return _page(f"{notebook}: practice feedback", body)


def _task(record: Mapping[str, Any]) -> str:
    return task_name(str(record.get("grade_id", "")))


def _full(record: Mapping[str, Any]) -> bool:
    props = [p for p in record.get("properties") or [] if isinstance(p, Mapping)]
    return bool(props) and all(p.get("outcome") == "passed" for p in props)


def _top_line(records: Sequence[Mapping[str, Any]], level: str) -> str:
    """The page's first line: every autograded check passed (with the points), or the first task to fix (at the
    ``score`` level only its name and points)."""
    if not records:
        return ""
    if all(_full(r) for r in records):
        got = sum(float(r.get("score") or 0) for r in records)
        points = sum(float(r.get("points") or 0) for r in records)
        return f'<p class="headline full">{escape_html(all_passed_line(got, points))}</p>'
    first = next(r for r in records if not _full(r))
    line = (_headline(first) if level != "score" else
            f"{FIRST_TO_FIX} {_task(first)} ({_num(first.get('score'))} / {_num(first.get('points'))} points).")
    return f'<p class="headline fix">{escape_html(line)}</p>'


def _headline(record: Mapping[str, Any]) -> str:
    """A cell's first line from its record: full marks, not answered, or the first failing check in words.

    Full marks and not answered are said as the full feedback page says them (``full_marks_line``,
    ``not_answered_short``). The first thing to fix names the function and the check and what it checks, not
    the input, expected and got that the full page's line has: the ``properties`` level shows no
    counterexample inputs or values (``ServePolicy.feedback_level``).
    """
    task = _task(record)
    props = [p for p in record.get("properties") or [] if isinstance(p, Mapping)]
    failed = [p for p in props if p.get("outcome") != "passed"]
    if not failed:
        return full_marks_line(task, _float(record.get("score")), _float(record.get("points")))
    answered = [p for p in failed if p.get("unanswered") is not True]
    if not answered:
        return not_answered_short(task)
    first = answered[0]
    outcome = str(first.get("outcome", "")).replace("_", " ")
    return f"{FIRST_TO_FIX} {task}: {first.get('name', '')} ({outcome}): {first.get('description', '')}"


def _cause(prop: Mapping[str, Any]) -> tuple[str, ...] | None:
    """Two failed checks of a cell with one cause: the same call (or inputs) and the same outcome, from the
    record's example (never shown on this page, only compared)."""
    example = prop.get("example")
    if not isinstance(example, Mapping):
        return None
    where = str(example.get("call") or "") or json.dumps(example.get("inputs") or {}, sort_keys=True)
    if where in ("", "{}"):
        return None
    return (where, str(example.get("kind", "")), str(example.get("got", "")), str(example.get("raised", "")),
            str(prop.get("misconception", "")))


def _cell_rows(record: Mapping[str, Any], level: str) -> str:
    task = escape_html(_task(record))
    head = (f'<h2>{task}: {_num(record.get("score"))} / {_num(record.get("points"))} '
            "points</h2>")
    if level == "score":
        return head
    mark = "full" if _full(record) else "fix"
    head += f'<p class="headline {mark}">{escape_html(_headline(record))}</p>'
    props: Sequence[Mapping[str, Any]] = [p for p in record.get("properties") or [] if isinstance(p, Mapping)]
    unanswered = [p for p in props if p.get("outcome") != "passed" and p.get("unanswered") is True]
    whole = bool(unanswered) and len(unanswered) == len(props)
    note = ""
    if unanswered:
        line = not_answered_line([str(p.get("name", "")) for p in unanswered], whole=whole)
        note = f"<p class=\"failed\">{escape_html(line)}</p>"
    if whole:  # as the full page: one line, not one row per check that the stub fails
        return head + note
    failed_rows, passed_rows = [], []
    first_of_cause: dict[tuple[str, ...], str] = {}
    for prop in props:
        if prop in unanswered:
            continue
        outcome = str(prop.get("outcome", ""))
        name = str(prop.get("name", ""))
        cells = f"<td>{escape_html(name)}</td><td>{escape_html(str(prop.get('description', '')))}</td>"
        if outcome == "passed":
            passed_rows.append(f"<tr>{cells}<td class=\"passed\">passed</td></tr>")
            continue
        cause = _cause(prop)
        same = first_of_cause.get(cause) if cause is not None else None
        if same is not None:
            said = f"<br>same cause as {escape_html(same)} above"
        elif prop.get("misconception"):
            said = "<br>" + escape_html(known_mistake_sentence(str(prop["misconception"]), str(prop.get("advice", ""))),
                                        quote=False)
        else:
            said = ""
        if cause is not None:
            first_of_cause.setdefault(cause, name)
        failed_rows.append(f"<tr>{cells}<td class=\"failed\">{escape_html(outcome.replace('_', ' '))}{said}</td></tr>")
    header = "<tr><th>property</th><th>what it checks</th><th>outcome</th></tr>"
    table = f"\n<table>{header}{''.join(failed_rows)}</table>" if failed_rows else ""
    folded = ""
    if passed_rows:
        count = len(passed_rows)
        folded = (f"\n<details><summary>{count} check{'s' if count != 1 else ''} passed</summary><table>{header}"
                  f"{''.join(passed_rows)}</table></details>")
    return head + note + table + folded


def _float(value: Any) -> float:
    try:
        return round(float(value), 6)
    except (TypeError, ValueError):
        return math.nan


def _num(value: Any) -> str:
    try:
        return format(round(float(value), 6), "g")
    except (TypeError, ValueError):
        return "?"


def page_json(pages: Mapping[str, str]) -> str:
    """A stable serialization of a set of pages (its digest says whether anything changed)."""
    return json.dumps(pages, sort_keys=True)


def pages_digest(pages: Mapping[str, str]) -> str:
    """sha256 (hex) of :func:`page_json`: what the queue records as a submission's published pages."""
    return hashlib.sha256(page_json(pages).encode()).hexdigest()
