"""The original release's decoding, re-enacted over this model: the decode benchmark's
denominator ("one article at a time, a session call per step").

What the original ran for each article (spec 4.12 and 5; TF1 `decode` mode):

* `run_encoder` encodes a batch of beam-size *copies* of the article and fetches the
  encoder states [K, T, 2*hidden] and the reduced state of row 0.
* Each of up to `max_dec_steps` steps is one `sess.run` of the one-step decode graph,
  which is fed the encoder states (a feed into an intermediate tensor). Everything
  downstream of a fed tensor is recomputed, so every step recomputes the encoder
  features W_h h_i for the K copies ([K*T, 512] x [512, 512]: 0.84 GFLOP at T = 400,
  eight times the step's vocabulary projection), computes the attention twice
  (`initial_state_attention=True`), the whole final distribution [K, V + OOVs] by a
  scatter, and its top 2K in the graph; only the top ids and log-probabilities, the
  states, attention, p_gen and coverage are fetched.
* A Python beam search (`tests/reference_search.py: beam_search_single`, the original
  algorithm) sorts the candidates.

Not re-enacted (each would only slow the reference down): the per-step copy of the fed
encoder states from Python into the graph, and TF1's session overheads. The encoder here
also computes W_h h_i once (the original's `run_encoder` did not fetch it): one of
the 121 such products per article.

`reference_step` without the per-step features and in-graph top-k is also the decoder
step this implementation used before its performance work (its batched search is the
benchmark's "pre-optimisation" row).
"""

from __future__ import annotations

from pointer_generator.models.pointer_generator import EncoderOutput


def reference_step(model, hps, *, features_per_step: bool = False, top_k: int | None = None):
    """The original's decode graph as a step function (pointer-generator,
    decode_attention "original").

    features_per_step: recompute W_h h_i from the encoder states in every step (the
      original's graph, whose encoder states are fed); False reads `enc.features`.
    top_k: return `top_k.Candidates` holding the top `top_k` of the final
      distribution, computed in the step (the original's fetch); None = the whole
      distribution [N, V_ext].

    Returns step(enc, ext, max_art_oovs, tokens, carry) -> (final, attn [N, T],
    p_gen [N], carry) with enc (EncoderOutput [N, T, ...]), ext [N, T] and carry
    ({"c", "h", "coverage"}, [N, ...]) tiled to the N decoder rows.
    """
    import tensorflow as tf

    from pointer_generator.layers.recurrent import keras_cell_step
    from pointer_generator.layers.top_k import Candidates

    use_cov = hps.coverage

    def step(enc, ext, max_art_oovs, tokens, carry):
        if features_per_step:
            enc = EncoderOutput(
                enc.states,
                model.attention.encoder_features(enc.states),
                enc.padding_mask,
                enc.c,
                enc.h,
            )
        c, h, coverage = carry["c"], carry["h"], carry["coverage"]
        prev_context, prev_attn = model.attention(
            enc.states,
            enc.features,
            enc.padding_mask,
            tf.concat([c, h], 1),
            coverage if use_cov else None,
        )
        if use_cov:
            coverage = coverage + prev_attn
        x = model.input_merge(tf.concat([model.embedding(tokens), prev_context], 1))
        h, c = keras_cell_step(model.decoder_cell, x, h, c)
        context, attn = model.attention(
            enc.states,
            enc.features,
            enc.padding_mask,
            tf.concat([c, h], 1),
            coverage if use_cov else None,
        )
        out = model.attn_output_projection(tf.concat([h, context], 1))
        vocab_dist = tf.nn.softmax(model.output_projection(out), axis=-1)
        p_gen = model.p_gen_layer(context, c, h, x)
        final = model.final_distribution(vocab_dist, attn, p_gen, ext, max_art_oovs)
        if top_k is not None:
            final = Candidates(*tf.math.top_k(final, top_k))
        return final, attn, p_gen[:, 0], {"c": c, "h": h, "coverage": coverage}

    return step


def reference_carry(enc, enc_padding_mask):
    """The original's decoder carry: the reduced state and zero coverage."""
    import tensorflow as tf

    return {"c": enc.c, "h": enc.h, "coverage": tf.zeros(tf.shape(enc_padding_mask))}


def one_at_a_time(model, vocab, hps, original: bool, settings=None):
    """One article at a time with `beam_search_single` (the original's Python search,
    the K beams of one article per call of a compiled step).

    original: True = the original's decode graph (module doc: K encoder copies, W_h h_i
      and the whole final distribution every step, top 2K in the step); False = this
      implementation's step (`model.decode_step`, whole distribution), so that a
      comparison with the batched search measures batching alone.

    Returns decode(batch of one article) -> the chosen hypothesis.
    """
    import tensorflow as tf

    from pointer_generator.search.beam_search import tile_beams
    from pointer_generator.search.settings import SearchSettings
    from tests.reference_search import beam_search_single

    # By default the original's search: beam 4, min 35, hps' max_dec_steps.
    settings = settings or SearchSettings.from_hparams(hps)
    k = settings.beam_size
    step = (
        reference_step(model, hps, features_per_step=True, top_k=2 * k)
        if original
        else model.decode_step
    )
    step_fn = tf.function(step, reduce_retracing=True)
    encode = tf.function(model.encode, reduce_retracing=True)

    def decode(batch: dict):
        ext_k = tile_beams(batch["enc_batch_extend_vocab"], k)
        if original:
            # The original's decode batch holds K copies of the article; row 0's reduced
            # state starts every hypothesis.
            enc = encode(
                tile_beams(batch["enc_batch"], k), tile_beams(batch["enc_padding_mask"], k)
            )
            carry = tile_beams(
                reference_carry(EncoderOutput(*(x[:1] for x in enc)), batch["enc_padding_mask"]), k
            )
        else:
            enc = encode(batch["enc_batch"], batch["enc_padding_mask"])
            carry = tile_beams(model.initial_carry(enc), k)
        return beam_search_single(
            lambda tokens, carry: step_fn(enc, ext_k, batch["max_art_oovs"], tokens, carry),
            carry,
            **settings.search_keywords(vocab.size()),
        )

    return decode
