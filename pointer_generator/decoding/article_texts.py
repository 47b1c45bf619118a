"""Summaries of raw article texts with a loaded model (what `pointer-generator summarize`
and library callers use).

Each text is tokenized, lower-cased and period-fixed exactly like the training data
(`pointer_generator.data.stories.texts_to_examples`), written to a temporary `.bin` file
and read back through the same input pipeline and batched beam search as `--mode=decode`.
"""

from __future__ import annotations

import os
import tempfile

from pointer_generator.data.binfile import write_bin
from pointer_generator.data.input_pipeline import data_errors, make_dataset
from pointer_generator.data.stories import articles_of_texts
from pointer_generator.decoding.decoder import BeamSearchDecoder, Summary


def summarize_examples(
    decoder: BeamSearchDecoder, examples: list[tuple[str, str]], batch_size: int = 32
) -> list[Summary]:
    """One Summary (words, attention, p_gens, score) per tokenized (article, abstract)
    pair, in order."""
    hps = decoder.hps.replace(batch_size=max(1, min(batch_size, len(examples))))
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "summarize_000.bin")
        write_bin(path, examples)
        with data_errors():
            for batch in make_dataset(path, decoder.vocab, hps, "decode", True):
                out += decoder.decode_batch(batch)
    return out


def summarize_texts(
    decoder: BeamSearchDecoder,
    texts: list[str],
    batch_size: int = 32,
    names: list[str] | None = None,
) -> list[Summary]:
    """One Summary per raw text, in order; an empty text is a DataError naming it."""
    return summarize_examples(decoder, articles_of_texts(texts, names), batch_size)
