"""Make untrusted notebook content safe to store and to render in a browser.

Outputs produced by executing a submission (and the submission's own
markdown and raw cells) are hostile: they could carry script into the
feedback HTML or the formgrader, forge attributes through output metadata, or
be large enough to hurt. This module rebuilds them from validated fields only:

* ``stream``: ``stdout``/``stderr`` text;
* ``display_data`` / ``execute_result``: only ``text/plain``, ``image/png``,
  ``image/jpeg`` (strict base64) and ``text/html`` (cleaned with ``nh3``).
  Every other MIME type (JavaScript, SVG, Markdown, LaTeX, widgets, ...) is
  dropped and, if nothing displayable is left, replaced by a ``text/plain``
  note. Output metadata is dropped entirely (templates put it into HTML
  attributes);
* ``error``: ``ename``, ``evalue`` and ``traceback`` strings (the HTML
  exporter escapes them);
* anything else is replaced by a note.

Sizes are capped per cell and per notebook (characters of text and base64);
the cut is marked in the output. All functions are pure and deterministic.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import nbformat
import nh3

__all__ = [
    "SAFE_MIME_TYPES",
    "OutputBudget",
    "sanitize_markdown",
    "sanitize_notebook",
    "sanitize_output",
    "sanitize_outputs",
]

#: MIME types kept in display outputs (text/html after cleaning).
SAFE_MIME_TYPES = ("text/plain", "text/html", "image/png", "image/jpeg")

_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*\Z")
_STREAM_NAMES = ("stdout", "stderr")
_TRUNCATED = "\n... [output truncated by the grader]\n"


@dataclass
class OutputBudget:
    """Characters of output still allowed in the whole notebook."""

    remaining: int


def _text(value: Any) -> str | None:
    """nbformat multiline strings: a str or a list of str; anything else is invalid."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "".join(value)
    return None


def _note(text: str) -> dict[str, Any]:
    return {"output_type": "stream", "name": "stdout", "text": f"[{text}]\n"}


def _clean_data(data: Any) -> tuple[dict[str, str], list[str]]:
    kept: dict[str, str] = {}
    dropped: list[str] = []
    if not isinstance(data, Mapping):
        return kept, ["(malformed data)"]
    for mime in sorted(data, key=str):
        value = _text(data[mime])
        if mime not in SAFE_MIME_TYPES or value is None:
            dropped.append(str(mime)[:60])
            continue
        if mime in ("image/png", "image/jpeg"):
            if not _BASE64.match(value):
                dropped.append(mime)
                continue
            try:
                base64.b64decode("".join(value.split()), validate=True)
            except (binascii.Error, ValueError):
                dropped.append(mime)
                continue
            value = "".join(value.split())
        elif mime == "text/html":
            value = nh3.clean(value)
        kept[mime] = value
    return kept, dropped


def _size(output: Mapping[str, Any]) -> int:
    total = 0
    for key in ("text", "evalue", "ename"):
        if isinstance(output.get(key), str):
            total += len(output[key])
    for line in output.get("traceback", ()) or ():
        total += len(line)
    for value in (output.get("data") or {}).values():
        total += len(value)
    return total


def sanitize_output(output: Any) -> dict[str, Any]:
    """A fresh, safe nbformat v4 output dict rebuilt from ``output``'s valid fields."""
    if not isinstance(output, Mapping):
        return _note("malformed output removed by the grader")
    kind = output.get("output_type")
    if kind == "stream":
        name = output.get("name")
        text = _text(output.get("text"))
        if name not in _STREAM_NAMES or text is None:
            return _note("malformed stream output removed by the grader")
        return {"output_type": "stream", "name": name, "text": text}
    if kind in ("display_data", "execute_result"):
        data, dropped = _clean_data(output.get("data"))
        if dropped and "text/plain" not in data and not any(m.startswith("image/") for m in data):
            data["text/plain"] = f"[output of type {', '.join(dropped)} removed by the grader]"
        if not data:
            data["text/plain"] = "[empty output]"
        clean: dict[str, Any] = {"output_type": kind, "data": data, "metadata": {}}
        if kind == "execute_result":
            count = output.get("execution_count")
            clean["execution_count"] = count if type(count) is int and 0 <= count < 10**9 else None
        return clean
    if kind == "error":
        ename = output.get("ename")
        evalue = output.get("evalue")
        traceback = output.get("traceback")
        if not isinstance(traceback, list) or not all(isinstance(line, str) for line in traceback):
            traceback = []
        return {
            "output_type": "error",
            "ename": ename if isinstance(ename, str) else "Error",
            "evalue": evalue if isinstance(evalue, str) else "",
            "traceback": list(traceback),
        }
    return _note("unsupported output removed by the grader")


