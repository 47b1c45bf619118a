"""Decoding on every device of one machine (`--distribution_strategy=mirrored`).

`ReplicatedDecoder` splits each batch into one contiguous share of articles per replica
of a `tf.distribute.MirroredStrategy` (the local GPUs, or `--num_cpu_devices` logical
CPU devices) and runs the batched beam search on all shares at once (`strategy.run`);
the summaries come back in input order, the same as one device's. Across machines, run
one process per machine with `--decode_shards` (decoding/shards.py).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from pointer_generator.search.beam_decoder import BeamSearchDecoder, Summary, decode_batches

# The per-article inputs of the search; max_art_oovs (a scalar) goes to every replica.
_SHARED_KEYS = ("enc_batch", "enc_padding_mask", "enc_batch_extend_vocab", "art_oovs")


def share_bounds(rows: int, replicas: int) -> list[tuple[int, int]]:
    """[lo, hi) of each replica's contiguous share of `rows` articles; the shares differ
    by at most one article (some are empty when rows < replicas)."""
    return [(i * rows // replicas, (i + 1) * rows // replicas) for i in range(replicas)]


class ReplicatedDecoder:
    """A `BeamSearchDecoder` whose batches are split over the replicas of `strategy`.

    Args:
      decoder: a decoder over a model built under `strategy.scope()` (its variables
        are mirrored on every device).
      strategy: a `tf.distribute.MirroredStrategy`.

    Offers what decode mode uses of a decoder: `decode_batch`, `decode_stream`, and
    (through attribute look-up) the decoder's settings.
    """

    def __init__(self, decoder: BeamSearchDecoder, strategy: tf.distribute.Strategy):
        self.decoder = decoder
        self.strategy = strategy

    def __getattr__(self, name):
        # hps, vocab, trigram_blocking, ...: the wrapped decoder's settings.
        return getattr(self.decoder, name)

    def decode_batch(self, batch: dict) -> list[Summary]:
        """Beam-search every article of a pipeline batch, each replica its share."""
        rows = int(batch["enc_batch"].shape[0])
        bounds = share_bounds(rows, self.strategy.num_replicas_in_sync)

        def share(ctx):
            lo, hi = bounds[ctx.replica_id_in_sync_group]
            # A replica with no articles (a batch smaller than the replica count) still
            # takes part in the step: it decodes the first article and drops the result.
            index = tf.range(lo, hi) if hi > lo else tf.zeros([1], tf.int32)
            return tuple(tf.gather(batch[key], index) for key in _SHARED_KEYS)

        inputs = self.strategy.experimental_distribute_values_from_function(share)
        out = self.strategy.run(
            lambda enc, mask, ext, oovs: self.decoder.search(
                enc, mask, ext, batch["max_art_oovs"], oovs
            ),
            args=inputs,
        )
        parts = [
            {key: value.numpy() for key, value in part.items()}
            for part, (lo, hi) in zip(
                self.strategy.experimental_local_results(out), bounds, strict=True
            )
            if hi > lo
        ]
        # Every share has the batch's widths (encoder length, max_dec_steps): rows stack.
        merged = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
        return self.decoder.summaries(merged, batch)

    def decode_stream(self, batches, skip: int = 0):
        """As `BeamSearchDecoder.decode_stream`."""
        return decode_batches(self.decode_batch, batches, skip)
