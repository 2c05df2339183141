"""configurable-http-proxy, as the hub starts it: found on the hub's PATH and answering ``--version``.

Checked with a hub config only (the hub's machine). The command is the config's
``c.ConfigurableHTTPProxy.command`` (JupyterHub's default: ``configurable-http-proxy``); it runs with
``NODE_PATH=/usr/share/nodejs`` added, as the page starts the hub, where Debian keeps its modules.
"""

from __future__ import annotations

import os
import shutil
import subprocess

from .deployment import PROXY, Deployment, Problem

__all__ = ["check_proxy"]


def check_proxy(deployment: Deployment) -> list[Problem]:
    if deployment.hub is None:
        return []
    command = deployment.hub.ConfigurableHTTPProxy.get("command", ["configurable-http-proxy"])
    name = str(command[0] if isinstance(command, list) and command else command)
    found = shutil.which(name)
    if found is None:
        return [Problem(f"no {name} on PATH: the hub cannot start its proxy (apt-get install -y "
                        "node-configurable-http-proxy)", PROXY)]
    env = {**os.environ, "NODE_PATH": os.environ.get("NODE_PATH") or "/usr/share/nodejs"}
    try:
        done = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=120, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return [Problem(f"{found} --version could not be run: {exc}", PROXY)]
    if done.returncode != 0:
        lines = [line for line in (done.stderr + done.stdout).splitlines() if line.strip()]
        return [Problem(f"{found} --version fails (exit status {done.returncode}"
                        f"{': ' + lines[-1] if lines else ''})", PROXY)]
    return []
