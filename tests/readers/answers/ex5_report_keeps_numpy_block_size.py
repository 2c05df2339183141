def replay_report(
    chain: StochasticChain, z0: np.ndarray, block_size: int, seed: int, *, matched: bool
) -> ReplayReport:
    saved = store_all_cotangents(chain, z0, np.random.default_rng(seed))
    replayed = checkpointed_cotangents(chain, z0, block_size, np.random.default_rng(seed), matched=matched)
    return ReplayReport(
        block_size=block_size,
        matched=matched,
        saved=saved,
        replayed=replayed,
        extra_forward_evaluations=replayed.forward_evaluations - saved.forward_evaluations,
        saved_peak_states=saved.peak_states,
        replayed_peak_states=replayed.peak_states,
        first_mismatch=first_mismatch(saved.cotangents, replayed.cotangents),
    )
