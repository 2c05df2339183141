"""What the hub's config gives a user's server: its command, its start timeout and its environment.

JupyterHub settles a server's settings in three steps: ``c.Spawner``'s values, then
``c.Spawner.pre_spawn_hook(spawner)`` (the page's hook makes a grader's server named
``formgrader`` the grading environment's formgrader, with its own ``http_timeout``), then each
``c.Spawner.environment`` value that is a callable is called with the spawner. :func:`server` runs
the same steps on a stand-in spawner (:class:`StandInSpawner`: the attributes the page's hook
reads and writes), so the doctor checks what the hub would start, not a copy of the page's
reasoning. A hook that reads more of a spawner than the stand-in has is reported, not guessed.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any

__all__ = ["HUB_HTTP_TIMEOUT", "HubServer", "StandInSpawner", "StandInUser", "server"]

#: JupyterHub's defaults for a server's seconds to answer and to start.
HUB_HTTP_TIMEOUT = 30.0
HUB_START_TIMEOUT = 60.0


@dataclass
class StandInUser:
    """The hub user a stand-in spawner serves (the page's hook reads its ``name``)."""

    name: str


@dataclass
class StandInSpawner:
    """The attributes of a JupyterHub spawner a server's settings are made of."""

    user: StandInUser
    name: str
    cmd: list[str]
    default_url: str
    http_timeout: float
    start_timeout: float
    environment: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class HubServer:
    """A user's server as the hub's config makes it: ``cmd``, ``http_timeout`` (seconds to answer after its start)
    and ``environment`` (every value a string); ``custom`` when the pre-spawn hook changed its command."""

    cmd: tuple[str, ...]
    http_timeout: float
    environment: dict[str, str]
    custom: bool


def server(hub: Any, user: str, name: str = "") -> HubServer:
    """``user``'s server ``name`` (``""``: their default server) as the hub config ``hub`` (a loaded traitlets
    ``Config``) makes it.

    Raises:
        ValueError: the config's pre-spawn hook or an environment callable fails on the stand-in (the message says
            which and why).
    """
    spawner_config = hub.Spawner
    cmd = spawner_config.get("cmd", ["jupyterhub-singleuser"])
    cmd = [cmd] if isinstance(cmd, str) else [str(part) for part in cmd]
    environment = spawner_config.get("environment", {})
    spawner = StandInSpawner(
        user=StandInUser(user), name=name, cmd=list(cmd), default_url=str(spawner_config.get("default_url", "")),
        http_timeout=float(spawner_config.get("http_timeout", HUB_HTTP_TIMEOUT)),
        start_timeout=float(spawner_config.get("start_timeout", HUB_START_TIMEOUT)),
        environment=dict(environment) if isinstance(environment, dict) else {})
    what = f"{user}'s server {name!r}" if name else f"{user}'s default server"
    hook = spawner_config.get("pre_spawn_hook", None)
    if callable(hook):
        try:
            result = hook(spawner)
        except Exception as exc:
            raise ValueError(f"the hub config's c.Spawner.pre_spawn_hook fails for {what}: "
                             f"{type(exc).__name__}: {exc}") from exc
        if inspect.isawaitable(result):
            if inspect.iscoroutine(result):
                result.close()
            raise ValueError(f"the hub config's c.Spawner.pre_spawn_hook is a coroutine: its settings for {what} "
                             "cannot be read without a hub")
    resolved = {}
    for key, value in spawner.environment.items():
        if callable(value):
            try:
                value = value(spawner)
            except Exception as exc:
                raise ValueError(f"the hub config's c.Spawner.environment[{key!r}] fails for {what}: "
                                 f"{type(exc).__name__}: {exc}") from exc
        resolved[str(key)] = str(value)
    return HubServer(tuple(str(part) for part in spawner.cmd), float(spawner.http_timeout), resolved,
                     [str(part) for part in spawner.cmd] != cmd)
