"""TeX to MathML for feedback pages (``trusted/offline_math.py``): rendered here, checked, never a script."""

from __future__ import annotations

from ch11_autograder.trusted.offline_math import TEMPLATE_BASEDIR, render_math, tex_to_mathml

INLINE = '<math xmlns="http://www.w3.org/1998/Math/MathML" display="inline">'
BLOCK = '<math xmlns="http://www.w3.org/1998/Math/MathML" display="block">'


def test_inline_and_display_math_become_mathml():
    out = render_math(r"With $d=a^2$ and $$L = bc$$ and \(\bar a\) and \[\lceil L/k\rceil\].")
    assert out.count(INLINE) == 2 and out.count(BLOCK) == 2
    assert "$" not in out and "\\(" not in out and "\\[" not in out
    assert "<msup><mi>a</mi><mn>2</mn></msup>" in out


def test_the_chapters_formulas_all_convert():
    for tex in [r"a=xy,\qquad b=a+x,\qquad c=ay,\qquad L=bc, \tag{11.1}", r"\lceil L/k\rceil + k",
                r"\bar z_L=\mathbf 1", r"z_0,\dots,z_L", r"0.5 \le x, y \le 4", r"h \approx u^{1/2}",
                r"(\partial L/\partial x, \partial L/\partial y)", r"k - \sqrt L", r"\LaTeX"]:
        assert tex_to_mathml(tex, display=False), tex


def test_code_is_left_alone():
    text = "Run `echo $HOME $PATH` first.\n\n```\nprice = \"$5\" + \"$6\"\n```\n"
    assert render_math(text) == text


def test_markup_a_student_writes_in_math_stays_text():
    out = render_math(r"$<script>alert(1)</script>$")
    assert "<script" not in out and INLINE in out  # the converter escaped it: characters, not a tag
    # \href would make a link (an attribute outside the allowlist): the formula stays as written.
    assert render_math(r"see $\href{javascript:alert(1)}{x}$") == r"see $\href{javascript:alert(1)}{x}$"
    assert tex_to_mathml(r"\href{https://example.org}{x}", display=False) is None


def test_unconvertible_or_huge_formulas_stay_as_written():
    assert render_math(r"$\frac{1}{$") == r"$\frac{1}{$"
    huge = "$" + "x+" * 2000 + "x$"
    assert render_math(huge) == huge


def test_the_feedback_template_replaces_the_cdn_loader_with_nothing():
    macro = (TEMPLATE_BASEDIR / "feedback" / "mathjax.html.j2").read_text()
    assert "macro mathjax(" in macro and "<script" not in macro and "http" not in macro
