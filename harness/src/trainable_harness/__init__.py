"""trainable_harness: the instruments of chapter 11, "The Gradient Has a Memory".

    from trainable_harness import TapeNode, reverse_accumulate, uniform_checkpoint_cost
"""

from .chain import StateLedger, StochasticChain, make_chain
from .checkpoint import CheckpointCost, uniform_checkpoint_cost
from .manifest import HARNESS_REF, load_manifest
from .objective import opening_objective, opening_objective_exact, opening_tape
from .tape import TapeNode, reverse_accumulate, validate_tape

__all__ = [
    "HARNESS_REF",
    "CheckpointCost",
    "StateLedger",
    "StochasticChain",
    "TapeNode",
    "load_manifest",
    "make_chain",
    "opening_objective",
    "opening_objective_exact",
    "opening_tape",
    "reverse_accumulate",
    "uniform_checkpoint_cost",
    "validate_tape",
]
