"""Fingerprints over Python's tokenizer (report/fingerprints.py): what counts, what does not, and stability."""

from __future__ import annotations

import os
import subprocess
import sys

from ch11_autograder.report.fingerprints import fingerprints, normalized_tokens

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
