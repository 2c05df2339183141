"""The exchange: how submissions reach the grader and feedback reaches the students, and who sent what.

nbgrader's exchange is pluggable (``c.ExchangeFactory.<action>``, ``nbgrader/exchange/abc/``).
Each exchange this package ships is a subpackage here; the grading side reaches all of them
through :mod:`.api` alone (a contract in pyproject.toml), and nothing here imports grading code::

    api              the one way in for the grading side (``serve/``, ``doctor/``): the rules
                     below, re-exported
    folder/          nbgrader's file exchange, where a unix owner is an identity
      owners         a submission folder is a student's when that student's unix user owns it
                     (``refusal``, ``owner_of``)
      identity       when folder owners cannot tell students apart (shared uids, squashed
                     owners): ``identity_problem``
      safety         an exchange whose root or course folder another user can replace
                     (a root writable by others without the sticky bit, a course folder not
                     the instructor's): ``exchange_problems``, ``ExchangeSafety``
      collect        ``OwnerCheckedCollect``, the course's ``c.ExchangeFactory.collect``
                     (imports nbgrader; loaded by ``nbgrader_config.py``, not by :mod:`.api`)

    hub/             the hub exchange, where the hub's login names the sender (so far its storage
                     only; nothing here speaks HTTP or asks a hub yet)
      names          course ids, assignment ids and student names it accepts: nbgrader's id
                     rules and one path component each (``checked``, ``BadName``)
      archive        an uploaded submission (a ``.tar.gz``) unpacked into a staging folder, with
                     caps and no links, devices, ``..`` or absolute paths (``unpack``, ``Limits``)
      storage        releases, submissions (``timestamp.txt``, ``submission_secret.txt``) and
                     feedback in one 0700 folder, each entry renamed into place whole (``Storage``)

Still to come in ``hub/``: the HTTP service that authenticates each caller with their hub token
and decides from the hub's groups what they may do, and the plug-in classes a course selects
with ``c.ExchangeFactory.<action>``, its collect named as ``folder/``'s is.
"""
