"""Exercise 5: replay with one stateful random operation (chapter sections 11.4 to 11.6)."""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable

from ch11_solutions import ex5_replay as ref

from ..cells import answer, manual_answer, prose, readonly_code, solution_from, tests
from .contract import (
    BOUNDARY,
    CHECKPOINTED_CELL,
    CHECKPOINTED_TESTS,
    FIGURE,
    MISMATCH_CELL,
    MISMATCH_TESTS,
    POINTS,
    PREDICTION,
    REPORT_CELL,
    REPORT_TESTS,
    STORE_ALL_CELL,
    STORE_ALL_TESTS,
)

_BEGIN = "### BEGIN SOLUTION"

# The private helpers both replay functions of the reference call.
_HELPERS: tuple[Callable, ...] = (ref._check_inputs, ref._reverse_block)


def _with_nested_helpers(function: Callable) -> str:
    """The reference's ``function`` with the private helpers nested in its own solution region.

    A helper given to :func:`solution_from` gets a top-level solution region,
    which nbgrader releases as a bare ``raise NotImplementedError()`` before the
    ``def``: the untouched stub cell would then fail before the function exists.
    Nested, the released cell is the signature, the docstring and one stub body,
    and the source notebook still runs the reference code verbatim.
    """
    source = solution_from([function])
    marker = f"    {_BEGIN}\n"
    if source.count(marker) != 1:
        raise ValueError(f"expected exactly one solution region in {function.__name__}")
    nested = "\n\n".join(textwrap.dedent(inspect.getsource(h)).strip() for h in _HELPERS)
    return source.replace(marker, marker + textwrap.indent(nested, "    ") + "\n\n", 1)


