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
    decoder: BeamSearchDecoder, examples: list[tuple[str, str]], batch_size: int = 32
) -> list[Summary]:
    """One Summary (words, attention, p_gens, score) per tokenized (article, abstract)
    pair, in order."""
    out = []
    with data_errors():
        for start in range(0, len(examples), batch_size):
            chunk = examples[start : start + batch_size]
            batch = examples_batch(
                chunk, decoder.vocab, decoder.hps, batch_rows(len(chunk), batch_size)
            )
            out += decoder.decode_batch(batch)[: len(chunk)]
    return out


def warm_up(decoder: BeamSearchDecoder, lengths: list[int], rows: list[int]) -> int:
    """Run the search once on a dummy article of each length in `lengths` for each batch
    size in `rows`, so that later texts of these shapes find it compiled. Returns the
    number of shapes."""
    shapes = 0
    for n in sorted(set(rows)):
        for length in sorted(set(lengths)):
            examples = [(" ".join(["the"] * length), "")] * n  # any word (or [UNK]) will do
            with data_errors():
                decoder.decode_batch(examples_batch(examples, decoder.vocab, decoder.hps, n))
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
