"""Publishing pages where ``nbgrader fetch_feedback`` finds them: the exchange's feedback out, under serve's names.

The folder exchange's :class:`Publisher` (``exchange/folder/feedback.py``, through
:mod:`..exchange.api`) writes a page as ``release_feedback`` files it, ``<exchange>/<course>/feedback/<hash>.html``,
never following a link; an exchange of another kind gives its own :class:`..exchange.api.Feedback`.
"""

from __future__ import annotations

from ..exchange.api import FEEDBACK_MODE, PAGE_MODE, Feedback, Publisher, feedback_name

__all__ = ["FEEDBACK_MODE", "PAGE_MODE", "Feedback", "Publisher", "feedback_name"]
