"""Who a request comes from: the hub is asked whom the caller's API token belongs to, and their groups.

The caller sends their hub token (``Authorization: token <token>``, a single-user server's
``JUPYTERHUB_API_TOKEN``). :func:`caller_for` asks the hub's ``GET /user`` with that token, as
JupyterHub's ``HubAuth`` does: an expired, revoked or unknown token is refused (403, the hub said
so), a service's token is refused (only users submit and fetch), and a token without the scope
``access:services!service=<this service>`` (or ``access:services``) is refused, as JupyterHub's own
services refuse it. The caller's groups are then read with the service's own token (``GET
/users/<name>``, which needs its role's ``read:users:groups``): a user's token need not carry that
scope. Nothing is cached, so a revoked token or a changed group counts from the next request.
"""

from __future__ import annotations

import json
import urllib.parse
from dataclasses import dataclass
from typing import Any

from tornado.httpclient import AsyncHTTPClient, HTTPClientError

from .access import Caller, Refused

__all__ = ["Hub", "caller_for", "token_of"]


@dataclass(frozen=True)
class Hub:
    """How this service reaches the hub: its API URL, the service's own token and name (the hub sets all three
    for a service it runs: ``JUPYTERHUB_API_URL``, ``JUPYTERHUB_API_TOKEN``, ``JUPYTERHUB_SERVICE_NAME``)."""

    api_url: str
    token: str
    service_name: str


def token_of(authorization: str | None) -> str:
    """The token of an ``Authorization: token <t>`` (or ``Bearer <t>``) header, else :class:`Refused` (401)."""
    kind, _, token = (authorization or "").strip().partition(" ")
    if kind.lower() not in ("token", "bearer") or not token.strip():
        raise Refused(401, "no hub API token: send 'Authorization: token <your JUPYTERHUB_API_TOKEN>'")
    return token.strip()


async def _get(hub: Hub, path: str, token: str) -> dict[str, Any]:
    request_url = hub.api_url.rstrip("/") + path
    response = await AsyncHTTPClient().fetch(request_url, headers={"Authorization": f"token {token}"},
                                             raise_error=True, request_timeout=30)
    model = json.loads(response.body)
    if not isinstance(model, dict):
        raise Refused(502, f"the hub answered {path} with something that is not a JSON object")
    return model


async def caller_for(hub: Hub, token: str) -> Caller:
    """The hub user ``token`` belongs to, with their groups (see the module), or :class:`Refused`."""
    try:
        model = await _get(hub, "/user", token)
    except HTTPClientError as err:
        if err.code in (401, 403, 404):
            raise Refused(403, "the hub does not accept this token (it is expired, revoked or unknown): log in to "
                               "the hub again") from None
        raise Refused(502, f"the hub could not say whom the token belongs to ({err})") from None
    except OSError as err:
        raise Refused(502, f"the hub cannot be reached at {hub.api_url} ({err})") from None
    if model.get("kind") != "user":
        raise Refused(403, f"this token belongs to the {model.get('kind') or 'unknown'} {model.get('name')!r}, not to "
                           f"a hub user: only users use the exchange")
    name = model.get("name")
    if not isinstance(name, str) or not name:
        raise Refused(502, "the hub gave no user name for this token")
    scopes = set(model.get("scopes") or ())
    needed = f"access:services!service={hub.service_name}"
    if needed not in scopes and "access:services" not in scopes:
        raise Refused(403, f"this token of {name}'s lacks the scope {needed!r}: give the users' server tokens that "
                           f"scope (c.Spawner.server_token_scopes; docs/course.md, \"Exchange through the hub\")")
    try:
        user = await _get(hub, "/users/" + urllib.parse.quote(name, safe=""), hub.token)
    except (HTTPClientError, OSError) as err:
        raise Refused(502, f"the hub would not give {name}'s groups to this service ({err}): its role needs the "
                           f"scope 'read:users:groups'") from None
    groups = user.get("groups")
    if not isinstance(groups, list):
        raise Refused(502, f"the hub gave no groups for {name}: this service's role needs the scope "
                           f"'read:users:groups'")
    return Caller(name, frozenset(str(group) for group in groups))
