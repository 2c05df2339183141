_reference_checkpointed_cotangents = checkpointed_cotangents


def checkpointed_cotangents(
    chain: StochasticChain,
    z0: np.ndarray,
    block_size: int,
    rng: np.random.Generator,
    *,
    matched: bool = True,
) -> ReplayRun:
    # work on a copy so that the caller's generator is not disturbed by the replay
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    return _reference_checkpointed_cotangents(chain, z0, block_size, copy.deepcopy(rng), matched=matched)
