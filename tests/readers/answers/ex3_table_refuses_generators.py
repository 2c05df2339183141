def block_table(depths: Iterable[int] = range(16, 4097)) -> list[BlockChoice]:
    # "TypeError: depths is not iterable": only sequences can be walked in order
    if not isinstance(depths, list | tuple | range):
        raise TypeError(f"depths must be a list, tuple or range, got {type(depths).__name__}")
    return [best_block_length(depth) for depth in depths]
