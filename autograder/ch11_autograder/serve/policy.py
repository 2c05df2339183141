"""The grade-on-submit policy: traits the instructor sets in the course's ``nbgrader_config.py``.

    c.ServePolicy.feedback_level = "properties"   # or "full", "score"
    c.ServePolicy.attempts = 6                     # graded submissions per student per window
    c.ServePolicy.window_minutes = 60
    c.ServePolicy.workers = 2                      # submissions graded at once
    c.ServePolicy.cluster = ""                     # or a Dask scheduler's address, or "local"
    c.ServePolicy.practice_directory = "practice"  # relative to the course directory
    c.ServePolicy.keep_runs = 3                    # per student, the pages of this many latest submissions stay
    c.ServePolicy.prune_every = 25                 # prune old practice runs after every 25 finished; 0: never
    c.ServePolicy.report_every = 10                # refresh the practice class report after every 10 finished...
    c.ServePolicy.report_minutes = 15              # ...or 15 minutes after the last, if any finished; 0, 0: never
    c.ServePolicy.after_due_date = "stop"          # or "grade": practice grading of submissions after the due date
    c.ServePolicy.exchange = "folder"              # or "hub": submissions from the hub exchange service

With ``exchange = "hub"`` the service is the one the course's plug-in uses (``c.HubExchange.service_url``,
default ``$CH11_EXCHANGE_URL``), called with an instructor's hub token (``c.HubExchange.api_token``, default
``$JUPYTERHUB_API_TOKEN``).

:func:`load_settings` reads them, with the exchange root and the course id, the way nbgrader
finds its own configuration: the Jupyter config path (``/etc/jupyter``, ``~/.jupyter``, ...),
then the course directory's ``nbgrader_config.py``, later files winning.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from traitlets import Enum, Float, Integer, Unicode
from traitlets.config import Config, Configurable
from traitlets.config.loader import ConfigFileNotFound, PyFileConfigLoader

from ..course_layout import CONFIG, EXCHANGE_FEEDBACK, EXCHANGE_INBOUND
from ..exchange.api import ExchangeSafety

__all__ = ["FEEDBACK_LEVELS", "HUB_COPY", "STATE_DIR", "ServePolicy", "ServeSettings", "load_config",
           "load_settings"]

#: What a student sees of a graded submission before the due date (see :class:`ServePolicy`).
FEEDBACK_LEVELS = ("full", "properties", "score")
#: nbgrader's default exchange root.
DEFAULT_EXCHANGE = "/usr/local/share/nbgrader/exchange"
#: The service's own files inside the practice course: queue.db, job folders, logs, the verdict cache.
STATE_DIR = ".ch11-serve"
#: With the hub exchange, the submissions copied from its service and the pages posted back (in the state folder).
HUB_COPY = "hub-exchange"


class ServePolicy(Configurable):
    """How the grade-on-submit service treats submissions (docs/course.md, "Feedback before the due date")."""

    feedback_level = Enum(
        list(FEEDBACK_LEVELS), default_value="properties",
        help="What the practice feedback shows: 'full' (nbgrader's feedback page, as after grading: counterexample "
             "inputs and expected values included), 'properties' (per cell, which properties failed and the named "
             "misconception, no inputs or values), 'score' (points per cell only).",
    ).tag(config=True)
    attempts = Integer(
        6, help="Submissions per student graded in any window of window_minutes; more are refused, not graded.",
    ).tag(config=True)
    window_minutes = Float(60.0, help="Length of the attempts window, minutes.").tag(config=True)
    workers = Integer(2, help="Submissions graded at the same time (one per student at a time).").tag(config=True)
    cluster = Unicode(
        "", help="Grade on a Dask cluster: a scheduler address or 'local' (as ch11-grade batch --cluster); "
                 "empty grades on this machine.",
    ).tag(config=True)
    practice_directory = Unicode(
        "practice", help="The practice course (its own gradebook, never the official one); relative paths are "
                         "inside the course directory.",
    ).tag(config=True)
    rescan_seconds = Float(
        30.0, help="Seconds between full rescans of the inbound folder (the safety net under file watching).",
    ).tag(config=True)
    timeout = Float(1800.0, help="Wall-time limit per submission, seconds.").tag(config=True)
    keep_runs = Integer(
        3, min=1, help="Per student, the published pages of this many latest submissions are kept (and always those of "
                "the latest graded one and of pending ones); older ones are removed, their queue rows once their "
                "folder has left the inbound folder and the attempts window (serve/prune.py, docs/course.md).",
    ).tag(config=True)
    prune_every = Integer(
        25, min=0, help="Prune old practice runs after every this many finished submissions; 0 never prunes.",
    ).tag(config=True)
    report_every = Integer(
        10, min=0, help="Refresh the practice course's class report (reports/<assignment>-report.html) after every "
                        "this many finished submissions; 0: not by count (serve/live_report.py, docs/course.md).",
    ).tag(config=True)
    report_minutes = Float(
        15.0, min=0.0, help="Also refresh it this many minutes after the last refresh when a submission finished "
                            "since; 0: not by time.",
    ).tag(config=True)
    after_due_date = Enum(
        ["stop", "grade"], default_value="stop",
        help="A submission made after the student's due date (the assignment's duedate in the course's gradebook "
             "plus the student's extension; its timestamp.txt as nbgrader reads it): 'stop' does not grade it for "
             "practice and its status page says practice feedback closed at that due date; 'grade' grades it as "
             "before (serve/deadline.py). Without a due date nothing stops.",
    ).tag(config=True)
    sandbox = Unicode("", help="Backend for student code, as ch11-grade batch --sandbox; empty: $CH11_SANDBOX or "
                               "bwrap.").tag(config=True)
    exchange = Enum(
        ["folder", "hub"], default_value="folder",
        help="Where submissions come from and feedback goes: 'folder', nbgrader's exchange folder "
             "(c.Exchange.root; owners checked); 'hub', the hub exchange service the course's plug-in uses "
             "(c.HubExchange.service_url, called with the instructor's hub token c.HubExchange.api_token), its "
             "submissions copied into the practice course's state folder and the practice feedback posted back "
             "(docs/course.md, \"Exchange through the hub\").",
    ).tag(config=True)
    hub_poll_seconds = Float(
        2.0, min=0.1, help="With exchange = 'hub': seconds between two askings of the service for new submissions.",
    ).tag(config=True)


@dataclass(frozen=True)
class ServeSettings:
    """Everything the service needs to know about its course.

    Attributes:
        course: the instructor's course directory.
        exchange: nbgrader's exchange root (``c.Exchange.root``).
        course_id: ``c.CourseDirectory.course_id``.
        policy: the :class:`ServePolicy`.
        practice: the practice course directory (absolute).
        instructor: who must own the course's folder in the exchange (``c.ExchangeSafety.instructor``; empty:
            the user running the service).
        hub_url, hub_token: with ``policy.exchange == "hub"``, the hub exchange service and the instructor's hub
            token it is called with.
    """

    course: Path
    exchange: Path
    course_id: str
    policy: ServePolicy
    practice: Path
    instructor: str = ""
    hub_url: str = ""
    hub_token: str = field(default="", repr=False)

    @property
    def hub_copy(self) -> Path:
        """With the hub exchange, the grader's private folder of copied submissions (``exchange/hub/source.py``)."""
        return self.practice / STATE_DIR / HUB_COPY

    @property
    def inbound(self) -> Path:
        """The folder of submission folders the service reads: the exchange's, or its copy of the hub's."""
        if self.policy.exchange == "hub":
            return self.hub_copy / "inbound"
        return self.exchange / self.course_id / EXCHANGE_INBOUND

    @property
    def feedback(self) -> Path:
        return self.exchange / self.course_id / EXCHANGE_FEEDBACK


