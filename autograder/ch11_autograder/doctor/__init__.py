"""``ch11-grade doctor``: checks of the deployment docs/course.md builds, one module per check.

Each check takes the :class:`.deployment.Deployment` (the course folder, the exchange, the
environments, the hub's config, as the command line and the nbgrader config give them) and returns
its problems, one :class:`.deployment.Problem` each, naming the page's section that fixes it.
:data:`.run.CHECKS` lists them in the order they run::

    nbgrader_envs      each environment's nbgrader: the instructor's (--grader-env, or the
                       doctor's own) runs and loads the course's nbgrader_config.py; the students'
                       (--students-env, or the hub's Spawner.cmd) runs and cannot import the
                       grading package
    sandbox            the bubblewrap sandbox's probe (user namespaces)
    proxy              configurable-http-proxy, as the hub's config starts it (with a hub config)
    exchange           the exchange root exists; nobody but the instructor can take over it
                       or the course's folder in it (the check collect and serve make:
                       ``exchange.api.exchange_problems``)
    course_folder      the course folder exists, is the instructor's, has nbgrader_config.py
                       and source/
    hub_config         the hub's config (--hub-config): the spawner's command, each service's
                       command, user, folder and course, no service with a url, the graders'
                       formgrader server's command
    instructor_path    with a hub config: the instructor's nbgrader is the grading
                       environment's in their server's PATH, this shell's and a login shell's
    formgrader_import  how long the formgrader takes to start with the course's config (as
                       the hub starts it), against the seconds the hub gives it

:func:`.run.diagnose` runs them all (a check that raises is itself a problem); the command prints
one line per problem and exits 1, or prints one line, ``all checks passed``, and exits 0.
"""

from .deployment import Deployment, Problem
from .run import CHECKS, diagnose

__all__ = ["CHECKS", "Deployment", "Problem", "diagnose"]
