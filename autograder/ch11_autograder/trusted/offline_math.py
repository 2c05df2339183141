"""Math in feedback pages without a network: TeX rendered to MathML before the page is written.

nbgrader's feedback template loads MathJax from a CDN, so a student reading feedback offline
(or behind a firewall, or with scripts blocked) sees raw TeX, and every page view tells a third
party who is reading. Instead, :func:`render_math` replaces each ``$...$``, ``$$...$$``,
``\\(...\\)`` and ``\\[...\\]`` of a markdown cell (outside code spans and fenced code) by
MathML from ``latex2mathml``, which current browsers render natively; the feedback template's
MathJax macro is replaced by one that loads nothing (:data:`TEMPLATE_BASEDIR`, set in
``nbgrader_config.py``).

Markdown is student text: the MathML is parsed back and kept only when every element is a
MathML presentation element and every attribute one of a short list (no links, no styles, no
events); otherwise, or when the TeX does not convert, the formula stays as written. The result
is deterministic (same markdown, same bytes).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from latex2mathml.converter import convert

__all__ = ["MATHML_ATTRIBUTES", "MATHML_ELEMENTS", "TEMPLATE_BASEDIR", "render_math", "tex_to_mathml"]

#: Template base directory whose ``feedback/mathjax.html.j2`` replaces nbconvert's CDN loader.
TEMPLATE_BASEDIR = Path(__file__).resolve().parent / "templates"

_MATHML_NS = "{http://www.w3.org/1998/Math/MathML}"
MATHML_ELEMENTS = frozenset({
    "math", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "msub", "msup", "msubsup", "mfrac", "msqrt",
    "mroot", "mover", "munder", "munderover", "mtable", "mtr", "mtd", "mstyle", "mpadded", "mphantom",
    "menclose", "mfenced", "merror", "semantics",
})
MATHML_ATTRIBUTES = frozenset({
    "display", "mathvariant", "stretchy", "width", "height", "depth", "fence", "separator", "lspace", "rspace",
    "accent", "accentunder", "columnalign", "columnspacing", "rowspacing", "columnlines", "rowlines", "frame",
    "linethickness", "displaystyle", "scriptlevel", "minsize", "maxsize", "movablelimits", "symmetric",
    "notation", "open", "close", "separators", "largeop", "form", "rowalign", "columnspan", "rowspan",
    "bevelled", "mathsize", "voffset",
})
#: Longest formula converted; longer ones stay as written (the converter's time grows with it).
MAX_TEX_CHARS = 2000

# Code first (fenced blocks, then backtick spans), so math-like text inside code is left alone;
# then display math before inline math.
_TOKENS = re.compile(
    r"(?P<fence>^(?P<f>`{3,}|~{3,})[^\n]*\n.*?^(?P=f)[ \t]*$)"
    r"|(?P<code>(?P<b>`+).+?(?P=b))"
    r"|\$\$(?P<dd>.+?)\$\$"
    r"|\\\[(?P<db>.+?)\\\]"
    r"|\\\((?P<ib>.+?)\\\)"
    r"|(?<![\\$])\$(?P<id>[^\s$`](?:[^$`]*?[^\s\\$`])?)\$(?!\$)",
    re.S | re.M,
)


def tex_to_mathml(tex: str, *, display: bool) -> str | None:
    """MathML for ``tex`` (``display``: a block formula), or ``None`` when it does not convert
    or the result holds anything but allowed MathML elements and attributes."""
    if len(tex) > MAX_TEX_CHARS:
        return None
    try:
        markup = convert(tex, display="block" if display else "inline")
        root = ET.fromstring(markup)
    except Exception:  # any converter failure leaves the formula as written
        return None
    for element in root.iter():
        tag = element.tag.removeprefix(_MATHML_NS) if isinstance(element.tag, str) else ""
        unknown = [name for name in element.attrib if name not in MATHML_ATTRIBUTES and name != "xmlns"]
        if tag not in MATHML_ELEMENTS or unknown:
            return None
    return markup


def render_math(markdown: str) -> str:
    """``markdown`` with every formula outside code replaced by its MathML (see the module docstring)."""
    if "$" not in markdown and "\\(" not in markdown and "\\[" not in markdown:
        return markdown

    def replace(match: re.Match[str]) -> str:
        if match.group("fence") is not None or match.group("code") is not None:
            return match.group(0)
        display = match.group("dd") is not None or match.group("db") is not None
        tex = next(group for group in match.group("dd", "db", "ib", "id") if group is not None)
        markup = tex_to_mathml(tex.strip(), display=display)
        return match.group(0) if markup is None else markup

    return _TOKENS.sub(replace, markdown)
