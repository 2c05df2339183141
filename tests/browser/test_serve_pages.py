"""The grade-on-submit service's pages as a student's browser shows them: readable, local, inert.

A real :class:`ch11_autograder.serve.service.Service` (in this process, ``full`` feedback level,
one worker, two attempts per hour) watches a real inbound folder. Folders are dropped as
``nbgrader submit`` leaves them (name, timestamp, secret, mode 0777), given to system users who
play the students (``daemon``, ``bin``, ``sys``: giving files away needs root), with
student-named hostile strings: a submission timestamp carrying ``<img onerror>`` markup and an
ANSI escape, a notebook named with markup, and, in the one submission that is graded, a
markdown cell and cell outputs carrying ``<script>``, ``<img onerror>``, ``javascript:`` links,
a remote image and an ANSI escape. The service's own scan and grading round publish every page
into the exchange's feedback directory, under the names ``nbgrader fetch_feedback`` looks for:

* queued (position and expected wait), being graded (caught while the round runs), replaced by
  a newer submission, refused because the attempts are used up, refused because the folder holds
  no notebook of the assignment, refused because it came after the due date (practice feedback
  closed); a forged folder (claiming another student) gets no page at all;
* the graded submission's feedback: nbgrader's ``generate_feedback`` page (level ``full``) as
  the service published it, and the ``properties`` level page the service builds
  (:func:`ch11_autograder.serve.status.feedback_page`) from the same autograded notebook.

Each page is loaded from a ``file://`` URL in Debian's Chromium (Playwright), with every request
recorded and every non-local one aborted. Asserted: the state or reason is in the page's text;
a status page and the ``properties`` page request nothing but themselves; no dialog, no change
of title, no ``window.__pwned``, no live handler, script or ``javascript:`` URL with the
payload's marker, no page error and no console error naming it. On the ``full`` page, no
MathJax is loaded from a CDN (math is MathML, ``trusted/offline_math.py``), a remote ``<img>`` of
the student's markdown is not requested and a markdown ``[text](javascript:...)`` link is dead
(``trusted/rendered_markdown.py``); every resource of that page is local.
Screenshots go to ``build/serve-pages/``.
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import nbformat
import pytest
from ch11_autograder.batch import init_course
from ch11_autograder.course_layout import GRADEBOOK
from ch11_autograder.exchange.api import feedback_name
from ch11_autograder.nbgrader_cli import nbgrader_env
from ch11_autograder.paths import ASSIGNMENT, COURSE_CONFIG, DEMO_CLASS_DIR, SOURCE_DIR
from ch11_autograder.serve.policy import ServePolicy, ServeSettings
from ch11_autograder.serve.service import Service
from ch11_autograder.serve.status import feedback_page
from nbgrader.api import Gradebook
from support import browser as browser_support
from support.paths import BUILD_DIR

pytestmark = [pytest.mark.slow, pytest.mark.browser]

SCREENSHOTS = BUILD_DIR / "serve-pages"
#: The students (system users) and the notebook graded: ex1 is the assignment's cheapest to grade.
GRADED, FLOODER, OTHER = "daemon", "bin", "sys"
NOTEBOOK = "ex1_fanout"
#: What a payload sets when it runs; no page may ever define it.
MARKER = "__pwned"
#: The course's due date: after the real clock (a submission folder whose timestamp.txt cannot be read counts from
#: its arrival, now), before the one submission made after it.
DUE = "2099-01-01 00:00:00 UTC"
HOSTILE_STAMP = "2026-12-02 10:00:03 <img src=x onerror=window.__pwned=1> \x1b[2J"
HOSTILE_NOTEBOOK = "ex1 <img src=x onerror=window.__pwned=2>.ipynb"
HOSTILE_MARKDOWN = """Student note <script>window.__pwned = 'markdown'; document.title = 'pwned';</script>

<img src="x" onerror="window.__pwned = 'onerror'"> <img src="https://tracker.invalid/pixel.png">

[a link](javascript:void(window.__pwned='link')) <a href="javascript:window.__pwned='href'">click</a>
"""
HOSTILE_CODE = """from IPython.display import HTML, display
display(HTML("<script>window.__pwned = 'output'; document.title = 'pwned';</script>"
             "<img src=x onerror=\\"window.__pwned = 'output-img'\\">"))
