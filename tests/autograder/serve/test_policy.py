"""The service's policy and settings, read from a course's nbgrader config as nbgrader reads it."""

from __future__ import annotations

from pathlib import Path

import pytest
from ch11_autograder.serve.policy import ServePolicy, load_settings
from traitlets import TraitError


def write_config(course: Path, body: str) -> Path:
    course.mkdir(parents=True, exist_ok=True)
    (course / "nbgrader_config.py").write_text("c = get_config()\n" + body)
    return course


def test_settings_from_the_course_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "nowhere"))
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(tmp_path / "nowhere"))
    course = write_config(tmp_path / "course", """
c.Exchange.root = "/srv/exchange"
c.CourseDirectory.course_id = "ch11-course"
c.ServePolicy.feedback_level = "score"
c.ServePolicy.attempts = 3
c.ServePolicy.window_minutes = 30
c.ServePolicy.practice_directory = "/srv/practice"
""")
    settings = load_settings(course)
    assert settings.inbound == Path("/srv/exchange/ch11-course/inbound")
    assert settings.feedback == Path("/srv/exchange/ch11-course/feedback")
    assert (settings.policy.feedback_level, settings.policy.attempts, settings.policy.window_minutes) == \
        ("score", 3, 30.0)
    assert settings.practice == Path("/srv/practice")


def test_defaults_and_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The exchange and course id may live in the user's Jupyter config (as on a hub); the practice course
    defaults to one inside the course directory; the default level shows no counterexamples."""
    user = write_config(tmp_path / "jupyter", 'c.Exchange.root = "/x"\nc.CourseDirectory.course_id = "c1"\n')
    monkeypatch.delenv("JUPYTER_NO_CONFIG")  # this test plants a config of its own (tests/support/jupyter_env.py)
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(user))
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(user))
    course = write_config(tmp_path / "course", "")
    settings = load_settings(course)
    assert (settings.exchange, settings.course_id) == (Path("/x"), "c1")
    assert settings.practice == course.resolve() / "practice"
    assert settings.policy.feedback_level == "properties"
    assert (settings.policy.attempts, settings.policy.window_minutes) == (6, 60.0)


def test_no_course_id_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "nowhere"))
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(tmp_path / "nowhere"))
    with pytest.raises(ValueError, match="course_id"):
        load_settings(write_config(tmp_path / "course", ""))


def test_unknown_feedback_level_is_refused() -> None:
    with pytest.raises(TraitError):
        ServePolicy(feedback_level="everything")


def test_the_hub_exchange_is_chosen_by_a_trait_and_named_as_the_plug_in_names_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``exchange = "hub"``: the service and token of ``c.HubExchange`` (else ``$CH11_EXCHANGE_URL`` and
    ``$JUPYTERHUB_API_TOKEN``); submissions read from the copy in the practice course's state folder; without a
    service or a token, refused in words. The token is never in the settings' repr (a log line)."""
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "nowhere"))
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(tmp_path / "nowhere"))
    monkeypatch.delenv("CH11_EXCHANGE_URL", raising=False)
    monkeypatch.delenv("JUPYTERHUB_API_TOKEN", raising=False)
    body = 'c.CourseDirectory.course_id = "ch11"\nc.ServePolicy.exchange = "hub"\n'
    course = write_config(tmp_path / "course", body)
    with pytest.raises(ValueError, match=r"no c.HubExchange.service_url \(or \$CH11_EXCHANGE_URL\) names the service"):
        load_settings(course)
    monkeypatch.setenv("CH11_EXCHANGE_URL", "http://hub/services/x/")
    with pytest.raises(ValueError, match=r"no instructor's hub token is given"):
        load_settings(course)
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "server-token")
    settings = load_settings(course)
    assert (settings.hub_url, settings.hub_token) == ("http://hub/services/x/", "server-token")
    assert settings.inbound == course.resolve() / "practice" / ".ch11-serve" / "hub-exchange" / "inbound"
    write_config(course, body + 'c.HubExchange.service_url = "http://a/"\nc.HubExchange.api_token = "made"\n')
    settings = load_settings(course)
    assert (settings.hub_url, settings.hub_token) == ("http://a/", "made") and "made" not in repr(settings)
    assert load_settings(write_config(tmp_path / "folder", 'c.CourseDirectory.course_id = "c"\n')).hub_url == ""
