"""Markdown as nbconvert renders it, cleaned again: no script URL, no remote load, in feedback or formgrader.

``feedback.sanitize_markdown`` cleans the raw HTML a student writes in markdown, but nbconvert's
markdown renderer builds its own elements afterwards: ``[text](javascript:...)`` becomes a live
``<a href="javascript:...">`` and ``![](https://host/pixel.png)`` an image the page loads from
that host when the feedback is opened. Both templates that render submissions, nbgrader's
``feedback`` and ``formgrade``, pass every markdown cell through ``markdown2html |
strip_files_prefix``; ``nbgrader_config.py`` replaces the ``strip_files_prefix`` filter of
``HTMLExporter`` by :func:`strip_files_prefix_and_clean`, which does nbconvert's job and then
cleans the rendered HTML with ``nh3``:

* links keep ``http``, ``https`` and ``mailto`` targets and relative ones (``#anchors``); any
  other scheme (``javascript:``, ``vbscript:``, ``data:``) loses its ``href``;
* an image keeps its ``src`` only as an inline ``data:image/png``, ``jpeg`` or ``gif``; a remote
  or relative source is removed (nothing is fetched when the page opens);
* elements and attributes are nh3's defaults, plus ``class`` and ``id`` (nbconvert's heading
  anchors) and the MathML that ``offline_math`` writes, with its attributes.

The result is deterministic: the same HTML gives the same bytes.
"""

from __future__ import annotations

import re

import nh3
from nbconvert.filters.strings import strip_files_prefix

from .offline_math import MATHML_ATTRIBUTES, MATHML_ELEMENTS

__all__ = ["clean_rendered_markdown", "strip_files_prefix_and_clean"]

_TAGS = frozenset(nh3.ALLOWED_TAGS) | MATHML_ELEMENTS | {"div", "span", "pre", "code"}
_ATTRIBUTES = {
    **{tag: set(names) for tag, names in nh3.ALLOWED_ATTRIBUTES.items()},
    **{tag: set(MATHML_ATTRIBUTES) for tag in MATHML_ELEMENTS},
    "*": {"class", "id"},
}
_LINK_SCHEMES = frozenset({"http", "https", "mailto"})
_INLINE_IMAGE = re.compile(r"data:image/(png|jpeg|gif);base64,[A-Za-z0-9+/=\s]*\Z")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")


def _attribute(element: str, attribute: str, value: str) -> str | None:
    if element == "img" and attribute == "src":
        return value if _INLINE_IMAGE.match(value.strip()) else None
    if attribute == "href":
        scheme = _SCHEME.match(value.strip())
        return value if scheme is None or scheme.group(1).lower() in _LINK_SCHEMES else None
    return value


def clean_rendered_markdown(html: str) -> str:
    """``html`` (markdown rendered by nbconvert) cleaned as the module docstring says."""
    return nh3.clean(
        html,
        tags=set(_TAGS),
        attributes=_ATTRIBUTES,
        generic_attribute_prefixes=None,
        url_schemes=set(_LINK_SCHEMES) | {"data"},
        attribute_filter=_attribute,
        link_rel="noopener noreferrer",
        strip_comments=True,
    )


def strip_files_prefix_and_clean(html: str) -> str:
    """nbconvert's ``strip_files_prefix`` filter, then :func:`clean_rendered_markdown`."""
    return clean_rendered_markdown(strip_files_prefix(html))