print("\\x1b[31mANSI red\\x1b[0m <script>window.__pwned = 'stream'</script>")
"""
#: The CDN nbgrader 0.9's feedback template loads MathJax from.
MATHJAX_HOSTS = ("cdnjs.cloudflare.com", "cdn.jsdelivr.net", "cdn.mathjax.org")
#: The remote image a student's markdown points at (``.invalid``: never resolvable; the request is aborted anyway).
TRACKER = "tracker.invalid"

#: Signs in the page that a payload is live: script text, handlers or javascript:/data: URLs with the marker.
LIVE_PAYLOAD_JS = """marker => {
  const found = [];
  for (const el of document.querySelectorAll('*')) {
    if (el.tagName === 'SCRIPT' && el.textContent.includes(marker)) found.push('script: ' + el.textContent);
    for (const attr of el.attributes) {
      const value = attr.value || '';
      if (!value.includes(marker)) continue;
      if (attr.name.startsWith('on')) found.push(el.tagName + ' ' + attr.name);
      if (/^\\s*(javascript|data):/i.test(value)) found.push(el.tagName + ' ' + attr.name + ' URL');
    }
  }
  return found;
}"""


# --------------------------------------------------------------------------- the service and its pages


def drop(inbound: Path, owner: str, stamp: str, notebooks: dict[str, str], claimed: str | None = None) -> str:
    """A submission folder as ``nbgrader submit`` leaves it, owned by ``owner``; returns its secret."""
    folder = inbound / f"{claimed or owner}+{ASSIGNMENT}+{stamp}+{secrets.token_hex(4)}"
    folder.mkdir()
    secret = secrets.token_hex(64)
    for name, text in notebooks.items():
        (folder / name).write_text(text)
    (folder / "timestamp.txt").write_text(stamp)
    (folder / "submission_secret.txt").write_text(secret)
    entry = pwd.getpwnam(owner)
    for path in (folder, *folder.iterdir()):
        os.chown(path, entry.pw_uid, entry.pw_gid)
    folder.chmod(0o777)
    return secret


def hostile_answer() -> str:
    """ada's ex1 answer with a markdown cell and a code cell of payloads appended."""
    nb = nbformat.read(DEMO_CLASS_DIR / "ada" / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4)
    nb.cells += [nbformat.v4.new_markdown_cell(HOSTILE_MARKDOWN), nbformat.v4.new_code_cell(HOSTILE_CODE)]
    return nbformat.writes(nb)


@dataclass
class Pages:
    """Each page a student would fetch, by what it shows, as the service published it (copied when seen)."""

    files: dict[str, Path] = field(default_factory=dict)
    where: Path = Path()

    def keep(self, name: str, published: Path) -> None:
        copy = self.where / f"{name}.html"
        shutil.copyfile(published, copy)
        self.files[name] = copy


