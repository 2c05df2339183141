"""The plug-in against nbgrader's own folder exchange: one term's actions through each, side by side.

The same sequence runs twice, with nbgrader 0.9.6's exchange classes built and started as its
commands build and start them (``ExchangeFactory(...).<Action>(coursedir=..., authenticator=...)``,
``start()``): once with the folder exchange (``nbgrader.exchange.default``, a private root, the
students named by ``--student``), once with the plug-in (:mod:`ch11_autograder.exchange.hub.plugin`)
against the service on a real JupyterHub, each person with a token the hub issued. The sequence:
release; alice and bob fetch; alice submits twice, bob once; list (released and cached); the
instructor lists inbound and collects; feedback is made for each collected submission as nbgrader's
``generate_feedback`` leaves it (the html beside the submission's ``timestamp.txt`` and
``submission_secret.txt``) and released; each student lists, fetches feedback and lists again; alice's
feedback is changed and released again, and she lists (``feedback_updated``), fetches and lists.

What must be equal: every list dictionary (paths with the exchange's root, the homes and each
submission's time put as placeholders, and so the random suffix nbgrader adds to a submission), the files
each student fetched and the feedback they got, the collected files (``timestamp.txt`` by
placeholder, ``submission_secret.txt`` 128 hex digits). Both runs are in one process: the folder
exchange is nbgrader's unchanged code, so a difference is the plug-in's.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from nbgrader.auth import Authenticator
from nbgrader.coursedir import CourseDirectory
from nbgrader.exchange import ExchangeError, ExchangeFactory
from support import hub_exchange
from support.hub_exchange import ExchangeHub
from traitlets.config import Config

from .conftest import NOTEBOOK, tree

pytestmark = [pytest.mark.slow, pytest.mark.hub]

COURSE, ASSIGNMENT = "ch11", "ps1"
PLUGIN = "ch11_autograder.exchange.hub.plugin."
ACTIONS = {"release_assignment": "HubReleaseAssignment", "fetch_assignment": "HubFetchAssignment",
           "submit": "HubSubmit", "list": "HubList", "collect": "HubCollect",
           "release_feedback": "HubReleaseFeedback", "fetch_feedback": "HubFetchFeedback"}
FACTORY = {"release_assignment": "ReleaseAssignment", "fetch_assignment": "FetchAssignment", "submit": "Submit",
           "list": "List", "collect": "Collect", "release_feedback": "ReleaseFeedback",
           "fetch_feedback": "FetchFeedback"}
STUDENTS = ("alice", "bob")


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ExchangeHub]:
    hub_exchange.require_exchange_hub()
    with hub_exchange.exchange_hub(tmp_path_factory.mktemp("plugin-hub")) as running:
        for student in STUDENTS:
            running.user(student, f"nbgrader-{COURSE}")
        running.user("prof", f"formgrade-{COURSE}")
        yield running


@pytest.fixture(autouse=True)
def _alembic_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """nbgrader's gradebook (collect reads the due date from it) runs ``alembic`` from PATH, as in a user's venv."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")


class Term:
    """One exchange (``kind``: ``folder`` or ``hub``) and the people using it, each with a home and cache."""

    def __init__(self, base: Path, kind: str, hub: ExchangeHub | None) -> None:
        self.base, self.kind, self.hub = base, kind, hub
        self.exchange = base / "exchange"
        self.tokens = {who: hub.token(who) for who in (*STUDENTS, "prof")} if hub else {}
        for who in (*STUDENTS, "prof"):
            (base / who).mkdir(parents=True)

    def config(self, who: str, **course: str) -> Config:
        c = Config()
        c.CourseDirectory.root = str(self.base / "prof")
        c.CourseDirectory.course_id = COURSE
        for key, value in course.items():
            setattr(c.CourseDirectory, key, value)
        c.Exchange.assignment_dir = str(self.base / who)
        c.Exchange.cache = str(self.base / who / ".cache")
        c.Exchange.root = str(self.exchange)
        if self.kind == "hub":
            assert self.hub is not None
            for action, name in ACTIONS.items():
                setattr(c.ExchangeFactory, action, PLUGIN + name)
            c.HubExchange.service_url = self.hub.service_url
            c.HubExchange.api_token = self.tokens[who]
        elif who in STUDENTS:
            c.CourseDirectory.student_id = who  # the folder exchange's only way to name another student
        return c

    def run(self, who: str, action: str, *, assignment: str = ASSIGNMENT, **options: Any) -> Any:
        """The exchange action as nbgrader's command runs it, for ``who``."""
        config = self.config(who, assignment_id=assignment)
        exchange = getattr(ExchangeFactory(config=config), FACTORY[action])(
            coursedir=CourseDirectory(config=config), authenticator=Authenticator(config=config), config=config)
        for key, value in options.items():
            setattr(exchange, key, value)
        return exchange.start()


