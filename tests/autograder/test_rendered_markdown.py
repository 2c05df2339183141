"""Markdown rendered by nbconvert, cleaned again: script URLs and remote images never reach a page."""

from __future__ import annotations

import re

import nbformat
import pytest
from ch11_autograder.trusted.offline_math import render_math
from ch11_autograder.trusted.rendered_markdown import clean_rendered_markdown, strip_files_prefix_and_clean
from nbconvert import HTMLExporter
from traitlets.config import Config

HOSTILE_MARKDOWN = """# Heading

[a link](javascript:alert(document.domain)) [b](  JaVaScRiPt:alert(1)) [c](vbscript:msgbox)
[d](data:text/html;base64,PHNjcmlwdD4=) [ok](https://example.org/page) [mail](mailto:ta@example.org)
[anchor](#Heading)

![pixel](https://tracker.example/pixel.png) ![rel](../../gradebook.db)
![inline](data:image/png;base64,iVBORw0KGgo=)

The gradient $\\bar a = 54$ stays math.
"""


def _rendered(markdown: str, *, cleaned: bool) -> str:
    """The body of a one-cell notebook as nbconvert's classic template renders it, with or without the filter."""
    config = Config()
    if cleaned:
        config.HTMLExporter.filters = {
            "strip_files_prefix": "ch11_autograder.trusted.rendered_markdown.strip_files_prefix_and_clean"
        }
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(render_math(markdown))])
    body, _ = HTMLExporter(config=config, template_name="classic").from_notebook_node(nb)
    return body


def _urls(html: str, attribute: str) -> list[str]:
    return re.findall(rf'{attribute}="([^"]*)"', html)


def test_without_the_filter_nbconvert_builds_script_links_and_remote_images():
    # The control: what the filter is for.
    body = _rendered(HOSTILE_MARKDOWN, cleaned=False)
    assert any(url.lower().lstrip().startswith("javascript:") for url in _urls(body, "href"))
    assert "https://tracker.example/pixel.png" in _urls(body, "src")


def test_with_the_filter_links_keep_only_safe_schemes_and_images_only_inline_data():
    body = _rendered(HOSTILE_MARKDOWN, cleaned=True)
    hrefs = _urls(body, "href")
    assert not [h for h in hrefs if re.match(r"\s*(javascript|vbscript|data):", h, re.IGNORECASE)], hrefs
    assert "https://example.org/page" in hrefs and "mailto:ta@example.org" in hrefs and "#Heading" in hrefs
    images = re.findall(r"<img[^>]*>", body.split("<body", 1)[1])
    assert [re.search(r'src="([^"]*)"', img).group(1) for img in images if "src=" in img] == [
        "data:image/png;base64,iVBORw0KGgo="
    ]
    assert len(images) == 3  # the two others are kept, without a source
    assert "tracker.example" not in body and "gradebook.db" not in body
    assert "<math" in body and "a link" in body  # math and the link text stay


@pytest.mark.parametrize(
    ("html", "want"),
    [
        ('<a href="javascript:x()">t</a>', '<a rel="noopener noreferrer">t</a>'),
        ('<a href="https://a.b/">t</a>', '<a href="https://a.b/" rel="noopener noreferrer">t</a>'),
        ('<img src="https://a.b/p.png" alt="p">', '<img alt="p">'),
        ('<img src="data:image/svg+xml;base64,PHN2Zz4=">', "<img>"),
        ('<p onclick="x()" style="color:red">t</p>', "<p>t</p>"),
        ("<script>alert(1)</script>", ""),
        ('<h1 id="h" class="c">t</h1>', '<h1 id="h" class="c">t</h1>'),
    ],
)
def test_clean_rendered_markdown(html, want):
    assert clean_rendered_markdown(html) == want


def test_the_filter_strips_nbconverts_files_prefix_first():
    want = '<a href="x.html" rel="noopener noreferrer">x</a>'
    assert strip_files_prefix_and_clean('<a href="files/x.html">x</a>') == want