def _truncate_output(output: dict[str, Any], room: int) -> dict[str, Any] | None:
    """``output`` cut to about ``room`` characters, or ``None`` if nothing useful fits."""
    if room <= len(_TRUNCATED):
        return None
    if output["output_type"] == "stream":
        return {**output, "text": output["text"][: room - len(_TRUNCATED)] + _TRUNCATED}
    if output["output_type"] == "error":
        kept: list[str] = []
        used = len(output["ename"]) + min(len(output["evalue"]), room // 4)
        for line in output["traceback"]:
            if used + len(line) > room - len(_TRUNCATED):
                break
            kept.append(line)
            used += len(line)
        kept.append(_TRUNCATED.strip())
        return {**output, "evalue": output["evalue"][: room // 4], "traceback": kept}
    text = output["data"].get("text/plain")
    if isinstance(text, str):
        return {**output, "data": {"text/plain": text[: room - len(_TRUNCATED)] + _TRUNCATED}}
    return None


def sanitize_outputs(outputs: Any, *, max_cell_chars: int, budget: OutputBudget | None = None) -> list[dict[str, Any]]:
    """Sanitize a cell's outputs in order, keeping at most ``max_cell_chars``.

    Also draws from ``budget`` (the notebook's total). Once a cap is reached,
    the rest is replaced by one note saying so.
    """
    if not isinstance(outputs, list):
        return [_note("malformed outputs removed by the grader")]
    clean: list[dict[str, Any]] = []
    room = max_cell_chars if budget is None else min(max_cell_chars, budget.remaining)
    for index, raw in enumerate(outputs):
        output = sanitize_output(raw)
        size = _size(output)
        if size > room:
            cut = _truncate_output(output, room)
            if cut is not None:
                clean.append(cut)
                room -= _size(cut)
            remaining = len(outputs) - index - (1 if cut is not None else 0)
            if remaining > 0 or cut is None:
                clean.append(_note("further output of this cell removed: it exceeded the grader's size limit"))
            break
        clean.append(output)
        room -= size
    if budget is not None:
        budget.remaining -= sum(_size(o) for o in clean)
        budget.remaining = max(budget.remaining, 0)
    return clean


def sanitize_markdown(source: str) -> str:
    """Markdown with raw HTML cleaned by ``nh3`` (text without ``<`` is left as written)."""
    if "<" not in source:
        return source
    return nh3.clean(source)


def sanitize_notebook(nb: Any, *, max_cell_chars: int, max_total_chars: int, skip: Iterable[int] = ()) -> None:
    """Sanitize, in place, every code cell's outputs and every markdown and raw cell.

    Cells whose index is in ``skip`` are left alone (outputs the trusted side
    wrote itself). Raw cells lose their ``format``/``raw_mimetype`` metadata,
    so exporters never paste them into HTML verbatim; notebook-level widget
    state, which the HTML template embeds in a script element, is removed.
    """
    skipped = set(skip)
    budget = OutputBudget(max_total_chars)
    metadata = nb.get("metadata", {})
    if isinstance(metadata, dict):
        metadata.pop("widgets", None)
    for index, cell in enumerate(nb.get("cells", [])):
        if index in skipped:
            continue
        kind = cell.get("cell_type")
        if kind == "code":
            outputs = sanitize_outputs(cell.get("outputs", []), max_cell_chars=max_cell_chars, budget=budget)
            cell["outputs"] = [nbformat.from_dict(o) for o in outputs]
        elif kind == "markdown":
            cell["source"] = sanitize_markdown(_text(cell.get("source")) or "")
        elif kind == "raw":
            cell["source"] = sanitize_markdown(_text(cell.get("source")) or "")
            cell_meta = cell.get("metadata", {})
            for key in ("format", "raw_mimetype"):
                cell_meta.pop(key, None)
