"""nbgrader's exchange through the hub exchange service: the classes a course selects with ``c.ExchangeFactory``.

Each class is nbgrader 0.9.6's own folder-exchange class (``nbgrader.exchange.default``) run on a
private *view*: a temporary folder laid out as the folder exchange's root, filled from the service
before the action (:meth:`HubExchange.pull`, the service's ``view`` of what this user may see) and,
for the actions that give something to the exchange, sent to the service after it. So the list
dictionaries, ``timestamp.txt``, ``submission_secret.txt``, the feedback file names nbgrader 0.9.3+
derives from the secret, the cache, ``path_includes_course`` and every message are nbgrader's, made
by nbgrader's code; the service decides who may see and do what (:mod:`.service`). The view is
removed when the action ends, so a released assignment's ``path`` in a list names where it was.

Differences from the folder exchange, each deliberate:

* submit sends the files and takes the time and secret from the service, which names the student
  from the hub token: ``--student`` is not a way to submit as someone else (a warning says so);
* collect checks no unix owner (``check_owner`` is off): the identity is the hub's;
* ``nbgrader list --remove`` (and the formgrader's unrelease) is refused: the service keeps
  releases until one is replaced with ``--force``.

Configuration (``nbgrader_config.py`` of every user, docs/course.md "Exchange through the hub")::

    c.ExchangeFactory.release_assignment = "ch11_autograder.exchange.hub.plugin.HubReleaseAssignment"
    ... one line per action ...
    c.HubExchange.service_url = "https://hub.example.org/services/nbgrader-exchange/"

``service_url`` defaults to ``$CH11_EXCHANGE_URL``; the token is ``$JUPYTERHUB_API_TOKEN``, which the
hub gives every user's server. A missing one stops every action, naming it.
"""

from __future__ import annotations

import glob
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from nbgrader.exchange import default
from traitlets import Unicode
from traitlets import default as default_value

from .client import ServiceClient, ServiceError, quoted

__all__ = ["HubCollect", "HubExchange", "HubFetchAssignment", "HubFetchFeedback", "HubList", "HubReleaseAssignment",
           "HubReleaseFeedback", "HubSubmit"]


class HubExchange(default.Exchange):
    """What every hub exchange action shares: the service, the token and the private view (see the module)."""

    service_url = Unicode(help="URL of the hub exchange service, <hub>/services/<name>/ (default "
                               "$CH11_EXCHANGE_URL)").tag(config=True)
    api_token = Unicode(help="The user's hub API token (default $JUPYTERHUB_API_TOKEN)").tag(config=True)

    @default_value("service_url")
    def _service_url_default(self) -> str:
        return os.environ.get("CH11_EXCHANGE_URL", "")

    @default_value("api_token")
    def _api_token_default(self) -> str:
        return os.environ.get("JUPYTERHUB_API_TOKEN", "")

    client: ServiceClient

    def ensure_root(self) -> None:
        """The view is this process's own temporary folder: there is no shared root to check."""

    def pull(self) -> None:
        """Fill the view (``self.root``) from the service, as this action needs it; by default nothing."""

    def view(self, parts: list[str], *, course: str = "", assignment: str = "", student: str = "") -> None:
        """The service's view of ``course`` (default the course dir's), for ``assignment`` and ``student`` when
        given (``*`` counts as not given), merged into ``self.root``."""
        course = course or self.coursedir.course_id
        if not course:
            self.fail("No course id specified. Re-run with --course flag.")
        assignment = "" if assignment in ("", "*") else assignment
        student = "" if student in ("", "*") else student
        self.call(self.client.view, course, parts, Path(self.root), assignment=assignment, student=student)

    def call(self, method: Any, *args: Any, **kwargs: Any) -> Any:
        """``method(*args, **kwargs)`` of the client, a :class:`ServiceError` made nbgrader's ``ExchangeError``."""
        try:
            return method(*args, **kwargs)
        except ServiceError as err:
            self.fail(str(err))

    def start(self) -> Any:
        if not self.service_url:
            self.fail("No hub exchange service URL: set c.HubExchange.service_url or $CH11_EXCHANGE_URL "
                      "(docs/course.md, \"Exchange through the hub\")")
        if not self.api_token:
            self.fail("No hub API token: $JUPYTERHUB_API_TOKEN is not set (run this in your hub server, or set "
                      "c.HubExchange.api_token)")
        self.client = ServiceClient(self.service_url, self.api_token)
        with tempfile.TemporaryDirectory(prefix="nbgrader-hub-view-") as view:
            self.root = view
            self.set_timestamp()
            self.pull()
            return super().start()


class HubFetchAssignment(HubExchange, default.ExchangeFetchAssignment):
    """``nbgrader fetch_assignment`` from the service."""

    def pull(self) -> None:
        self.view(["outbound"], assignment=self.coursedir.assignment_id)


class HubFetchFeedback(HubExchange, default.ExchangeFetchFeedback):
    """``nbgrader fetch_feedback``: the service sends this user's own feedback, named as nbgrader names it."""

    def pull(self) -> None:
        self.view(["feedback"], assignment=self.coursedir.assignment_id)