def catch(path: Path, text: str, stop: threading.Event, found: list[bytes]) -> None:
    """Poll ``path`` until it holds ``text`` (then keep its bytes) or ``stop`` is set."""
    while not stop.is_set():
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            data = b""
        if text.encode() in data:
            found.append(data)
            return
        time.sleep(0.02)


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> Pages:
    browser_support.require_browser()
    if os.geteuid() != 0:
        pytest.skip("giving submission folders to the users who play the students needs root")
    work = tmp_path_factory.mktemp("serve-pages")
    course = work / "course"
    init_course(course, config=COURSE_CONFIG, source_dir=SOURCE_DIR)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", nbgrader_env()["PATH"])  # a new gradebook runs nbgrader's alembic
        with Gradebook(f"sqlite:///{course / GRADEBOOK}") as gradebook:
            gradebook.update_or_create_assignment(ASSIGNMENT, duedate=DUE)
    exchange = work / "exchange"
    inbound = exchange / "c1" / "inbound"
    inbound.mkdir(parents=True)
    policy = ServePolicy(attempts=2, workers=1, feedback_level="full", sandbox="bwrap")
    service = Service(ServeSettings(course, exchange, "c1", policy, course / "practice"), out=open(os.devnull, "w"))
    feedback = service.settings.feedback
    plain = (DEMO_CLASS_DIR / "lin" / ASSIGNMENT / f"{NOTEBOOK}.ipynb").read_text()
    nb = f"{NOTEBOOK}.ipynb"

    graded = drop(inbound, GRADED, "2026-12-02 10:00:00.000000 UTC", {nb: hostile_answer()})
    replaced = drop(inbound, FLOODER, "2026-12-02 10:00:01.000000 UTC", {nb: plain})
    queued = drop(inbound, FLOODER, "2026-12-02 10:00:02.000000 UTC", {nb: plain})
    refused = drop(inbound, FLOODER, HOSTILE_STAMP, {nb: plain})
    wrong = drop(inbound, OTHER, "2026-12-02 10:00:04.000000 UTC", {HOSTILE_NOTEBOOK: plain})
    forged = drop(inbound, GRADED, "2026-12-02 10:00:05.000000 UTC", {nb: plain}, claimed=OTHER)
    closed = drop(inbound, OTHER, "2099-01-02 00:00:00.000000 UTC", {nb: plain})  # after DUE
    assert service.scan() == 3  # graded, replaced (then superseded by queued), queued

    found = Pages(where=work / "fetched")
    found.where.mkdir()

    def page(secret: str, stem: str = NOTEBOOK) -> Path:
        return feedback / feedback_name(secret, stem)

    found.keep("queued-1", page(graded))
    found.keep("queued-2", page(queued))
    found.keep("replaced", page(replaced))
    found.keep("refused-attempts", page(refused))
    found.keep("refused-wrong-notebook", page(wrong, HOSTILE_NOTEBOOK.removesuffix(".ipynb")))
    found.keep("refused-closed", page(closed))
    assert not page(forged).exists(), "a forged folder's secret may be anyone's: no page is published for it"

    stop, grading = threading.Event(), []
    watcher = threading.Thread(target=catch, args=(page(graded), "Being graded", stop, grading))
    watcher.start()
    try:
        assert service.hand_out() == 1  # one slot: the graded student's submission
        while service._grading and not any(s.secret == graded for s in service.queue.in_state("done")):
            service.collect(120)
    finally:
        stop.set()
        watcher.join()
        service._close_session()  # the freed slot took the queued submission: not needed here
    assert grading, "the status page of the submission being graded was never seen"
    (found.where / "grading.html").write_bytes(grading[0])
    found.files["grading"] = found.where / "grading.html"
    found.keep("feedback-full", page(graded))
    row = next(s for s in service.queue.in_state("done") if s.secret == graded)
    autograded = json.loads((course / "practice" / "autograded" / GRADED / ASSIGNMENT / nb).read_text())
    (found.where / "feedback-properties.html").write_text(
        feedback_page(NOTEBOOK, row.stamp, "properties", autograded, row.score, row.max_score))
    found.files["feedback-properties"] = found.where / "feedback-properties.html"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return found


@pytest.fixture(scope="module")
def chromium(pages) -> Iterator[Any]:
    # After ``pages``, which skips (or, under CI, fails) first when there is no browser.
    with browser_support.chromium() as browser:
        yield browser


# --------------------------------------------------------------------------- one page in the browser


@dataclass
class Load:
    """What Chromium did with one page: its text and title, every request, dialog and error."""

    text: str
    title: str
    requests: list[str]
    dialogs: list[str]
    errors: list[str]
    live: list[str]
    pwned: Any


