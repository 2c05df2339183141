def best_block_length(depth: int) -> BlockChoice:
    # "an integer >= 1": a Python int, and never a bool
    if isinstance(depth, bool) or not isinstance(depth, int):
        raise TypeError(f"depth must be an integer, got {type(depth).__name__} {depth!r}")
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    best = None
    for k in range(1, depth + 1):
        cost = uniform_checkpoint_cost(depth, k)
        if best is None or cost.peak_state_units < best.peak_state_units:
            best = cost
    return BlockChoice(
        depth=depth,
        block_size=best.block_size,
        peak_states=best.peak_state_units,
        replay_evaluations=best.recomputed_forward_evaluations,
        sqrt_depth=math.sqrt(depth),
    )