class HubList(HubExchange, default.ExchangeList):
    """``nbgrader list`` (released, ``--cached`` with feedback flags, ``--inbound`` for instructors)."""

    def pull(self) -> None:
        if self.remove:
            self.fail("The hub exchange keeps releases: `nbgrader list --remove` is not available (release again "
                      "with --force to replace one)")
        parts = ["inbound", "feedback"] if self.inbound else ["feedback"] if self.cached else ["outbound"]
        courses = [self.coursedir.course_id] if self.coursedir.course_id else sorted(
            self.call(self.client.courses)["courses"])
        for course in courses:
            self.view(parts, course=course, assignment=self.coursedir.assignment_id,
                      student=self.coursedir.student_id if self.inbound else "")


class HubCollect(HubExchange, default.ExchangeCollect):
    """``nbgrader collect`` from the service; the submitter is the hub's name for them, so no owner is checked."""

    def pull(self) -> None:
        self.check_owner = False
        self.view(["inbound"], assignment=self.coursedir.assignment_id, student=self.coursedir.student_id)


class HubReleaseAssignment(HubExchange, default.ExchangeReleaseAssignment):
    """``nbgrader release_assignment``: nbgrader's release into the view, then its folder sent to the service."""

    def copy_files(self) -> None:
        super().copy_files()
        course, assignment = self.coursedir.course_id, self.coursedir.assignment_id
        released = Path(self.dest_path)
        self.call(self.client.upload, "courses/" + quoted(course, "released", assignment),
                  [(child.name, child) for child in sorted(released.iterdir())], {"force": "1" if self.force else ""})


class HubSubmit(HubExchange, default.ExchangeSubmit):
    """``nbgrader submit``: the files sent as the hub user; the time and secret the service gives kept in the
    cache as nbgrader keeps them."""

    def pull(self) -> None:
        self.view(["outbound"], assignment=self.coursedir.assignment_id)
        # nbgrader's submit checks that the inbound folder is there; the service is where submissions go.
        os.makedirs(os.path.join(self.root, self.coursedir.course_id, "inbound"), exist_ok=True)

    def copy_files(self) -> None:
        self.init_release()
        self.check_filename_diff()
        course, assignment = self.coursedir.course_id, self.coursedir.assignment_id
        self.log.info(f"Source: {self.src_path}")
        with tempfile.TemporaryDirectory(prefix="nbgrader-hub-submit-") as staging:
            files = Path(staging) / "files"
            self.do_copy(self.src_path, str(files))  # nbgrader's ignore, include and size rules
            answer = self.call(self.client.upload, "courses/" + quoted(course, "submissions", assignment),
                               [(child.name, child) for child in sorted(files.iterdir())])
        student, self.timestamp = answer["student"], answer["timestamp"]
        if self.coursedir.student_id not in ("", "*", student):
            self.log.warning("Submitted as %s, your hub user, not as %s: the hub exchange takes the name from your "
                             "hub token", student, self.coursedir.student_id)
        cache_path = os.path.join(self.cache_path, f"{student}+{assignment}+{self.timestamp}")
        if not os.path.isdir(self.cache_path):
            os.makedirs(self.cache_path)
        self.do_copy(self.src_path, cache_path)
        with open(os.path.join(cache_path, "timestamp.txt"), "w") as fh:
            fh.write(self.timestamp)
        with open(os.path.join(cache_path, "submission_secret.txt"), "w") as fh:
            fh.write(answer["secret"])
        self.log.info(f"Submitted as: {course} {assignment} {self.timestamp!s}")


class HubReleaseFeedback(HubExchange, default.ExchangeReleaseFeedback):
    """``nbgrader release_feedback``: each submission's feedback sent with its timestamp and secret, the service
    keeping it for that student's submission alone."""

    def copy_files(self) -> None:
        exclude = set(self.coursedir.student_id_exclude.split(",")) if self.coursedir.student_id_exclude else set()
        regexp = re.escape(os.path.sep).join([
            self.coursedir.format_path(self.coursedir.feedback_directory, "(?P<student_id>.*)",
                                       self.coursedir.assignment_id, escape=True),
            "(?P<notebook_id>.*).html"])
        by_folder: dict[tuple[str, str], list[Path]] = {}
        for html_file in sorted(glob.glob(os.path.join(self.src_path, "*.html"))):
            found = re.match(regexp, html_file)
            if found is None:
                self.log.error("Could not match '%s' with regexp '%s'", html_file, regexp)
                continue
            if found["student_id"] in exclude:
                self.log.debug("Skipping student '{}'".format(found["student_id"]))
                continue
            by_folder.setdefault((found["student_id"], os.path.dirname(html_file)), []).append(Path(html_file))
        course, assignment = self.coursedir.course_id, self.coursedir.assignment_id
        for (student, folder), files in sorted(by_folder.items()):
            timestamp = Path(folder, "timestamp.txt").read_text()
            secret = Path(folder, "submission_secret.txt").read_text()
            for html in files:
                self.log.info(f"Releasing feedback for student '{student}' on assignment "
                              f"'{course}/{assignment}/{html.stem}' ({timestamp})")
            self.call(self.client.upload, "courses/" + quoted(course, "feedback", assignment, student),
                      [(html.name, html) for html in files], {"timestamp": timestamp},
                      {"X-Submission-Secret": secret})
            self.log.info(f"Feedback released to the hub exchange for {student} ({timestamp})")


