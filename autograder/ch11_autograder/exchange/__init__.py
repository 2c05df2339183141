"""The exchange: how submissions reach the grader and feedback reaches the students, and who sent what.

nbgrader's exchange is pluggable (``c.ExchangeFactory.<action>``, ``nbgrader/exchange/abc/``).
Each exchange this package ships is a subpackage here; the grading side reaches all of them
through :mod:`.api` alone (a contract in pyproject.toml), and nothing here imports grading code::

    api              the one way in for the grading side (``serve/``, ``doctor/``): submissions in
                     (``Submissions``) and feedback out (``Feedback``), each exchange's pair
                     (``folder_exchange``, ``hub_exchange``), and the rules below, re-exported
    errors           ``Unreachable``: an exchange that cannot be reached now (tried again later)
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
      source         ``FolderSubmissions``: submissions in, the inbound folder read in place
      feedback       ``Publisher``: feedback out, pages where ``fetch_feedback`` finds them

    hub/             the hub exchange, where the hub's login names the sender (docs/course.md, "Exchange
                     through the hub")
      names          course ids, assignment ids and student names it accepts: nbgrader's id
                     rules and one path component each (``checked``, ``BadName``)
      archive        an uploaded submission (a ``.tar.gz``) unpacked into a staging folder, with
                     caps and no links, devices, ``..`` or absolute paths (``unpack``, ``Limits``)
      packing        folders packed into that format (``pack``, ``packed``), both ways
      storage        releases, submissions (``timestamp.txt``, ``submission_secret.txt``) and
                     feedback in one 0700 folder, each entry renamed into place whole (``Storage``)
      access         who may do what in a course, from the caller's hub groups
                     (``nbgrader-<course>`` students, ``formgrade-<course>`` instructors)
      identity       whom a hub API token belongs to, and their groups, asked of the hub
      service        the JupyterHub service (tornado): the HTTP API over the storage
      client         the plug-in's calls to it, with the user's ``JUPYTERHUB_API_TOKEN``
      plugin         the classes a course selects with ``c.ExchangeFactory.<action>``: nbgrader's
                     folder-exchange code run on a private view the service fills (imports nbgrader)
      source         ``HubCopy``: grading on submit from the service, submissions copied from its
                     listing into the grader's private folder, pages posted back to it
"""
