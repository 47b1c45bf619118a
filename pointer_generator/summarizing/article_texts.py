"""Summaries of raw article texts with a loaded model (what `pointer-generator summarize`,
`pg.Summarizer` and `serve` use).

Each text is tokenized, lower-cased and period-fixed exactly like the training data
(`pointer_generator.data.stories.texts_to_examples`), made into a batch by the input
pipeline's own stages (`input_pipeline.examples_batch`, without building a `tf.data`
pipeline per call) and decoded by the same batched beam search as `--mode=decode`.

So that a new article length or a new number of texts does not compile the search
again, batches come in a few fixed shapes: articles padded to the experiment's length
buckets (`--length_buckets`, `input_pipeline.bucket_lengths`), and rows padded to a power
of two up to the batch size (`batch_rows`) by repeating the last article, whose extra
summaries are dropped.
"""

from __future__ import annotations

from pointer_generator.data.input_pipeline import data_errors, examples_batch
from pointer_generator.data.stories import articles_of_texts
from pointer_generator.search.beam_decoder import BeamSearchDecoder, Summary


def batch_rows(n: int, batch_size: int) -> int:
    """The rows a batch of n texts is padded to: the smallest power of two >= n, at most
    batch_size (1, 2, 4, 8, 16 for the default 16)."""
    rows = 1
    while rows < n:
        rows *= 2
    return min(rows, max(batch_size, n))


def all_batch_rows(batch_size: int) -> tuple[int, ...]:
    """Every row count a batch of 1 to batch_size texts is padded to (`batch_rows`):
    (1, 2, 4, 8, 16) for 16; what `warm_up` compiles for batches of any size."""
    return tuple(sorted({batch_rows(n, batch_size) for n in range(1, batch_size + 1)}))


def summarize_examples(
    decoder: BeamSearchDecoder,
    examples: list[tuple[str, str]],
    batch_size: int = 32,
    ready: set | None = None,
    only_ready: bool = False,
) -> list[Summary]:
    """One Summary (words, attention, p_gens, score) per tokenized (article, abstract)
    pair, in order.

    ready: the batch shapes (rows, article length) the search has run (compiled); every
    shape run is added. only_ready: a batch of a shape not among them is run as smaller
    batches of ready shapes where there are some (`serve`: a request never waits for a
    compile after the warm-up, whose batches of one text cover every length)."""
    out = []
    split = ready if only_ready else None
    with data_errors():
        for start in range(0, len(examples), batch_size):
            chunk = examples[start : start + batch_size]
            out += _summarize_chunk(decoder, chunk, batch_size, ready, split)
    return out


def smaller_ready_rows(shape: tuple[int, int], ready: set) -> int | None:
    """For a batch of `shape` (rows, article length) not in `ready`: the largest row
    count below its own that `ready` holds at its length (the batch is then searched in
    chunks of that many), or None (it is in `ready`, or there is none)."""
    if shape in ready:
        return None
    smaller = [rows for rows, length in ready if length == shape[1] and rows < shape[0]]
    return max(smaller) if smaller else None


def _summarize_chunk(decoder, chunk, batch_size: int, ready, split) -> list[Summary]:
    batch = examples_batch(chunk, decoder.vocab, decoder.hps, batch_rows(len(chunk), batch_size))
    shape = tuple(batch["enc_batch"].shape)
    size = smaller_ready_rows(shape, split) if split is not None else None
    if size:
        out = []
        for start in range(0, len(chunk), size):
            out += _summarize_chunk(decoder, chunk[start : start + size], size, ready, split)
        return out
    summaries = decoder.decode_batch(batch)[: len(chunk)]
    if ready is not None:
        ready.add(shape)
    return summaries


def warm_up(
    decoder: BeamSearchDecoder, lengths: list[int], rows: list[int], ready: set | None = None
) -> int:
    """Run the search once on a dummy article of each length in `lengths` for each batch
    size in `rows`, so that later texts of these shapes find it compiled (each shape is
    added to `ready`, when given). Returns the number of shapes."""
    shapes = 0
    for n in sorted(set(rows)):
        for length in sorted(set(lengths)):
            examples = [(" ".join(["the"] * length), "")] * n  # any word (or [UNK]) will do
            with data_errors():
                batch = examples_batch(examples, decoder.vocab, decoder.hps, n)
                decoder.decode_batch(batch)
            if ready is not None:
                ready.add(tuple(batch["enc_batch"].shape))
            shapes += 1
    return shapes


def summarize_texts(
    decoder: BeamSearchDecoder,
    texts: list[str],
    batch_size: int = 32,
    names: list[str] | None = None,
) -> list[Summary]:
    """One Summary per raw text, in order; an empty text is a DataError naming it."""
    return summarize_examples(decoder, articles_of_texts(texts, names), batch_size)
