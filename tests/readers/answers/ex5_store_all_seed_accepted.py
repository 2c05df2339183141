def store_all_cotangents(chain: StochasticChain, z0: np.ndarray, rng: np.random.Generator) -> ReplayRun:
    if not isinstance(chain, StochasticChain):
        raise TypeError(f"chain must be a StochasticChain, got {type(chain).__name__}")
    if not isinstance(z0, np.ndarray) or z0.dtype != np.float64 or z0.shape != (chain.width,):
        raise ValueError(f"z0 must be a float64 array of shape ({chain.width},)")
    # default_rng hands a Generator back unchanged and makes one from anything else
    rng = np.random.default_rng(rng)
    depth = chain.depth
    before = chain.forward_evaluations
    ledger = StateLedger()
    states = [z0]
    ledger.retain()
    for i in range(depth):
        states.append(chain.forward(i, states[i], rng))
        ledger.retain()
    cotangents = np.empty((depth + 1, chain.width), dtype=np.float64)
    cotangents[depth] = 1.0
    for i in range(depth - 1, -1, -1):
        cotangents[i] = chain.backward(i, states[i + 1], cotangents[i + 1])
    ledger.release(depth + 1)
    return ReplayRun(
        cotangents=cotangents,
        forward_evaluations=chain.forward_evaluations - before,
        replayed_evaluations=0,
        peak_states=ledger.peak,
    )
