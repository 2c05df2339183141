"""Run docs/course.md's marked shell blocks as written, with only the page's placeholders replaced.

The marking. A fenced block that a tier runs is announced by an HTML comment on the line just
before its opening fence (indentation aside; no blank line between)::

    <!-- page-run: STEP as=USER -->
    ```
    ...commands...
    ```

* ``STEP`` names the block: lowercase letters, digits and ``-``, unique on the page; errors and
  timings name it.
* ``USER`` is the unix user the block runs as: ``root``, or a placeholder of the page's table
  (``as=<instructor>``), replaced like any other.
* The block's lines, with the fence's indentation taken off, are one script run by
  ``bash -euo pipefail`` from ``/``: a block works from the directory it ``cd``s to, not from the
  one a previous block left, and the first failing command fails it.
* ``<!-- page-run: STEP as=USER file=PATH -->`` marks a block that is a file's text (a config
  block the page says to put in ``PATH``): the step appends the block's lines to ``PATH`` as
  ``USER`` (two blocks of one file, in page order, make the file), with the mode the file
  already has, or the umask's when it is new.

The placeholders. The page's table under a heading ``Placeholders`` (a Markdown table whose first
column is the placeholder in backticks, ``<checkout>``, and whose second says what it stands for)
is the whole list. :func:`page_steps` replaces exactly that table's entries, each with the value the
tier gives it, in the marked blocks and nothing else; a value given for a name the table lacks is
an error, and a ``<name>`` left in a marked block after substitution (a placeholder the table does
not list, or one the tier gave no value) fails with the step named. Placeholders are ``<`` then a
lowercase letter, then letters, digits, ``-`` or ``_``, then ``>``: shell redirections
(``< file``, ``<<EOF``, ``2>&1``) never match.

Targets. :class:`LocalBash` runs the scripts here (as this process's user only: a toy page in a
fast test); :class:`DockerTarget` runs them in a running container with ``docker exec --user``.
:func:`run_steps` runs steps in page order and raises :class:`PageStepError` naming the first
step that fails, its line on the page and the tail of its output.
"""

from __future__ import annotations

import getpass
import re
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

__all__ = [
    "DockerTarget",
    "LocalBash",
    "PageError",
    "PageStep",
    "PageStepError",
    "page_steps",
    "placeholders",
    "run_steps",
]

MARKER = re.compile(r"^\s*<!--\s*page-run:\s*(?P<step>[a-z0-9][a-z0-9-]*)\s+as=(?P<user>\S+)"
                    r"(?:\s+file=(?P<file>\S+))?\s*-->\s*$")
#: The end of a file block's text in the script that appends it (no page line is this).
_FILE_END = "CH11_PAGE_BLOCK_END"
FENCE = re.compile(r"^(?P<indent>\s*)```[\w-]*\s*$")
PLACEHOLDER = re.compile(r"<[a-z][a-z0-9_-]*>")
_TABLE_ROW = re.compile(r"^\|\s*`(?P<name><[a-z][a-z0-9_-]*>)`\s*\|\s*(?P<meaning>[^|]+?)\s*\|")
#: Lines of a failing step's output kept in its error.
TAIL_LINES = 40


class PageError(ValueError):
    """The page's marks or placeholder table are malformed; the message names the line."""


@dataclass(frozen=True)
class PageStep:
    """One marked block after substitution: its name, the user it runs as, its script, its line on the page."""

    name: str
    user: str
    script: str
    line: int


@dataclass
class PageStepError(AssertionError):
    """A step failed (or could not be prepared): which one, where on the page, and what it printed last."""

    step: str
    line: int
    detail: str
    output_tail: str = ""

    def __str__(self) -> str:
        text = f"page step {self.step!r} (docs line {self.line}) {self.detail}"
        return f"{text}\n--- its output, last lines ---\n{self.output_tail}" if self.output_tail else text


