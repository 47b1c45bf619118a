"""The search: the batched beam search over any model family's step, its loop state and
rules, the settings of a search, the decoder that runs it over a model (one device or a
machine's devices) and ABS+'s extractive features."""
