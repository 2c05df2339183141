"""Drawing an accepted array argument in every memory layout numpy gives (the ``layouts`` kinds of a contract).

A contract that accepts an array accepts it in any layout: C or Fortran order, a transposed view, a
strided view of a larger buffer, a read-only array. A suite draws a layout kind per array argument
(:func:`array_layouts`) and sends the array as :func:`laid` makes it; the worker then builds that
layout (``protocol.lay_out``), and the kind's guard in ``trusted.contract.LAYOUT_KINDS`` is true
for it, so the generated witnesses of the kind are met.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import numpy as np
from hypothesis import strategies as st

from ..protocol import Laid

__all__ = ["LAYOUTS", "array_layouts", "distinct_layouts", "laid", "layout_kind"]

#: Each kind of ``trusted.contract.LAYOUT_KINDS`` as the wire's (order, view, writeable).
LAYOUTS: Mapping[str, tuple[str, str, bool]] = MappingProxyType(
    {
        "fortran": ("F", "none", True),
        "transposed": ("C", "transposed", True),
        "strided": ("C", "strided", True),
        "read_only": ("C", "none", False),
    }
)


def distinct_layouts(shape: tuple[int, ...]) -> tuple[str, ...]:
    """The layout kinds an array of ``shape`` has distinct from C order (numpy's flags tell them apart).

    Fortran order and a transposed view need two axes of at least two elements (otherwise the array is
    C-contiguous as well); a strided view needs two elements.
    """
    long_axes = sum(1 for extent in shape if extent >= 2)
    size = int(np.prod(shape))
    return tuple(
        kind for kind in LAYOUTS
        if (kind in ("fortran", "transposed") and long_axes >= 2) or (kind == "strided" and size >= 2)
        or kind == "read_only"
    )  # fmt: skip


def laid(values: np.ndarray, kind: str | None) -> np.ndarray | Laid:
    """``values`` as an argument in layout ``kind`` (None: C-ordered, as a plain array travels)."""
    if kind is None:
        return values
    return Laid(values, *LAYOUTS[kind])


def array_layouts(shape: tuple[int, ...]) -> st.SearchStrategy[str | None]:
    """A layout kind for an array of ``shape``, or None (C order), which it shrinks to."""
    return st.sampled_from((None, *distinct_layouts(shape)))


def layout_kind(value: Laid) -> str:
    """The kind :func:`laid` made ``value`` with (to rebuild a drawn input from the feedback's values).

    Raises:
        ValueError: ``value``'s layout is not one of :data:`LAYOUTS`.
    """
    for kind, layout in LAYOUTS.items():
        if layout == (value.order, value.view, value.writeable):
            return kind
    raise ValueError(f"{value!r} is in none of the drawn layouts")
