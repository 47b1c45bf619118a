"""Decoding: the batched beam search, the decoder over a model's step, decode mode's jobs,
the decode folder's files and attention pages, and `summarize` for raw text."""
