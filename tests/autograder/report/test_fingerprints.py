"""Fingerprints over Python's tokenizer (report/fingerprints.py): what counts, what does not, and stability."""

from __future__ import annotations

import builtins
import io
import json
import keyword
import os
import random
import subprocess
import sys
import tokenize

import pytest
from ch11_autograder.paths import DEMO_CLASS_DIR, SOURCE_DIR
from ch11_autograder.report import fingerprints as fingerprints_module
from ch11_autograder.report.fingerprints import fingerprints, normalized_tokens
from ch11_autograder.report.similarity import answer_cells

SOURCE = '''def scale(values, factor):
    """Multiply every value by factor."""
    out = []  # the result
    for v in values:
        out.append(v * factor + len(values))
    return np.asarray(out, dtype="float64")
'''


def test_names_strings_comments_and_docstrings_do_not_count() -> None:
    renamed = (SOURCE.replace("values", "xs").replace("out", "acc").replace("# the result", "")
               .replace("Multiply every value by factor.", "Other words.").replace('"float64"', "'f8'")
               .replace("scale", "times"))
    assert fingerprints(renamed).keys() == fingerprints(SOURCE).keys()
    tokens = [t for t, _ in normalized_tokens(SOURCE)]
    assert "Multiply" not in " ".join(tokens) and "S" in tokens
    assert tokens[:3] == ["def", "V", "("] and "append" in tokens and "len" in tokens and "asarray" in tokens


def test_what_the_code_does_counts() -> None:
    other = SOURCE.replace("v * factor + len(values)", "v - factor")
    assert fingerprints(other).keys() != fingerprints(SOURCE).keys()


def test_lines_of_each_fingerprint_and_a_broken_cell() -> None:
    spans = [span for found in fingerprints(SOURCE).values() for span in found]
    assert spans and all(1 <= first <= last <= 7 for first, last in spans)
    assert fingerprints("def f(:\n    x = (") == {}  # too few tokens before the error: nothing, no exception
    whole, cut = fingerprints(SOURCE).keys(), fingerprints(SOURCE + "    x = (\n").keys()
    assert len(whole & cut) >= len(whole) - 2  # the tokens before the error still count (only the end differs)