def _config_dirs() -> list[str]:
    try:
        from jupyter_core.paths import jupyter_config_path

        return list(jupyter_config_path())
    except ImportError:
        return [os.path.expanduser("~/.jupyter"), "/etc/jupyter"]


def load_config(course: Path, *, course_config: bool = True) -> Config:
    """nbgrader's configuration as seen from ``course``: Jupyter config path (lowest first), then the course's
    (without ``course_config``: the Jupyter config path's alone)."""
    merged = Config()
    for directory in [*reversed(_config_dirs()), *([str(course)] if course_config else [])]:
        try:
            merged.merge(PyFileConfigLoader(CONFIG, path=directory).load_config())
        except ConfigFileNotFound:
            continue
    return merged


def load_settings(course: Path, config: Config | None = None) -> ServeSettings:
    """The service's settings for ``course``.

    Raises:
        ValueError: no course id is configured (nbgrader's exchange needs one); with ``exchange = "hub"``, no
            service URL or no token.
    """
    course = course.resolve()
    config = load_config(course) if config is None else config
    course_id = str(config.CourseDirectory.get("course_id", "") or "")
    if not course_id:
        raise ValueError(f"{course}: no c.CourseDirectory.course_id in the nbgrader config (the exchange needs it)")
    exchange = Path(str(config.Exchange.get("root", "") or DEFAULT_EXCHANGE))
    policy = ServePolicy(config=config)
    practice = Path(policy.practice_directory)
    hub_url = hub_token = ""
    if policy.exchange == "hub":
        hub_url = str(config.HubExchange.get("service_url", "") or os.environ.get("CH11_EXCHANGE_URL", ""))
        hub_token = str(config.HubExchange.get("api_token", "") or os.environ.get("JUPYTERHUB_API_TOKEN", ""))
        if not hub_url:
            raise ValueError(f"{course}: c.ServePolicy.exchange is 'hub' but no c.HubExchange.service_url (or "
                             f"$CH11_EXCHANGE_URL) names the service")
        if not hub_token:
            raise ValueError(f"{course}: c.ServePolicy.exchange is 'hub' but no instructor's hub token is given "
                             f"(c.HubExchange.api_token or $JUPYTERHUB_API_TOKEN)")
    return ServeSettings(course, exchange, course_id, policy, practice if practice.is_absolute() else course / practice,
                         ExchangeSafety(config=config).instructor, hub_url, hub_token)
