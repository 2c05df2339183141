"""The hub exchange: nbgrader's exchange kept by one JupyterHub service, the sender named by the hub's login, not a
unix owner.

See :mod:`ch11_autograder.exchange` for its modules and docs/course.md ("Exchange through the hub") for its setup.
"""
