"""The Markdown class report read back as tables, for tests that check what it shows."""

from __future__ import annotations

import re


def _unescape(cell: str) -> str:
    return re.sub(r"\\(.)", r"\1", cell.strip())


def md_tables(text: str) -> dict[tuple[str, ...], list[list[str]]]:
    """Header -> rows of every table of the Markdown report (cells unescaped)."""
    tables: dict[tuple[str, ...], list[list[str]]] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("| ") and i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            header = tuple(_unescape(c) for c in re.split(r"(?<!\\)\|", lines[i])[1:-1])
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("| "):
                rows.append([_unescape(c) for c in re.split(r"(?<!\\)\|", lines[i])[1:-1]])
                i += 1
            assert header not in tables, f"two tables headed {header}"
            tables[header] = rows
        else:
            i += 1
    return tables


def table(tables, first: str, *more: str) -> list[dict[str, str]]:
    """The rows of the table whose header starts with ``first`` and holds ``more``, as dicts."""
    header = next(h for h in tables if h[0] == first and all(m in h for m in more))
    return [dict(zip(header, row, strict=True)) for row in tables[header]]
