import functools

_reference_best_block_length = best_block_length


@functools.lru_cache(maxsize=None)
def best_block_length(depth: int) -> BlockChoice:
    # "A cache is fine": the table asks for the same depths again and again
    return _reference_best_block_length(depth)