def _make_release(base: Path) -> None:
    release = base / "prof" / "release" / ASSIGNMENT
    release.mkdir(parents=True)
    (release / "problem1.ipynb").write_bytes(NOTEBOOK)
    (release / "data.txt").write_text("released data\n")


def _answer(term: Term, who: str, text: str) -> None:
    notebook = json.loads(NOTEBOOK)
    notebook["cells"] = [{"cell_type": "markdown", "metadata": {}, "source": text}]
    (term.base / who / ASSIGNMENT / "problem1.ipynb").write_text(json.dumps(notebook))


def _make_feedback(term: Term) -> None:
    """What generate_feedback leaves for each collected submission: html, timestamp.txt, submission_secret.txt."""
    for student in STUDENTS:
        submitted = term.base / "prof" / "submitted" / student / ASSIGNMENT
        feedback = term.base / "prof" / "feedback" / student / ASSIGNMENT
        feedback.mkdir(parents=True)
        for name in ("timestamp.txt", "submission_secret.txt"):
            (feedback / name).write_bytes((submitted / name).read_bytes())
        answer = json.loads((submitted / "problem1.ipynb").read_text())["cells"][0]["source"]
        (feedback / "problem1.html").write_text(f"<p>feedback for {student}: {answer}</p>")


def play(term: Term) -> dict[str, Any]:
    """The term (see the module); what each step gave."""
    seen: dict[str, Any] = {}
    _make_release(term.base)
    term.run("prof", "release_assignment")
    seen["prof list"] = term.run("prof", "list")
    for student in STUDENTS:
        seen[f"{student} list before fetch"] = term.run(student, "list")
        term.run(student, "fetch_assignment")
        seen[f"{student} list after fetch"] = term.run(student, "list")
    for student, answers in (("alice", ["first", "second"]), ("bob", ["only"])):
        for text in answers:
            _answer(term, student, f"{student}'s {text} answer")
            term.run(student, "submit")
            time.sleep(0.05)  # two submissions never share a time
        seen[f"{student} cached"] = term.run(student, "list", cached=True)
    seen["prof inbound"] = term.run("prof", "list", inbound=True)
    term.run("prof", "collect")
    _make_feedback(term)
    term.run("prof", "release_feedback")
    seen["prof inbound with feedback"] = term.run("prof", "list", inbound=True)
    for student in STUDENTS:
        seen[f"{student} cached with feedback"] = term.run(student, "list", cached=True)
        term.run(student, "fetch_feedback")
        seen[f"{student} cached after fetch_feedback"] = term.run(student, "list", cached=True)
    # The instructor changes alice's feedback and releases again: her list says it was updated.
    html = term.base / "prof" / "feedback" / "alice" / ASSIGNMENT / "problem1.html"
    html.write_text(html.read_text() + "<p>regraded</p>")
    term.run("prof", "release_feedback", assignment=ASSIGNMENT)
    seen["alice cached after a new release_feedback"] = term.run("alice", "list", cached=True)
    term.run("alice", "fetch_feedback")
    seen["alice cached after fetching it"] = term.run("alice", "list", cached=True)
    seen["files"] = {who: tree(term.base / who) for who in (*STUDENTS, "prof")}
    return seen


TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6} UTC")