def test_the_same_source_gives_the_same_fingerprints_in_every_process() -> None:
    """Python's own hash() of a string changes with PYTHONHASHSEED; these must not."""
    code = ("import sys; from ch11_autograder.report.fingerprints import fingerprints; "
            "print(sorted(fingerprints(sys.stdin.read())))")
    runs = {subprocess.run([sys.executable, "-c", code], input=SOURCE, capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert len(runs) == 1 and runs != {"[]\n"}


#: Lines where the C tokenizer and tokenize part ways, or might: errors it stops at and tokenize reads past, a
#: number run into a keyword, line ends it reads otherwise, characters that are no token, the DEDENTs that close
#: the source, blank or commented last lines, open brackets and unterminated strings at the end.
EDGE_LINES = ["def f(a, b):", "    return a", "if x:", "    pass", "        y = (1,", "  2)", "'''doc", "'''",
              '"""docstring"""', "# comment", "", "   ", "\t", "\tz = 3", "x = $", "q = 'abc", "a \\", "b",
              "1if x else 2", "0x1for", "1jif", "1.else", "f'{x!r}'", "class C:", "    '''d'''", "    def g(self):",
              "        return self.x", "[", "]", ")", "λ = 2", "a → b", "x = a.b.c", "    # c", "else:", "  w",
              "x = [1,", "  # inside", "  2]", "async def h():", "    await z", "try:", "except Exception as e:",
              "@dec", "r'\\d'", "...", "x = ;", "\\", "    \tmix", "a <> b", "`x`", "a ? b", "!x", "x = 1 != 2",
              "'''$x$ `y` ?'''", "\x0c", "a\rb", "x\x01y", "a\u00a0b", "s = '!?'"]


def _edge_sources(count: int = 3000) -> list[str]:
    rng = random.Random(37)
    sources = []
    for _ in range(count):
        source = "\n".join(rng.choice(EDGE_LINES) for _ in range(rng.randint(0, 10)))
        sources.append(source + rng.choice(("", "\n", "\n\n", "\n  ")))
    return sources


def _answers() -> list[str]:
    notebooks = [*SOURCE_DIR.glob("*.ipynb"), *DEMO_CLASS_DIR.glob("*/ch11/*.ipynb")]
    return sorted({s for path in notebooks for s in answer_cells(json.loads(path.read_text())).values()})


def test_the_c_tokenizer_gives_what_tokenize_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fingerprints read the C tokenizer's tokens where it gives tokenize's, and tokenize's elsewhere: the same
    tokens, lines and fingerprints as reading every source with tokenize, on answers and on the edge cases."""
    answers = _answers()
    assert len(answers) > 20 and all(fingerprints_module._compiler_tokens(s) is not None for s in answers)
    sources = [*answers, *_edge_sources()]
    either = [(normalized_tokens(s), fingerprints(s)) for s in sources]
    monkeypatch.setattr(fingerprints_module, "_compiler_tokens", lambda source: None)
    assert [(normalized_tokens(s), fingerprints(s)) for s in sources] == either


def _by_the_rules(source: str) -> list[tuple[str, int]]:
    """:func:`normalized_tokens` as the module states it, one token at a time over tokenize (the reading the
    module replaced: a loop in Python, holding a string that starts a statement until its end is seen)."""
    kept_names = set(dir(builtins)) | set(keyword.kwlist) | set(keyword.softkwlist)
    fixed = {tokenize.STRING: "S", tokenize.NEWLINE: ";", tokenize.INDENT: "{", tokenize.DEDENT: "}"}
    out: list[tuple[str, int]] = []
    previous, last_text, held = tokenize.NEWLINE, "", 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type in (tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER):
                continue
            if held:
                if token.type == tokenize.NEWLINE:  # the string was the whole statement
                    previous, last_text, held = tokenize.NEWLINE, "", 0
                    continue
                out.append(("S", held))
                held = 0
            line = token.start[0]
            if token.type == tokenize.STRING and previous in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
                held = line
            elif token.type == tokenize.NAME:
                out.append((token.string if token.string in kept_names or last_text == "." else "V", line))
            else:
                out.append((fixed.get(token.type, token.string), line))
            previous, last_text = token.type, token.string
    except (tokenize.TokenError, SyntaxError):
        pass
    return out


#: Strings that start a statement and are not the whole of it, and docstrings beside code.
STATEMENT_STRINGS = ['"x".join(y)\n', '"a" "b"\n', 'x = 1\n"doc"\ny = x.z\n', "'''a'''\n'''b'''\nz\n",
                     'class C:\n    "d"\n    def f(self):\n        "e"\n        return self.x.y\n', '"s" % (a,)\n',
                     'if a:\n    "s"\nelse:\n    b . c = "t"\n', '"end"']


def test_tokens_are_kept_and_renamed_by_the_rules() -> None:
    """The tokens kept, and how each reads, decided over the whole sequence at once, are those of reading them
    one at a time: on the course's answers, cut short or whole, and on the edge cases."""
    answers = _answers()
    sources = [*STATEMENT_STRINGS, *answers, *(a[: len(a) // 2] for a in answers), *_edge_sources(1500)]
    assert [normalized_tokens(s) for s in sources] == [_by_the_rules(s) for s in sources]


def test_a_fingerprint_met_twice_keeps_both_places_in_order() -> None:
    block = "    total = total + values[i] * weights[i] - offset\n    count = count + 1\n"
    source = "def f(values, weights, offset):\n" + block * 3 + "    return total, count\n"
    found = fingerprints(source)
    again = [places for places in found.values() if len(places) > 1]
    assert again and all(list(places) == sorted(places) and len(set(places)) == len(places) for places in again)
    assert any(places[1][0] - places[0][0] == 2 for places in again)  # the next copy, two lines on