def placeholders(page: str) -> dict[str, str]:
    """The page's placeholder table: ``<name>`` -> what it stands for.

    Raises:
        PageError: no heading named ``Placeholders`` with a table under it, or a name listed twice.
    """
    lines = page.splitlines()
    heads = [i for i, line in enumerate(lines) if re.match(r"^#+\s+Placeholders\s*$", line)]
    if len(heads) != 1:
        raise PageError(f"the page needs exactly one 'Placeholders' heading, found {len(heads)}")
    table: dict[str, str] = {}
    in_table = False
    for number, line in enumerate(lines[heads[0] + 1:], start=heads[0] + 2):
        if line.startswith("|"):
            in_table = True
            row = _TABLE_ROW.match(line)
            if row:
                if row["name"] in table:
                    raise PageError(f"line {number}: {row['name']} is listed twice in the placeholder table")
                table[row["name"]] = row["meaning"]
        elif in_table or line.startswith("#"):
            break
    if not table:
        raise PageError("the 'Placeholders' heading has no table of `<name>` rows under it")
    return table


def _blocks(page: str) -> Iterable[tuple[str, str, str | None, int, list[str]]]:
    """(step, user, file or None, line of the marker, the block's lines) for every marked block, in page order.

    Lines inside fenced blocks are text, never marks (the page shows the mark's syntax in one).
    """
    lines = page.splitlines()
    seen: set[str] = set()
    i = 0
    while i < len(lines):
        line = lines[i]
        if FENCE.match(line):
            i = _closing_fence(lines, i) + 1
            continue
        mark = MARKER.match(line)
        if not mark:
            if "page-run:" in line:
                raise PageError(f"line {i + 1}: malformed page-run mark {line.strip()!r} "
                                "(expected <!-- page-run: STEP as=USER --> or ... as=USER file=PATH -->)")
            i += 1
            continue
        step = mark["step"]
        if step in seen:
            raise PageError(f"line {i + 1}: page step {step!r} is marked twice")
        seen.add(step)
        opening = FENCE.match(lines[i + 1]) if i + 1 < len(lines) else None
        if not opening:
            raise PageError(f"line {i + 1}: the page-run mark of {step!r} is not followed by a fenced block")
        indent = len(opening["indent"])
        end = _closing_fence(lines, i + 1)
        body = [text[indent:] if text[:indent].strip() == "" else text for text in lines[i + 2:end]]
        if mark["file"] and _FILE_END in body:
            raise PageError(f"line {i + 1}: the block of {step!r} holds a line {_FILE_END}")
        yield step, mark["user"], mark["file"], i + 1, body
        i = end + 1


def _closing_fence(lines: list[str], opening: int) -> int:
    """The index of the line closing the fenced block opened at ``opening``."""
    for j in range(opening + 1, len(lines)):
        if lines[j].strip() == "```":
            return j
    raise PageError(f"line {opening + 1}: a fenced block is never closed")


def _substitute(text: str, values: Mapping[str, str]) -> str:
    return PLACEHOLDER.sub(lambda m: values.get(m.group(0), m.group(0)), text)


def page_steps(page: str, values: Mapping[str, str], only: Sequence[str] | None = None) -> list[PageStep]:
    """The marked blocks of ``page`` in page order (those named in ``only``, when given), substituted.

    Raises:
        PageError: the marks or the table are malformed, ``values`` names a placeholder the table
            lacks, or ``only`` names a step the page does not mark.
        PageStepError: a placeholder is left in a step (or its user) after substitution.
    """
    table = placeholders(page)
    extra = sorted(set(values) - set(table))
    if extra:
        raise PageError(f"values given for {', '.join(extra)}, which the page's placeholder table does not list")
    steps = []
    for step, user, file, line, body in _blocks(page):
        if only is not None and step not in only:
            continue
        script = _substitute("\n".join(body), values) + "\n"
        if file is not None:  # a quoted here-document: the text goes in as written, nothing expanded
            script = f"cat >> {_substitute(file, values)} <<'{_FILE_END}'\n{script}{_FILE_END}\n"
        who = _substitute(user, values)
        left = sorted(set(PLACEHOLDER.findall(script + " " + who)))
        if left:
            unknown = [name for name in left if name not in table]
            why = (f"uses {', '.join(unknown)}, not in the page's placeholder table" if unknown
                   else f"uses {', '.join(left)}, for which the tier gave no value")
            raise PageStepError(step, line, why)
        steps.append(PageStep(step, who, script, line))
    missing = sorted(set(only or ()) - {s.name for s in steps})
    if missing:
        raise PageError(f"the page marks no step {', '.join(missing)}")
    return steps


