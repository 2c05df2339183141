"""A submission folder of this process's own user in an exchange's inbound folder, as ``nbgrader submit`` leaves it."""

from __future__ import annotations

import os
import pwd
import secrets
from pathlib import Path

STAMP = "2026-12-02 10:00:00.000000 UTC"


def own_submission(inbound: Path, notebook: Path, stamp: str = STAMP) -> tuple[str, str]:
    """Write a folder holding a copy of ``notebook``, owned by this user; returns (user name, stamp)."""
    me = pwd.getpwuid(os.getuid()).pw_name
    folder = inbound / f"{me}+ch11+{stamp}+{secrets.token_hex(4)}"
    folder.mkdir()
    (folder / notebook.name).write_text(notebook.read_text())
    (folder / "timestamp.txt").write_text(stamp)
    (folder / "submission_secret.txt").write_text(secrets.token_hex(64))
    folder.chmod(0o777)  # nbgrader submit's last step: the folder is complete
    return me, stamp
