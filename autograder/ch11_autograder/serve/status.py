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
from ..trusted.verdicts import VERDICT_METADATA_KEY, not_answered_line
from .budget import Budget, budget_note
from .queue import Submission

__all__ = ["feedback_page", "page_json", "pages_digest", "status_page", "wait_text"]

_STYLE = ("body{font-family:sans-serif;max-width:46em;margin:2em auto;padding:0 1em;line-height:1.45}"
          "table{border-collapse:collapse}td,th{border:1px solid #bbb;padding:.25em .6em;text-align:left}"
          ".passed{color:#176917}.failed{color:#a01515}.note{color:#555}")
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
    :func:`status_page`'s)."""
    rows: list[str] = []
    for cell in nb.get("cells", []):
        record = (cell.get("metadata") or {}).get(VERDICT_METADATA_KEY)
        if isinstance(record, dict):
            rows.append(_cell_rows(record, level))
    total = "" if score is None else f"<p>Autograded points of the whole submission: {score:g} / {max_score:g}</p>"
    body = (f"<h1>{escape_html(notebook)}: practice feedback for your submission of {escape_html(stamp)}</h1>\n"
            f"{total}\n" + ("\n".join(rows) or "<p>No autograded cell in this notebook.</p>") +
            "\n<p class=\"note\">Practice feedback before the due date; your official grade comes from the "
            "grading after it.</p>" + budget_note(budget))
    return _page(f"{notebook}: practice feedback", body)


def _cell_rows(record: Mapping[str, Any], level: str) -> str:
    grade_id = escape_html(str(record.get("grade_id", "")))
    head = f"<h2>{grade_id}: {_num(record.get('score'))} / {_num(record.get('points'))} points</h2>"
    if level == "score":
        return head
    props: Sequence[Mapping[str, Any]] = [p for p in record.get("properties") or [] if isinstance(p, Mapping)]
    unanswered = [p for p in props if p.get("outcome") != "passed" and p.get("unanswered") is True]
    whole = bool(unanswered) and len(unanswered) == len(props)
    note = ""
    if unanswered:
        line = not_answered_line([str(p.get("name", "")) for p in unanswered], whole=whole)
        note = f"<p class=\"failed\">{escape_html(line)}</p>"
    if whole:  # as the full page: one line, not one row per check that the stub fails
        return head + note
    lines = []
    for prop in props:
        if prop in unanswered:
            continue
        outcome = str(prop.get("outcome", ""))
        mark = "passed" if outcome == "passed" else "failed"
        advice = ""
        if prop.get("misconception"):
            advice = (f"<br>This matches a known mistake, <em>{escape_html(str(prop['misconception']))}</em>: "
                      f"{escape_html(str(prop.get('advice', '')))}")
        lines.append(f"<tr><td>{escape_html(str(prop.get('name', '')))}</td>"
                     f"<td>{escape_html(str(prop.get('description', '')))}</td>"
                     f"<td class=\"{mark}\">{escape_html(outcome.replace('_', ' '))}{advice}</td></tr>")
    return (head + note + "\n<table><tr><th>property</th><th>what it checks</th><th>outcome</th></tr>"
            + "".join(lines) + "</table>")


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