def normalised(seen: dict[str, Any], term: Term) -> Any:
    """``seen`` with the term's base folder, the exchange's root or view, each time and each secret as
    placeholders, and the random suffix of submission folders as one placeholder."""
    text = json.dumps(seen, sort_keys=True, default=lambda b: b.decode("utf-8", "replace"))
    times = sorted(set(TIMESTAMP.findall(text)))
    for number, when in enumerate(times):
        text = text.replace(when, f"<T{number}>")
    text = text.replace(str(term.exchange), "<exchange>").replace(str(term.base), "<home>")
    text = re.sub(r"/tmp/nbgrader-hub-view-[^/\"]+", "<exchange>", text)
    # The random string nbgrader's submit adds (the service puts its storage key there).
    text = re.sub(r"(\+<T\d+>)\+[A-Za-z0-9_.=-]+", r"\1+<random>", text)
    text = re.sub(r'"random_string": "\+[A-Za-z0-9_.=-]+"', '"random_string": "+<random>"', text)
    secrets_seen = re.findall(r"\b[0-9a-f]{128}\b", text)
    for number, secret in enumerate(dict.fromkeys(secrets_seen)):
        text = text.replace(secret, f"<secret{number}>")
    return json.loads(text)


def test_the_plugin_gives_what_the_folder_exchange_gives(hub: ExchangeHub, tmp_path: Path) -> None:
    folder = Term(tmp_path / "folder", "folder", None)
    plugin = Term(tmp_path / "hub", "hub", hub)
    by_folder = normalised(play(folder), folder)
    by_plugin = normalised(play(plugin), plugin)
    assert not (plugin.exchange).exists(), "the plug-in wrote a folder exchange"
    for key in by_folder:
        assert by_plugin[key] == by_folder[key], key
    # What the comparison rests on, stated: feedback reached each student and only them.
    fetched = by_plugin["files"]["alice"]
    feedback = {k: v for k, v in fetched.items() if k.startswith(f"{ASSIGNMENT}/feedback/") and k.endswith(".html")}
    assert list(feedback.values()) == ["<p>feedback for alice: alice's second answer</p><p>regraded</p>"], feedback
    assert by_plugin["alice cached after fetch_feedback"][0]["submissions"][1]["has_local_feedback"] is True
    assert len(by_plugin["alice cached"][0]["submissions"]) == 2
    assert by_plugin["alice cached after a new release_feedback"][0]["submissions"][1]["feedback_updated"] is True
    assert by_plugin["alice cached after fetching it"][0]["submissions"][1]["feedback_updated"] is False


def test_a_student_submits_as_themselves_whatever_student_id_says(hub: ExchangeHub, tmp_path: Path) -> None:
    term = Term(tmp_path / "hub", "hub", hub)
    _make_release(term.base)
    term.run("prof", "release_assignment", force=True)
    term.run("bob", "fetch_assignment")
    alices = hub.storage / "courses" / COURSE / "submissions" / "alice" / ASSIGNMENT
    before = sorted(os.listdir(alices)) if alices.is_dir() else []
    config = term.config("bob", assignment_id=ASSIGNMENT, student_id="alice")
    submit = ExchangeFactory(config=config).Submit(coursedir=CourseDirectory(config=config),
                                                   authenticator=Authenticator(config=config), config=config)
    submit.start()
    cached = os.listdir(term.base / "bob" / ".cache" / COURSE)
    assert [name.split("+")[0] for name in cached] == ["bob"]
    assert (sorted(os.listdir(alices)) if alices.is_dir() else []) == before
    assert len(os.listdir(hub.storage / "courses" / COURSE / "submissions" / "bob" / ASSIGNMENT)) >= 1


def test_refusals_reach_the_command_in_words(hub: ExchangeHub, tmp_path: Path) -> None:
    term = Term(tmp_path / "hub", "hub", hub)
    _make_release(term.base)
    with pytest.raises(ExchangeError, match=re.escape(
            "the exchange service refused: bob is not an instructor of the course 'ch11' (the hub group "
            "'formgrade-ch11') (HTTP 403)")):
        term.tokens["prof"] = term.tokens["bob"]
        term.run("prof", "release_assignment", force=True)
    with pytest.raises(ExchangeError, match=re.escape("the exchange service refused: bob is a student of 'ch11': "
                                                      "only its instructors see its submissions (HTTP 403)")):
        term.run("bob", "list", inbound=True)
    term.tokens["bob"] = "not-a-token"
    with pytest.raises(ExchangeError, match="the hub does not accept this token"):
        term.run("bob", "list")
