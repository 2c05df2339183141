"""A stand-in for the two calls of JupyterHub's REST API that the hub exchange service makes; nothing else of a hub.

Run by path (it imports nothing of this checkout, only tornado)::

    python tests/support/hub_api_standin.py --people people.json --port 8081

and give the exchange service ``JUPYTERHUB_API_URL=http://127.0.0.1:8081/hub/api``. ``people.json``::

    {"service": {"name": "nbgrader-exchange", "token": "<the service's token>"},
     "users": {"<token>": {"name": "alice", "groups": ["nbgrader-ch11"]}, ...}}

What it answers, as JupyterHub 5/6 answers the same calls (the models cut to the fields
:mod:`ch11_autograder.exchange.hub.identity` reads):

``GET /hub/api/user`` with ``Authorization: token <t>``
    a user's token: ``{"kind": "user", "name", "groups", "scopes": ["access:services!service=<service>"]}``;
    the service's token: ``{"kind": "service", "name"}``; any other: 403.
``GET /hub/api/users/<name>`` with the service's token
    ``{"kind": "user", "name", "groups"}``; another token: 403; an unknown name: 404.

It is for measuring the exchange service (``bench/hub_exchange_load.py``) without a hub's own cost:
no database, no token hashing, no proxy. It is no test of the hub's behaviour: the hub tier
(``tests/support/hub_exchange.py``) runs the service behind a real JupyterHub. It prints one line,
``listening <port>``, once it accepts connections.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from tornado.web import Application, HTTPError, RequestHandler


class _Handler(RequestHandler):
    people: dict[str, Any]

    def initialize(self, people: dict[str, Any]) -> None:
        self.people = people

    def token(self) -> str:
        kind, _, token = (self.request.headers.get("Authorization") or "").partition(" ")
        return token.strip() if kind.lower() in ("token", "bearer") else ""

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        self.finish({"status": status_code, "message": self._reason})


class _Self(_Handler):
    def get(self) -> None:
        token, service = self.token(), self.people["service"]
        if token and token == service["token"]:
            self.finish({"kind": "service", "name": service["name"]})
            return
        user = self.people["users"].get(token) if token else None
        if user is None:
            raise HTTPError(403, reason="Missing or invalid credentials")
        self.finish({"kind": "user", "name": user["name"], "groups": user["groups"],
                     "scopes": [f"access:services!service={service['name']}"]})


class _User(_Handler):
    def initialize(self, people: dict[str, Any]) -> None:
        super().initialize(people)
        self.by_name = {user["name"]: user for user in people["users"].values()}

    def get(self, name: str) -> None:
        if self.token() != self.people["service"]["token"]:
            raise HTTPError(403, reason="Action is not authorized with current scopes")
        user = self.by_name.get(name)
        if user is None:
            raise HTTPError(404, reason=f"No such user: {name}")
        self.finish({"kind": "user", "name": user["name"], "groups": user["groups"]})


async def _serve(people: dict[str, Any], port: int) -> None:
    settings = {"people": people}
    app = Application([("/hub/api/user", _Self, settings), ("/hub/api/users/([^/]+)", _User, settings)])
    app.listen(port, "127.0.0.1")
    print(f"listening {port}", flush=True)
    await asyncio.Event().wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--people", type=Path, required=True)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    asyncio.run(_serve(json.loads(args.people.read_text()), args.port))


if __name__ == "__main__":
    main()