def local(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("file", "data", "about") or parts.hostname in ("127.0.0.1", "localhost", "::1")


def mathjax(url: str) -> bool:
    return urlsplit(url).hostname in MATHJAX_HOSTS and "mathjax" in url.lower()


def load(browser: Any, path: Path, name: str) -> Load:
    """Open ``path`` from file://, aborting every non-local request (each is recorded first)."""
    context = browser.new_context(viewport={"width": 1000, "height": 700})
    requests: list[str] = []
    dialogs: list[str] = []
    errors: list[str] = []

    def route(route: Any) -> None:
        url = route.request.url
        requests.append(url)
        if local(url):
            route.continue_()
        else:
            route.abort()

    def dialog(d: Any) -> None:
        dialogs.append(f"{d.type}: {d.message}")
        d.dismiss()

    try:
        context.route("**/*", route)
        tab = context.new_page()
        tab.on("dialog", dialog)
        tab.on("console", lambda msg: errors.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None)
        tab.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
        tab.goto(path.as_uri(), wait_until="load")
        tab.wait_for_timeout(300)  # a payload on a timer or a late onerror would have run by now
        tab.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
        return Load(text=tab.evaluate("document.body.innerText"), title=tab.title(), requests=requests,
                    dialogs=dialogs, errors=errors, live=tab.evaluate(LIVE_PAYLOAD_JS, MARKER),
                    pwned=tab.evaluate(f"window.{MARKER} === undefined ? null : String(window.{MARKER})"))
    finally:
        context.close()


def assert_inert(seen: Load, title: str) -> None:
    assert seen.pwned is None, f"a payload ran: window.{MARKER} = {seen.pwned!r}"
    assert seen.title == title, f"the title changed to {seen.title!r}"
    assert seen.dialogs == [] and seen.live == []
    assert [e for e in seen.errors if MARKER in e or "pwned" in e] == []


# --------------------------------------------------------------------------- the status pages

STATUS = {
    "queued-1": ("Queued: position 1 in the grading queue, expected wait", f"{NOTEBOOK}: submission status"),
    "queued-2": ("Queued: position 2 in the grading queue, expected wait", f"{NOTEBOOK}: submission status"),
    "grading": ("Being graded since", f"{NOTEBOOK}: submission status"),
    "replaced": ("Replaced: you submitted again before this submission was graded", f"{NOTEBOOK}: submission status"),
    "refused-attempts": ("Not graded: attempts used up: 2 submissions graded in the last",
                         f"{NOTEBOOK}: submission status"),
    "refused-wrong-notebook": ("Not graded: it holds no notebook of the assignment",
                               f"{HOSTILE_NOTEBOOK.removesuffix('.ipynb')}: submission status"),
    "refused-closed": ("Not graded: practice feedback closed at 2099-01-01 00:00 UTC; your submission is kept for the "
                       "instructor's grading.", f"{NOTEBOOK}: submission status"),
}


@pytest.mark.parametrize("name", list(STATUS))
def test_status_page(chromium, pages: Pages, name: str) -> None:
    shows, title = STATUS[name]
    seen = load(chromium, pages.files[name], name)
    assert shows in seen.text, seen.text
    assert "fetch_feedback" in seen.text or name.startswith(("refused", "replaced"))
    assert [url for url in seen.requests if not local(url)] == [], "a status page loads nothing remote"
    assert seen.requests == [pages.files[name].as_uri()], "a status page is one self-contained file"
    assert seen.errors == []
    assert_inert(seen, title)
    if name == "refused-wrong-notebook":  # the student's notebook name, shown as text
        assert "ex1 <img src=x onerror=window.__pwned=2>" in seen.text
    if name == "refused-attempts":  # the hostile timestamp of the folder's name, shown as text
        assert "<img src=x onerror=window.__pwned=1>" in seen.text


# --------------------------------------------------------------------------- the feedback pages


def test_properties_feedback_page(chromium, pages: Pages) -> None:
    seen = load(chromium, pages.files["feedback-properties"], "feedback-properties")
    assert f"{NOTEBOOK}: practice feedback for your submission of 2026-12-02 10:00:00.000000 UTC" in seen.text
    assert "points" in seen.text and "passed" in seen.text, seen.text
    assert seen.requests == [pages.files["feedback-properties"].as_uri()]
    assert seen.errors == []
    assert_inert(seen, f"{NOTEBOOK}: practice feedback")


@pytest.fixture(scope="module")
def full(chromium, pages: Pages) -> Load:
    return load(chromium, pages.files["feedback-full"], "feedback-full")


def test_full_feedback_page_shows_the_submission_inert(full: Load) -> None:
    assert "Student note" in full.text and "ANSI red" in full.text, "the hostile cells are shown, as text"
    assert "\x1b" not in full.text, "the ANSI escape is rendered (as colour), not passed through"
    assert "checks passed" in full.text, "the trusted verdicts are on the page"
    assert full.pwned is None, f"a payload ran: window.{MARKER} = {full.pwned!r}"
    assert full.title == NOTEBOOK, f"the title changed to {full.title!r}"
    assert full.dialogs == []
    assert [e for e in full.errors if e.startswith("pageerror") or MARKER in e or "pwned" in e] == []
    assert full.live == [], "no live handler, script or javascript: URL of the submission's"


def test_full_feedback_page_loads_nothing_remote(full: Load) -> None:
    assert [url for url in full.requests if not local(url)] == []


def test_full_feedback_page_loads_mathjax_locally(full: Load) -> None:
    assert [url for url in full.requests if mathjax(url)] == []


def test_full_feedback_page_loads_no_remote_image_of_the_submission(full: Load) -> None:
    assert [url for url in full.requests if urlsplit(url).hostname == TRACKER] == []


def test_full_feedback_page_markdown_javascript_link_is_dead(chromium, pages: Pages) -> None:
    context = chromium.new_context()
    try:
        context.route("**/*", lambda route: route.continue_() if local(route.request.url) else route.abort())
        tab = context.new_page()
        tab.goto(pages.files["feedback-full"].as_uri(), wait_until="load")
        tab.get_by_text("a link", exact=True).click()
        tab.wait_for_timeout(200)
        assert tab.evaluate(f"window.{MARKER} === undefined") is True, "the student's javascript: link ran"
    finally:
        context.close()