class Target(Protocol):
    def run(self, step: PageStep) -> subprocess.CompletedProcess[str]:
        """Run ``step.script`` as ``step.user``; stdout and stderr together in ``stdout``."""
        ...


@dataclass(frozen=True)
class LocalBash:
    """Runs steps on this machine as this process's user (a step naming another user is refused)."""

    env: Mapping[str, str] | None = None
    timeout: float = 600

    def run(self, step: PageStep) -> subprocess.CompletedProcess[str]:
        if step.user != getpass.getuser():
            raise PageStepError(step.name, step.line, f"runs as {step.user}, and a local run is {getpass.getuser()}'s")
        return subprocess.run(["bash", "-euo", "pipefail", "-c", step.script], cwd="/", env=self.env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=self.timeout)


@dataclass(frozen=True)
class DockerTarget:
    """Runs steps in the running container ``container`` with ``docker exec --user``.

    ``umask`` is set before each script (the root of a hardened machine has 077); ``env`` is what
    the container needs from the host that the page does not say (the host's TLS trust, say):
    passed with ``--env``, so it is visible in one place.
    """

    container: str
    env: Mapping[str, str] = field(default_factory=dict)
    umask: str = "022"
    timeout: float = 1800

    def run(self, step: PageStep) -> subprocess.CompletedProcess[str]:
        argv = ["docker", "exec", "--user", step.user, "--workdir", "/"]
        for name, value in sorted(self.env.items()):
            argv += ["--env", f"{name}={value}"]
        script = f"umask {self.umask}\n{step.script}"
        return subprocess.run([*argv, self.container, "bash", "-euo", "pipefail", "-c", script],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=self.timeout)

    def start(self, step: PageStep, output: str) -> None:
        """Start ``step`` (a command that runs until stopped: the hub) in the background, its output to the
        file ``output`` in the container (as a service manager's journal: not a terminal); returns at once.

        Raises:
            PageStepError: ``docker exec --detach`` itself failed (the step's own failure shows in ``output``).
        """
        argv = ["docker", "exec", "--detach", "--user", step.user, "--workdir", "/"]
        for name, value in sorted(self.env.items()):
            argv += ["--env", f"{name}={value}"]
        script = f"umask {self.umask}\nexec >>{output} 2>&1 </dev/null\n{step.script}"
        done = subprocess.run([*argv, self.container, "bash", "-euo", "pipefail", "-c", script],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
        if done.returncode != 0:
            raise PageStepError(step.name, step.line, f"could not be started (docker exec exited {done.returncode})",
                                _tail(done.stdout))


def run_steps(steps: Sequence[PageStep], target: Target, log: Path | None = None) -> dict[str, float]:
    """Run ``steps`` in order on ``target``; step -> seconds. Each step's output is appended to ``log``.

    Raises:
        PageStepError: the first step whose script exits non-zero or times out, with its output's tail.
    """
    seconds: dict[str, float] = {}
    for step in steps:
        start = time.monotonic()
        try:
            done = target.run(step)
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            raise PageStepError(step.name, step.line, f"timed out after {exc.timeout:.0f} s",
                                _tail(out)) from exc
        seconds[step.name] = time.monotonic() - start
        if log is not None:
            with log.open("a") as handle:
                handle.write(f"===== {step.name} (docs line {step.line}, as {step.user}): exit {done.returncode}, "
                             f"{seconds[step.name]:.0f} s\n{done.stdout}\n")
        if done.returncode != 0:
            raise PageStepError(step.name, step.line, f"exited {done.returncode}", _tail(done.stdout))
    return seconds


def _tail(output: str) -> str:
    return "\n".join(output.rstrip().splitlines()[-TAIL_LINES:])
