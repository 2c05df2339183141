"""What a hidden suite and a witness table import from the engine: this module and nothing else.

A suite grades one autograded test cell with properties, each a check of the student's
code; the reference (``ch11_solutions``) gives the expected values in the trusted
process. The reference of each name is its own docstring; docs/architecture.md
("Writing a suite") shows them together, and docs/authoring.md a whole exercise.

Suites and properties:
    :class:`CellSuite` (one test cell's properties and points), :func:`register` (make
    it gradable: call it at import), :class:`Property` (a check), the decorator
    :func:`hypothesis_property` (a check run over hypothesis examples),
    :class:`Mismatch` (what a check raises on a wrong answer; its ``calls``, each written by
    :func:`call_statement` or spelt with :func:`pasteable`, reproduce a failure that depends on earlier
    calls or on what a call did to its arguments; a :class:`Source` is shown as written: a name the
    statements set up), :func:`expect_equal`,
    :class:`Misconception` (a catalogued mistake the feedback may name),
    :data:`MAX_EVIDENCE`.

Calling the student's code, from a check:
    :class:`Student`: ``call``, ``call_watch`` (returns a :class:`Watched`), ``keep``
    (returns a :class:`Kept`), ``defaults``, ``report``, and ``batch``, the one way to
    make several calls in one exchange (a list of :class:`Call`; read the
    :class:`Replies` with ``take()`` or by iterating). What the student's code raises:
    :class:`StudentError`, with :class:`NotDefined` and :class:`Unencodable`.
    :func:`in_process_student` is a ``Student`` over trusted functions of this process
    (the reference with a catalogue entry swapped in), to predict what a mistake reports
    with the very check that grades it. :class:`Session` is what a ``Student`` calls
    through, for a wrapper of one (``exercises.witness.Renamed``).

Values as they come back over the wire:
    :class:`Record` (a dataclass instance), :func:`roundtrip` (a reference value as a
    student's value reads after the wire), :func:`wire_equal` (exact equality of wire
    values), :func:`truncate`, :func:`with_article` (``an int``, ``a list``: a type named in a
    sentence); arguments with a wire form of their own: :class:`Once`
    (a generator over items), :class:`RngSeed` (a fresh ``default_rng(seed)`` in the worker),
    :class:`Laid` (an array in another memory layout: Fortran order, a transposed or strided view,
    read-only; :func:`array_layouts` draws a layout kind for an array's shape, :func:`laid` wraps it,
    :func:`layout_kind` reads the kind back).
    :data:`NOTHING` fills a :class:`Mismatch` field that has no value (no ``got``: the code raised).
"""

from __future__ import annotations

from ..protocol import Kept, Laid, Once, Record, RngSeed, truncate, wire_equal
from ..trusted.array_layouts import array_layouts, laid, layout_kind
from ..trusted.cell_suite import CellSuite, Property
from ..trusted.differences import with_article
from ..trusted.hypothesis_properties import MAX_EVIDENCE, hypothesis_property
from ..trusted.in_process import in_process_student
from ..trusted.mismatch import Misconception, Mismatch, Source, call_statement, expect_equal, pasteable
from ..trusted.registry import register
from ..trusted.roundtrip import roundtrip
from ..trusted.student import Replies, Session, Student, Watched
from ..trusted.verdicts import NOTHING
from ..trusted.worker_batches import Call
from ..trusted.worker_errors import NotDefined, StudentError, Unencodable

__all__ = [
    "MAX_EVIDENCE",
    "NOTHING",
    "Call",
    "CellSuite",
    "Kept",
    "Laid",
    "Misconception",
    "Mismatch",
    "NotDefined",
    "Once",
    "Property",
    "Record",
    "Replies",
    "RngSeed",
    "Session",
    "Source",
    "Student",
    "StudentError",
    "Unencodable",
    "Watched",
    "array_layouts",
    "call_statement",
    "expect_equal",
    "hypothesis_property",
    "in_process_student",
    "laid",
    "layout_kind",
    "pasteable",
    "register",
    "roundtrip",
    "truncate",
    "wire_equal",
    "with_article",
]
