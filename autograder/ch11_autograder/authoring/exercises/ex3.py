"""Exercise 3: the best integer uniform block length (chapter section 11.5)."""

from __future__ import annotations

import inspect

from ch11_solutions import ex3_block_length as ref

from ..cells import answer, manual_answer, prose, readonly_code, solution_from, tests

NOTEBOOK = "ex3_block_length"


def cells() -> list:
    return [
        prose(
            "ex3-statement",
            r"""
            # Exercise 3 · The best uniform block length

            > *(Code.)* For depths from $16$ to $4096$, find the best integer uniform block
            > length under Equation 11.4. Compare it with $\sqrt L$ and report both peak
            > states and replay counts.

            A depth-$L$ chain checkpointed in uniform blocks of length $k$ keeps one state per
            block boundary and replays each block on the way back. Theorem 11.3 counts, for $k$
            dividing $L$,

            $$M(k) = \frac{L}{k} + k \quad\text{peak states},\qquad R(k) = L - \frac{L}{k}\quad\text{replays}.$$

            Integer block lengths need not divide $L$. Then the chain splits into
            $\lceil L/k\rceil$ blocks, the last one shorter, and the counts become
            $M(k)=\lceil L/k\rceil + k$ and $R(k) = L - \lceil L/k\rceil$. The harness's
            `uniform_checkpoint_cost(depth, block_size)` computes exactly these.
            """,
        ),
        readonly_code(
            "ex3-imports",
            """
            import math
            import operator
            from collections.abc import Iterable
            from dataclasses import dataclass

            import matplotlib.pyplot as plt
            import numpy as np

            from trainable_harness import uniform_checkpoint_cost
            """,
        ),
        prose(
            "ex3-record",
            """
            Your functions return a `BlockChoice` record. Run the next cell; do not change it.
            """,
        ),
        readonly_code("ex3-blockchoice", inspect.getsource(ref.BlockChoice)),
        prose(
            "ex3-task1",
            r"""
            ## Task 1 · One depth

            Minimizing $\lceil L/k\rceil + k$ has ties: for $L = 1000$ every $k$ from 28 to 36 gives
            64 peak states. A "best" block length is only defined once the tie-break is: the
            contract below asks for the **smallest** minimizer, which also replays least.
            A scan over all $k$ is fine for the depths of this exercise.
            """,
        ),
        answer(
            "ex3_best_block_length",
            solution_from(
                [ref.best_block_length], helpers=[ref._depth, ref._min_peak, ref._tie_interval, ref._choice]
            ),
        ),
        tests(
            "ex3_best_block_length_tests",
            4,
            """
            choice = best_block_length(64)
            assert isinstance(choice, BlockChoice), f"return a BlockChoice, not {type(choice).__name__}"
            assert (choice.block_size, choice.peak_states) == (8, 16), f"depth 64: expected k=8 with 16 states, got {choice}"
            assert choice.replay_evaluations == 56, f"depth 64, k=8 replays 64 - 8 = 56 primitives, got {choice}"
            tied = best_block_length(1000)
            assert tied.peak_states == 64, f"depth 1000: the minimum peak is 64, got {tied.peak_states}"
            assert tied.block_size == 28, f"depth 1000: k = 28..36 all reach 64 states; the contract asks for the smallest, got {tied.block_size}"
            print("visible checks passed")
            """,
        ),
        prose(
            "ex3-task2",
            """
            ## Task 2 · The table from 16 to 4096

            Return one `BlockChoice` per depth, in the order given.
            """,
        ),
        answer("ex3_block_table", solution_from([ref.block_table])),
        tests(
            "ex3_block_table_tests",
            2,
            """
            table = block_table([16, 64, 1000])
            assert [c.depth for c in table] == [16, 64, 1000], "one record per depth, in the order given"
            assert [c.block_size for c in table] == [4, 8, 28], f"got block sizes {[c.block_size for c in table]}"
            print("visible checks passed")
            """,
        ),
        prose(
            "ex3-task3",
            r"""
            ## Task 3 · The figure

            Plot, against depth $L$ from 16 to 4096, the best block length next to $\sqrt L$, and the
            peak states next to $2\sqrt L$ (two panels, log-scaled depth axis). Mark where the best $k$
            is not the integer nearest $\sqrt L$.
            """,
        ),
        answer(
            "ex3_figure",
            """
            ### BEGIN SOLUTION
            table = block_table()
            depths = np.array([c.depth for c in table])
            fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
            left.plot(depths, [c.block_size for c in table], color="#232D4B", label="best $k$")
            left.plot(depths, np.sqrt(depths), color="#E57200", linestyle="--", label=r"$\\sqrt{L}$")
            off = [c for c in table if c.block_size != round(c.sqrt_depth)]
            left.scatter([c.depth for c in off], [c.block_size for c in off], s=4, color="#9C2F2F",
                         label=r"best $k \\neq$ round$(\\sqrt{L})$")
            left.set(xscale="log", xlabel="depth $L$", ylabel="block length")
            right.plot(depths, [c.peak_states for c in table], color="#232D4B", label="peak states")
            right.plot(depths, 2 * np.sqrt(depths), color="#E57200", linestyle="--", label=r"$2\\sqrt{L}$")
            right.plot(depths, [c.replay_evaluations for c in table], color="#6b6b6b", label="replays")
            right.set(xscale="log", yscale="log", xlabel="depth $L$", ylabel="count")
            for axis in (left, right):
                axis.grid(alpha=0.22)
                axis.legend(frameon=False, fontsize=8)
            plt.tight_layout()
            plt.show()
            ### END SOLUTION
            """,
        ),
        prose(
            "ex3-task4",
            r"""
            ## Task 4 · Report

            In a few sentences: how far is the best $k$ from $\sqrt L$ over this range, and why can it
            differ? Give the peak states and replay counts for $L = 16, 1000, 4096$, and say what the
            count model leaves out when you would pick $k$ for a real network.
            """,
        ),
        manual_answer(
            "ex3_report",
            3,
            """
            - (1 pt) Best $k$ stays within a few units of $\\sqrt L$; it differs because $k$ must be an
              integer, $\\lceil L/k\\rceil$ jumps, and ties are broken toward the smallest $k$.
            - (1 pt) Correct numbers: $L=16$: $k=4$, 8 states, 12 replays; $L=1000$: $k=28$, 64 states,
              964 replays; $L=4096$: $k=64$, 128 states, 4032 replays.
            - (1 pt) Names a limit of the count model: unequal state sizes, unequal primitive costs,
              wall-clock versus counts, or memory fragmentation.
            """,
        ),
    ]