def cells() -> list:
    return [
        prose(
            "ex5-statement",
            r"""
            # Exercise 5 · Replay with a random layer

            > *(Code.)* Implement replay for a chain containing one stateful random operation.
            > Compare saved-state and recomputed derivatives under matched and unmatched random
            > streams. Report arithmetic work, peak state, and the first derivative mismatch
            > separately.

            Section 11.5 priced checkpointing as a count: a depth-$L$ chain cut into blocks of
            length $k$ keeps $\lceil L/k\rceil$ block inputs, replays $L-\lceil L/k\rceil$ primitives
            during the reverse pass and peaks at $\lceil L/k\rceil + k$ primal states. Section 11.6
            adds what the count cannot see: recomputation is exact only if every replayed primitive
            is the *same function* as the first time. A primitive that draws random numbers is a
            function of its input **and of the generator's state**. Replay it from a generator that
            has moved on and it computes something else, with exactly the same arithmetic work and
            the same peak memory. The count model cannot tell the two apart; only the derivatives can.

            ## The chain

            The harness's `StochasticChain` (built by `make_chain(depth, random_layer, width=..., seed=...)`)
            maps the state $z_i$, a float64 vector of length `width`, to $z_{i+1}$:

            $$z_{i+1}=\tanh(w_i z_i+b_i)\quad(i\ne r),\qquad
              z_{r+1}=\tanh(w_r z_r+b_r+s\,\varepsilon),\quad \varepsilon\sim\mathcal N(0,I),$$

            with the loss $\mathcal L=\sum z_L$ (the docstrings write `dL/dz_i` for
            $\partial\mathcal L/\partial z_i$). Layer $r$ is the one stateful random operation: it
            draws `width` standard normals from the numpy `Generator` it is given, and so advances it.

            * `chain.forward(i, z, rng)` applies layer $i$ and adds one to `chain.forward_evaluations`
              (replays count too);
            * `chain.backward(i, z_out, cotangent_out)` is the reverse rule of layer $i$,
              $\bar z_i = w_i\,(1-z_{i+1}^2)\,\bar z_{i+1}$. It reads the layer's **output** $z_{i+1}$,
              so the reverse pass needs the primal states $z_1,\dots,z_L$, kept or replayed;
            * `StateLedger()` counts primal states alive at once: `retain(n)`, `release(n)`, `peak`.

            The random layer's noise is *stateful metadata* in the sense of the table in
            section 11.4: it is not a primal state, but replay cannot be exact without it.
            """,
        ),
        readonly_code(
            "ex5-imports",
            """
            import copy
            import math
            from dataclasses import dataclass

            import matplotlib.pyplot as plt
            import numpy as np

            from trainable_harness import StateLedger, StochasticChain, make_chain, uniform_checkpoint_cost
            """,
        ),
        prose(
            "ex5-demo-intro",
            """
            Run the next cell to see the instruments at work; it changes nothing you need later.
            The same seed gives the same noise, so the two forward passes agree bit for bit; the
            counter counts both.
            """,
        ),
        readonly_code(
            "ex5-demo",
            """
            demo = make_chain(6, 2, width=3)
            z_first = z_second = np.array([0.2, -0.1, 0.4])
            first_rng, second_rng = np.random.default_rng(0), np.random.default_rng(0)
            for layer in range(demo.depth):
                z_first = demo.forward(layer, z_first, first_rng)
                z_second = demo.forward(layer, z_second, second_rng)
            print("forward evaluations:", demo.forward_evaluations)
            print("same noise, same output bits:", z_first.tobytes() == z_second.tobytes())
            print("reverse rule of the last layer:", demo.backward(5, z_first, np.ones(3)))
            """,
        ),
        prose(
            "ex5-record",
            """
            Your replay functions return a `ReplayRun`. Run the next cell; do not change it.
            Its three counts are Python `int`s, also for a numpy integer `block_size`: a numpy integer
            count (`math.ceil(L / k) + k` with a numpy `k` is one) loses points.
            """,
        ),
        readonly_code("ex5-replayrun", inspect.getsource(ref.ReplayRun)),
        prose(
            "ex5-task1",
            r"""
            ## Task 1 · Store everything: the saved-state baseline

            One forward pass keeps $z_0,\dots,z_L$ ($L+1$ states); the reverse pass seeds
            $\bar z_L=\mathbf 1$ and applies the reverse rules from layer $L-1$ down to 0. Nothing is
            replayed. Return every cotangent row, not just $\bar z_0$: the later tasks compare runs
            row by row.

            Use `chain.forward` and `chain.backward`. The grader accepts store-all derivatives that
            agree with the reference to a relative $10^{-10}$ in every entry (that admits a reverse
            rule written with its factors in another order). The claims of Tasks 2 to 4, however,
            are **bit for bit**, comparing your runs with each other; so use one reverse rule
            everywhere, and `chain.backward` is the simplest way to do that.
            """,
        ),
        answer(STORE_ALL_CELL, _with_nested_helpers(ref.store_all_cotangents)),
        tests(
            STORE_ALL_TESTS,
            POINTS[STORE_ALL_TESTS],
            """
            _chain = make_chain(12, 5, width=3)
            _z0 = np.array([0.3, -0.2, 0.5])
            _run = store_all_cotangents(_chain, _z0, np.random.default_rng(1))
            assert isinstance(_run, ReplayRun), f"return a ReplayRun, not {type(_run).__name__}"
            _cot = _run.cotangents
            assert isinstance(_cot, np.ndarray) and _cot.dtype == np.float64 and _cot.shape == (13, 3), (
                f"cotangents: a float64 array of shape (depth + 1, width) = (13, 3), got {getattr(_cot, 'dtype', type(_cot))} {getattr(_cot, 'shape', '')}"
            )
            assert np.all(_cot[12] == 1.0), f"row depth is dL/dz_L = 1 (L = sum(z_L)), got {_cot[12]}"
            _counts = (_run.forward_evaluations, _run.replayed_evaluations, _run.peak_states)
            assert _counts == (12, 0, 13), f"(forward, replayed, peak) for depth 12 store-all: expected (12, 0, 13), got {_counts}"


            def _loss(start):
                rng, z = np.random.default_rng(1), start
                for layer in range(_chain.depth):
                    z = _chain.forward(layer, z, rng)
                return float(np.sum(z))


            # Central differences on the same noise: a derivative check of row 0.
            _h = 1e-6
            _fd = [(_loss(_z0 + _h * e) - _loss(_z0 - _h * e)) / (2 * _h) for e in np.eye(3)]
            assert np.allclose(_cot[0], _fd, rtol=1e-6, atol=1e-9), f"row 0 should be dL/dz_0 ~ {np.round(_fd, 6)}, got {_cot[0]}"
            print("visible checks passed")
            """,
        ),
        prose(
            "ex5-task2",
            r"""
            ## Task 2 · Checkpointed replay, matched and unmatched

            Cut the chain into blocks of $k$ layers starting at $s=0,k,2k,\dots$ (the last block is
            shorter when $k$ does not divide $L$). The forward pass keeps only each block input $z_s$
            and the output $z_L$. The reverse pass takes the blocks last to first: replay the block
            from $z_s$ to rebuild its inner states, apply its reverse rules, drop the rebuilt states.
            A block of $m$ layers replays only $m-1$ of them, because its last output is already
            kept (the next block's input, or $z_L$).

            **The generator.** The random layer advanced `rng` during the forward pass. For the
            replay of its block to draw the *same* numbers, the checkpoint must include the
            generator's state where the block starts: a snapshot,
            `copy.deepcopy(rng.bit_generator.state)`, restored into a copy of the generator before
            that block is replayed. A snapshot is a *copy of the state*. Anything that still refers
            to the live generator (the `Generator` object, its `bit_generator`, a shallow
            `copy.copy(rng)`) moves on with it. `matched=False` deliberately skips the snapshots and
            replays from `rng` as the forward pass left it: an unmatched stream.

            **The counts.** Arithmetic work is every `chain.forward` call, replays included. Peak
            state follows the convention of Theorem 11.3: the block inputs and $z_L$ stay alive for
            the whole reverse pass, and a block's replayed states live until its reverse rules are
            done, so the peak is $\lceil L/k\rceil + 1 + (k-1) = \lceil L/k\rceil + k$. A generator
            snapshot is metadata, not a primal state: it does not enter the ledger.
            """,
        ),
        prose(
            "ex5-predict",
            r"""
            ### Predict first

            Before you write the replay, predict. Take a depth-16 chain, blocks of $k=4$ (block inputs
            $z_0, z_4, z_8, z_{12}$, plus $z_{16}$) and the random layer $r=5$, and replay with
            `matched=False`.

            1. Which replayed states are wrong, and which kept ones are still right?
            2. Row $i$ of the cotangent array is $\bar z_i$, computed by the rule of layer $i$, which
               reads $z_{i+1}$. Going backward from the output (row 16), which is the first row that
               differs from store-all? Which rows differ in all?
            3. What changes if the random layer is $r=4$? And $r=7$?

            Write your prediction and its reason in the next cell, in two or three sentences. It is
            graded on the reasoning, not on being right; Task 4 shows you the answer.
            """,
        ),
        manual_answer(
            PREDICTION,
            POINTS[PREDICTION],
            r"""
            Award the point for a prediction with a reason that names which states the replay
            rebuilds and which rule reads which state; a wrong row number with that reasoning still
            earns it. No point for bare numbers without a reason.

            The correct prediction, for reference: the block of $r=5$ is $[4,8)$; the replay rebuilds
            $z_5, z_6, z_7$. $z_5$ (output of deterministic layer 4) is right, $z_6$ and $z_7$ are wrong
            (fresh noise at layer 5), and the kept $z_8$ is right. Row 7 reads $z_8$: right. Row 6 reads
            $z_7$: the first mismatch going backward. Rows 5 ($z_6$ wrong) and 4, 3, ..., 0 (they
            multiply the wrong $\bar z_5$) all differ: rows $0..6$. For $r=4$ the same rows (the block
            end decides, not $r$, as long as $r\le e-2$ for the block end $e=8$). For $r=7$ the random
            layer ends its block: its output $z_8$ is kept, it is never replayed, nothing differs.
            """,
        ),
        answer(CHECKPOINTED_CELL, _with_nested_helpers(ref.checkpointed_cotangents)),
        tests(
            CHECKPOINTED_TESTS,
            POINTS[CHECKPOINTED_TESTS],
            """
            _chain = make_chain(16, 5, width=3)
            _z0 = np.array([0.3, -0.2, 0.5])
            _saved = store_all_cotangents(_chain, _z0, np.random.default_rng(2)).cotangents
            _matched = checkpointed_cotangents(_chain, _z0, 4, np.random.default_rng(2), matched=True)
            assert isinstance(_matched, ReplayRun), f"return a ReplayRun, not {type(_matched).__name__}"
            _counts = (_matched.forward_evaluations, _matched.replayed_evaluations, _matched.peak_states)
            assert _counts == (28, 12, 8), (
                f"(forward, replayed, peak) for depth 16, k = 4: expected (16 + 12, 16 - 4, 4 + 4) = (28, 12, 8), got {_counts}"
            )
            assert _matched.cotangents.dtype == np.float64 and _matched.cotangents.shape == (17, 3), "cotangents: float64, shape (17, 3)"
            assert _matched.cotangents.tobytes() == _saved.tobytes(), (
                "matched replay must reproduce store-all bit for bit: is the generator state restored from a snapshot taken at each block start?"
            )
            _fresh = checkpointed_cotangents(_chain, _z0, 4, np.random.default_rng(2), matched=False)
            _counts = (_fresh.forward_evaluations, _fresh.replayed_evaluations, _fresh.peak_states)
            assert _counts == (28, 12, 8), f"the stream changes no count: expected (28, 12, 8), got {_counts}"
            assert _fresh.cotangents.tobytes() != _saved.tobytes(), "matched=False must replay from rng as the forward pass left it"
            _last = checkpointed_cotangents(_chain, _z0, 16, np.random.default_rng(2), matched=True)
            _counts = (_last.forward_evaluations, _last.replayed_evaluations, _last.peak_states)
            assert _counts == (31, 15, 17), f"k = 16 (one block) replays 15 layers and peaks at 1 + 16: expected (31, 15, 17), got {_counts}"
            print("visible checks passed")
            """,
        ),
        prose(
            "ex5-task3",
            """
            ## Task 3 · The first mismatch, going backward

            The reverse pass computes rows from the output down. "First" therefore means the
            **largest** row index where two cotangent arrays differ. Differ means *in any bit*:
            compare bytes, not values (`0.0 == -0.0` is true, but they are different results; two
            NaNs with the same bits are the same result).
            """,
        ),
        answer(MISMATCH_CELL, solution_from([ref.first_mismatch])),
        tests(
            MISMATCH_TESTS,
            POINTS[MISMATCH_TESTS],
            """
            _a = np.arange(12.0).reshape(6, 2)
            assert first_mismatch(_a, _a.copy()) is None, "identical arrays: None"
            _b = _a.copy()
            _b[1, 0] += 1.0
            _b[4, 1] += 1e-12
            _got = first_mismatch(_a, _b)
            assert _got == 4, f"rows 1 and 4 differ; going backward from the output (row 5), row 4 is first; got {_got}"
            _c = np.zeros((3, 2))
            _c[0, 1] = -0.0
            assert first_mismatch(np.zeros((3, 2)), _c) == 0, "-0.0 and 0.0 differ in their sign bit"
            _n = np.full((3, 2), np.nan)
            assert first_mismatch(_n, _n.copy()) is None, "the same NaN bits are the same result"
            try:
                first_mismatch(_a, _a[:5])
            except ValueError:
                pass
            else:
                raise AssertionError("arrays of different shapes: raise ValueError")
            print("visible checks passed")
            """,
        ),
        prose(
            "ex5-record2",
            """
            ## Task 4 · The report: three quantities kept apart

            `replay_report` runs store-all and checkpointed replay on the *same* noise (each run gets
            its own fresh `np.random.default_rng(seed)`) and reports work, peak state and the first
            mismatch as separate fields. Run the next cell; do not change it.
            """,
        ),
        readonly_code("ex5-replayreport", inspect.getsource(ref.ReplayReport)),
        answer(REPORT_CELL, solution_from([ref.replay_report])),
        tests(
            REPORT_TESTS,
            POINTS[REPORT_TESTS],
            """
            _chain = make_chain(16, 5, width=3)
            _z0 = np.array([0.3, -0.2, 0.5])
            _report = replay_report(_chain, _z0, 4, 2, matched=True)
            assert isinstance(_report, ReplayReport), f"return a ReplayReport, not {type(_report).__name__}"
            assert (_report.block_size, _report.matched) == (4, True), f"block_size and matched as given, got {(_report.block_size, _report.matched)}"
            assert _report.extra_forward_evaluations == 12, f"work: k = 4 adds 16 - 4 = 12 layer applications, got {_report.extra_forward_evaluations}"
            assert (_report.saved_peak_states, _report.replayed_peak_states) == (17, 8), (
                f"peak states: store-all 17, blocks of 4: 8; got {(_report.saved_peak_states, _report.replayed_peak_states)}"
            )
            assert _report.first_mismatch is None, f"matched replay equals store-all bit for bit, got first_mismatch={_report.first_mismatch}"
            _unmatched = replay_report(_chain, _z0, 4, 2, matched=False)
            assert _unmatched.first_mismatch is not None, "an unmatched stream changes the derivatives somewhere"
            assert _unmatched.extra_forward_evaluations == 12 and _unmatched.replayed_peak_states == 8, "the stream changes neither work nor peak"
            print("visible checks passed")
            """,
        ),
        prose(
            "ex5-see-it",
            """
            ### See it

            Now check your prediction. The next cell runs your report for the chain of the prediction
            ($L=16$, $k=4$) with the random layer at $r=4$, $5$ and $7$, matched and unmatched, and
            prints which rows differ.
            """,
        ),
        readonly_code(
            "ex5-see-it-run",
            """
            see_z0 = np.array([0.3, -0.2, 0.5])
            for see_r in (4, 5, 7):
                see_chain = make_chain(16, see_r, width=3)
                for see_matched in (True, False):
                    see = replay_report(see_chain, see_z0, 4, 2, matched=see_matched)
                    differing = [
                        i for i in range(see_chain.depth + 1)
                        if see.saved.cotangents[i].tobytes() != see.replayed.cotangents[i].tobytes()
                    ]
                    print(
                        f"r={see_r:2d} {'matched  ' if see_matched else 'unmatched'}  "
                        f"work +{see.extra_forward_evaluations}  "
                        f"peak {see.saved_peak_states} -> {see.replayed_peak_states}  "
                        f"first mismatch {see.first_mismatch}  differing rows {differing}"
                    )
            """,
        ),
        prose(
            "ex5-task5",
            r"""
            ## Task 5 · The figure

            For the chain of the prediction ($L=16$, $r=5$, $k=4$, `z0 = [0.3, -0.2, 0.5]`, seed 2),
            plot per row $i$ the norm $\lVert\bar z_i\rVert_2$ of the saved-state cotangents and of the
            replayed ones under the matched and the unmatched stream, on a log scale. Below it, plot
            how far each replay is from store-all (largest relative difference in the row, log scale;
            a row that is bit-identical has no point). Mark the kept block boundaries, the random
            layer, and highlight the first mismatch. Put the work and peak numbers in a title or
            legend: they are the same for both streams, which is the point.
            """,
        ),
        answer(
            FIGURE,
            r"""
            ### BEGIN SOLUTION
            chain = make_chain(16, 5, width=3)
            z0 = np.array([0.3, -0.2, 0.5])
            k, seed = 4, 2
            reports = {m: replay_report(chain, z0, k, seed, matched=m) for m in (True, False)}
            saved = reports[True].saved.cotangents
            rows = np.arange(chain.depth + 1)
            streams = {True: ("matched stream", "#5B8C5A", "x"), False: ("unmatched stream", "#E57200", "s")}

            fig, (top, bottom) = plt.subplots(
                2, 1, sharex=True, figsize=(9, 6.4), gridspec_kw={"height_ratios": [3, 2]}
            )
            top.plot(rows, np.linalg.norm(saved, axis=1), "o-", color="#232D4B", label="saved states (store-all)")
            for matched, (label, colour, marker) in streams.items():
                replayed = reports[matched].replayed.cotangents
                top.plot(rows, np.linalg.norm(replayed, axis=1), marker=marker, linestyle="" if matched else "--",
                         markersize=8, markerfacecolor="none", color=colour, label=f"replayed, {label}")
                relative = np.max(np.abs(replayed - saved) / np.abs(saved), axis=1)
                differs = relative > 0
                if differs.any():
                    bottom.plot(rows[differs], relative[differs], marker=marker, color=colour, label=label)
                else:
                    # A bit-identical row has no point on a log scale; say so in the legend.
                    bottom.plot([], [], marker=marker, linestyle="", color=colour,
                                label=f"{label}: every row bit-identical (no points)")

            mismatch = reports[False].first_mismatch
            r = chain.random_layer
            for axis in (top, bottom):
                for s in range(0, chain.depth + 1, k):
                    axis.axvline(s, color="#6b6b6b", linewidth=0.8, linestyle=":")
                axis.axvspan(r, r + 1, color="#9C2F2F", alpha=0.12)
                axis.set_yscale("log")
                axis.grid(alpha=0.22)
            if mismatch is not None:
                unmatched = reports[False].replayed.cotangents
                top.scatter([mismatch], [np.linalg.norm(unmatched[mismatch])], s=260, facecolor="none",
                            edgecolor="#9C2F2F", linewidth=2, zorder=4, label=f"first mismatch going backward: row {mismatch}")
                gap = np.max(np.abs(unmatched[mismatch] - saved[mismatch]) / np.abs(saved[mismatch]))
                bottom.scatter([mismatch], [gap], s=260, facecolor="none", edgecolor="#9C2F2F", linewidth=2, zorder=4)
            top.plot([], [], color="#6b6b6b", linestyle=":", label=f"kept states $z_0, z_{{{k}}}, \\dots$ and $z_L$")
            top.fill_between([], [], color="#9C2F2F", alpha=0.12, label=f"random layer r={r} ($z_{{{r}}} \\to z_{{{r + 1}}}$)")
            top.set(ylabel=r"$\|\bar z_i\|_2$")
            report = reports[False]
            top.set_title(
                f"L={chain.depth}, k={k}: work +{report.extra_forward_evaluations} forward evaluations, "
                f"peak states {report.saved_peak_states} -> {report.replayed_peak_states}, for either stream"
            )
            top.legend(frameon=False, fontsize=8, ncol=2, loc="lower right")
            bottom.set(xlabel=r"row $i$ (cotangent $\bar z_i$; the reverse pass runs right to left)",
                       ylabel="largest relative difference\nfrom store-all", xticks=rows)
            bottom.margins(y=0.25)
            bottom.legend(frameon=False, fontsize=8, loc="upper right")
            plt.tight_layout()
            plt.show()
            ### END SOLUTION
            """,
        ),
        prose(
            "ex5-task6",
            """
            ## Task 6 · What a checkpoint boundary must declare

            In a short paragraph or a list:

            1. Explain where the first mismatch appears, in terms of the block that holds the random
               layer, and why nothing changes when the random layer ends its block.
            2. Say why the work and peak counts could not reveal the error.
            3. Using section 11.6, list what a checkpoint boundary must declare for replay to be
               exact, and say which of these your implementation declared and how.
            """,
        ),
        manual_answer(
            BOUNDARY,
            POINTS[BOUNDARY],
            r"""
            - (1 pt) Location: with the random layer $r$ in the block $[s, e)$ whose end state $z_e$ is
              kept, an unmatched replay rebuilds $z_{r+1},\dots,z_{e-1}$ with fresh noise; $z_e$ is kept,
              so row $e-1$ (its rule reads $z_e$) is right and row $e-2$ (reads $z_{e-1}$) is the first
              mismatch going backward; every row below differs too, because each multiplies the wrong
              cotangent above it. When $r=e-1$ the random layer's output is the kept $z_e$, the layer is
              never replayed, and nothing differs. (Example: $L=16$, $k=4$, $r=5$: first mismatch row 6,
              rows 0..6 differ; $r=7$: none.)
            - (1 pt) Counts: the unmatched replay does exactly the same forward evaluations
              ($L-\lceil L/k\rceil$ extra) and has the same peak ($\lceil L/k\rceil+k$) as the matched
              one; cost accounting is blind to which numbers were drawn, so only a bitwise comparison
              of derivatives (against store-all) detects the error.
            - (1 pt) Declaration (section 11.6): the random-number state for stochastic primitives
              (here a deep copy of `rng.bit_generator.state` at every block start, restored into a copy
              of the generator for the replay; a snapshot is metadata, not a primal state); plus at least
              one of: floating-point format and accumulation mode on replay, mutable running statistics
              and other stateful updates, control-flow decisions whose predicates depend on rounded values.
            """,
        ),
    ]
