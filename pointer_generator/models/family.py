"""The contract every model family keeps, so that the search, the trainer and the
runtime never ask which family they hold.

A family is one model class in `models/` (plus its layers and flags), registered in
`models/families.py`. Its model is a Keras model that provides:

* building: `from_hparams(hps, vocab_size)` (its config made from the hyper-parameters)
  and `build_weights()`; `parameter_summary()` for the start-up line;
* training and evaluation: `model(batch)` returns `loss`, `step_nll` [B, T],
  `coverage_loss`, `total_loss`, `p_gens` [B, T] and `p_gen_mean` (what the trainer and
  the eval job read);
* search (`decoding/decoder.py`): `search_start(inputs, beam_size, full_final_dist)`
  returns a `SearchStart` -- the step function, its initial carry and the per-article
  tensors, as Model Garden's `symbols_to_logits_fn` with its initial cache, or
  keras-hub's `generate_step` -- and `SEARCH_OPTIONS`, the search options it supports
  beyond the common ones (`block_unk`: never generate [UNK]; `features`: ABS+'s
  extractive features; `nbest`: n-best lists for tuning them), with
  `search_option_note` saying why an option is missing;
* checkpoints (`runtime/checkpointing.py`): `checkpoint_mismatches(shapes)`, what in
  the model disagrees with a checkpoint's {key: shape} (one phrase each, naming the
  flag), and `implied_settings(shapes)` / `embedding_key(shapes)`, class methods
  reading a checkpoint of the family.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import tensorflow as tf


class SearchInputs(NamedTuple):
    """The encoder inputs of a batch of B articles, as the input pipeline makes them.

    enc_batch: int32 [B, enc_len] ids ([UNK] for article OOVs); enc_padding_mask: float32
    [B, enc_len]; enc_batch_extend_vocab: int32 [B, enc_len] ids with article OOVs as
    vocab_size + k; max_art_oovs: int32 scalar.
    """

    enc_batch: Any
    enc_padding_mask: Any
    enc_batch_extend_vocab: Any
    max_art_oovs: Any


class SearchStart(NamedTuple):
    """What the batched search runs (`decoding.beam_search.batched_beam_search`).

    step: step(tokens [N], carry, articles) -> (probabilities [N, V'] or
      `top_k.Candidates`, attention [N, enc_len], p_gen [N], new carry), N = rows of
      `articles` * beam_size (row s*K + k is hypothesis k of article s);
    carry: nested tensors [B*K, ...], every beam of an article starting alike;
    articles: nested tensors [B, ...], one row per article (the search drops the rows of
      finished articles).
    """

    step: Callable
    carry: Any
    articles: Any


def tile_beams(nested: Any, beam_size: int) -> Any:
    """Repeat every row `beam_size` times: [B, ...] -> [B*K, ...], row b*K + k = row b."""
    return tf.nest.map_structure(
        lambda x: tf.repeat(tf.convert_to_tensor(x), beam_size, axis=0), nested
    )


def parameter_summary(model, kind: str) -> str:
    """`<kind> model with N trainable parameters (vocab V)`, the start-up line."""
    n = sum(int(tf.size(v)) for v in model.trainable_variables)
    return f"{kind} model with {n:,} trainable parameters (vocab {model.vocab_size:,})"


def embedding_mismatches(shape, vocab_size: int, emb_dim: int) -> list[str]:
    """The phrases for a word-embedding table of `shape` that does not fit the flags."""
    problems = []
    if len(shape) == 2 and shape[0] != vocab_size:
        problems.append(
            f"it has a vocabulary of {shape[0]} words but the vocab file and --vocab_size "
            f"give {vocab_size}"
        )
    if len(shape) == 2 and shape[1] != emb_dim:
        problems.append(f"it has emb_dim={shape[1]} but --emb_dim={emb_dim}")
    return problems
