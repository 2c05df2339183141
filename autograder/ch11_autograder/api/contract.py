"""What a contract table (``exN/contract.py``) imports from the engine: ``Clause`` and its drawn kinds.

Cheap on purpose: the exercise registry imports every contract, so this module must
not load the suite API (hypothesis, the worker client). See ``trusted/contract.py``.
"""

from __future__ import annotations

from ..trusted.contract import Clause, Drawn, ends, layouts, scalars

__all__ = ["Clause", "Drawn", "ends", "layouts", "scalars"]
