"""The two code listings of chapter 11, runnable: sections 11.1 and 11.5.

Usage::

    python examples/chapter_listings.py [--out DIR] [--manifest PATH]

Prints the chapter's lines and writes ``figure-11-1.png`` and
``figure-11-2.png`` into ``--out`` (default ``build/chapter`` in the
repository).

The listings below are copied verbatim from the chapter text. Only this
preamble is added: the Agg backend (no display is assumed), the command line,
and the one line the chapter leaves to the reader, which loads the pinned
manifest (``manifest = load_manifest(...)``) so that the first printed line
names the harness wheel actually pinned in ``harness/manifest.json``. After
the listings, the two figures they leave open are saved; under Agg
``plt.show()`` displays nothing and keeps them open.

Chapter erratum kept verbatim: the label ``"$k=\\sqrt{64}$"`` is not a raw
string. ``\\s`` is an invalid escape that Python keeps as a backslash and an
``s``, so the label renders as intended, but Python 3.11 flags it with a
DeprecationWarning at compile time (hidden by default) and 3.12 with a
SyntaxWarning.
"""
# The listings are the chapter's text: imports mid-file and the escape above stay as printed.
# ruff: noqa: E402, I001, W605

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from trainable_harness import load_manifest

REPO = Path(__file__).resolve().parents[1]
FIGURE_NAMES = ("figure-11-1.png", "figure-11-2.png")

parser = argparse.ArgumentParser(description="Run the chapter 11 listings and save their figures.")
parser.add_argument(
    "--out", type=Path, default=REPO / "build" / "chapter", help="figure directory (default: %(default)s)"
)
parser.add_argument(
    "--manifest", type=Path, default=REPO / "harness" / "manifest.json", help="pinned manifest (default: %(default)s)"
)
args = parser.parse_args()
args.out.mkdir(parents=True, exist_ok=True)

manifest = load_manifest(args.manifest)

# ---------------------------------------------------------------- listing of section 11.1 (verbatim)

import matplotlib.pyplot as plt
import numpy as np

# [1]

from trainable_harness import TapeNode, reverse_accumulate

# [2]
x, y = 2.0, 3.0
tape = [
    TapeNode(x),
    TapeNode(y),
    TapeNode(x * y, ((0, y), (1, x))),
    TapeNode(x * y + x, ((2, 1.0), (0, 1.0))),
    TapeNode(x * y * y, ((2, y), (1, x * y))),
    TapeNode(
        (x * y + x) * (x * y * y),
        ((3, x * y * y), (4, x * y + x)),
    ),
]

# [3]
correct = reverse_accumulate(tape)

# [4]
def overwrite_shared_node(nodes, shared_index, reverse_order):
    cotangents = np.zeros(len(nodes), dtype=np.float64)
    cotangents[-1] = 1.0
    for node_index in reverse_order:
        incoming = cotangents[node_index]
        for parent_index, local_derivative in nodes[node_index].parents:
            contribution = incoming * local_derivative
            if parent_index == shared_index:
                cotangents[parent_index] = contribution
            else:
                cotangents[parent_index] += contribution
    return cotangents

overwrite = overwrite_shared_node(
    tape,
    shared_index=2,
    reverse_order=(5, 3, 4, 2, 1, 0),
)

# [5]
contributions = [correct[3], correct[4] * y]
assert np.allclose(contributions, [18.0, 24.0])
assert np.allclose(correct[:2], [144.0, 132.0])

# [6]
labels = ["x", "y"]
positions = np.arange(len(labels))
width = 0.36
fig, axis = plt.subplots(figsize=(6.6, 3.6))
axis.bar(
    positions - width / 2,
    correct[:2],
    width,
    label="add contributions",
    color="#232D4B",
)
axis.bar(
    positions + width / 2,
    overwrite[:2],
    width,
    label="last writer wins",
    color="#9C2F2F",
)
axis.set(
    xticks=positions,
    xticklabels=labels,
    ylabel="computed input derivative",
)
axis.grid(axis="y", alpha=0.22)
axis.legend(frameon=False)
plt.tight_layout()
plt.show()

print(f"harness={manifest['harness_ref']} wheel={manifest['wheel_sha256'][:12]}")
print(f"contributions into a={contributions}; accumulated={correct[2]}")
print(f"correct: dx={correct[0]:.1f}, dy={correct[1]:.1f}")
print(f"overwrite: dx={overwrite[0]:.1f}, dy={overwrite[1]:.1f}")

# ---------------------------------------------------------------- listing of section 11.5 (verbatim)

from trainable_harness import uniform_checkpoint_cost

# [1]
assert manifest["harness_ref"] == "ch-11"

# [2]
depth = 64
block_lengths = np.arange(1, depth + 1)

# [3]
costs = [uniform_checkpoint_cost(depth, int(k)) for k in block_lengths]
peak_states = np.array([cost.peak_state_units for cost in costs])
extra_forwards = np.array([
    cost.recomputed_forward_evaluations for cost in costs
])

# [4]
chosen = uniform_checkpoint_cost(depth, 8)
assert chosen.peak_state_units == 16
assert chosen.recomputed_forward_evaluations == 56

# [5]
fig, axis = plt.subplots(figsize=(7.2, 3.8))
axis.plot(block_lengths, peak_states, color="#232D4B", label="peak states")
axis.plot(
    block_lengths, extra_forwards,
    color="#E57200", label="extra forward evaluations",
)
axis.scatter([8], [16], color="#9C2F2F", zorder=3, label="$k=\sqrt{64}$")
axis.axhline(65, color="#6b6b6b", linestyle="--", label="store-all states")
axis.set(xlabel="block length $k$", ylabel="count")
axis.grid(alpha=0.22)
axis.legend(frameon=False, fontsize=8)
plt.tight_layout()
plt.show()

print(
    f"depth={depth}; block={chosen.block_size}; "
    f"peak_states={chosen.peak_state_units}; "
    f"extra_forwards={chosen.recomputed_forward_evaluations}; "
    f"store_all={depth + 1}"
)

# ---------------------------------------------------------------- save the figures the listings drew

for number, name in zip(plt.get_fignums(), FIGURE_NAMES, strict=True):
    plt.figure(number).savefig(args.out / name)
plt.close("all")
