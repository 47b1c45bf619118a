"""The pointer-generator's search step (spec 4.12) and its part of the family contract
(`search_start`, models/family.py): a mixin of `PointerGeneratorModel`, which provides the
layers (`embedding`, `input_merge`, `attention`, `attn_output_projection`,
`p_gen_layer`, `output_projection`), `encode`, `_step`, `initial_carry` and
`vocab_logits`."""

from __future__ import annotations

import tensorflow as tf

from pointer_generator.layers.final_distribution import decode_final_distribution
from pointer_generator.models import final_candidates
from pointer_generator.models.family import SearchInputs, SearchStart, tile_beams
from pointer_generator.models.model_io import EncoderOutput


class PointerGeneratorSearch:
    """Beam-search steps of the pointer-generator (`decode_step`, `search_start`)."""

    def candidate_projection(self) -> final_candidates.VocabProjection:
        """The output projection in the pieces `final_candidates` computes it in."""
        return final_candidates.vocab_projection(
            self.output_projection.kernel,
            self.output_projection.bias,
            compute_dtype=tf.bfloat16 if self.hps.mixed_precision else tf.float32,
        )

    def candidate_setup(
        self, enc_batch_extend_vocab, enc_padding_mask, beams: int
    ) -> final_candidates.CandidateSetup:
        """What `decode_step(candidates=...)` needs for a batch of B articles decoded
        with `beams` rows each (enc tensors [B, enc_len])."""
        words = (
            final_candidates.article_words(enc_batch_extend_vocab, enc_padding_mask, beams)
            if self.hps.pointer_gen
            else None
        )
        return final_candidates.CandidateSetup(
            self.candidate_projection(), words, final_candidates.candidate_count(beams)
        )

    def decode_step(
        self,
        enc: EncoderOutput,
        enc_batch_extend_vocab,
        max_art_oovs,
        tokens,
        carry: dict,
        candidates: final_candidates.CandidateSetup | None = None,
    ):
        """One decoder step for beam search (spec 4.12).

        With `hps.decode_attention == "original"` it reproduces the TF1 decode graph
        (`initial_state_attention=True`): the attention is first recomputed from the
        previous state and coverage to get the context fed into the input merge, and that
        attention is added to the coverage before the step's own attention. (That
        recomputation has the inputs of the previous step's own attention, so its result
        is carried in `carry` rather than computed twice: same values, half the work.)
        With "train_consistent" it carries the previous context and coverage exactly as
        the training loop does.

        Args:
          enc: encoder output with `batch` rows, or with `batch / K` rows for K beams per
            article (row b*K + k of the decoder tensors is beam k of article b): the
            attention then reads each article's encoder tensors once for all its beams.
          enc_batch_extend_vocab: [batch, enc_len] int32 (one row per decoder row).
          max_art_oovs: int32 scalar.
          tokens: [batch] int32 previous tokens (all < vocab size).
          carry: dict from `initial_carry` or a previous step.
          candidates: from `candidate_setup`: return `top_k.Candidates` (the entries
            that can be in the distribution's top 2K, see final_candidates.py) instead of
            the whole distribution; None = the whole distribution, as the original.
        Returns:
          (final_dist [batch, vocab(+oovs)] or Candidates, attn [batch, enc_len],
          p_gen [batch], carry).
        """
        use_cov = self.hps.coverage
        original = self.hps.decode_attention == "original"
        c, h, coverage = carry["c"], carry["h"], carry["coverage"]
        prev_context = carry["context"]
        if original and use_cov:
            # The original recomputes the attention of the previous state here; its inputs
            # (that state, the coverage) are those of the previous step's own attention,
            # so the carry holds the result instead (`initial_carry` for the first step).
            coverage = coverage + carry["attn"]
        x = self.input_merge.merge(self.embedding(tokens), prev_context)
        h, c, context, attn = self._step(
            x, h, c, coverage if use_cov else None, enc, self.attention.beam_attention
        )
        if not original and use_cov:
            coverage = coverage + attn
        out = self.attn_output_projection(tf.concat([h, context], 1))
        if candidates is not None:
            p_gen = self.p_gen_layer(context, c, h, x) if self.hps.pointer_gen else None
            final = final_candidates.final_candidates(out, p_gen, attn, candidates)
            p_gen = p_gen[:, 0] if p_gen is not None else tf.ones_like(out[:, 0])
        elif self.hps.pointer_gen:
            logits = self.vocab_logits(out)
            p_gen = self.p_gen_layer(context, c, h, x)  # [batch, 1]
            final = decode_final_distribution(
                logits, attn, p_gen, enc_batch_extend_vocab, max_art_oovs
            )
            p_gen = p_gen[:, 0]
        else:
            final = tf.nn.softmax(self.vocab_logits(out), axis=-1)
            p_gen = tf.ones_like(final[:, 0])
        new_carry = {"c": c, "h": h, "context": context, "coverage": coverage}
        if original and use_cov:
            new_carry["attn"] = attn
        return final, attn, p_gen, new_carry

    def search_start(
        self, inputs: SearchInputs, beam_size: int, full_final_dist: bool = False
    ) -> SearchStart:
        """The batched search over `decode_step` (models/family.py): the encoder runs
        once per article; its tensors stay one row per article (the attention reads them
        once for all K beams) and the small per-row tensors are tiled to the B*K rows in
        each step. Unless `full_final_dist`, each step computes only the entries of the
        final distribution that can be in its top 2K (final_candidates.py)."""
        k = beam_size
        enc = self.encode(inputs.enc_batch, inputs.enc_padding_mask)
        carry = tile_beams(self.initial_carry(enc), k)
        articles = {
            "states": enc.states,
            "features": enc.features,
            "mask": enc.padding_mask,
            "ext": inputs.enc_batch_extend_vocab,
        }
        projection = None if full_final_dist else self.candidate_projection()
        if projection is not None and self.hps.pointer_gen:
            articles["words"] = final_candidates.article_index(
                inputs.enc_batch_extend_vocab, inputs.enc_padding_mask
            )
        max_art_oovs = inputs.max_art_oovs

        def step(tokens, carry, art):
            art_enc = EncoderOutput(art["states"], art["features"], art["mask"], None, None)
            setup = None
            if projection is not None:
                words = (
                    final_candidates.tile_article_words(art["words"], k)
                    if self.hps.pointer_gen
                    else None
                )
                setup = final_candidates.CandidateSetup(
                    projection, words, final_candidates.candidate_count(k)
                )
            ext = None if setup is not None else tile_beams(art["ext"], k)
            return self.decode_step(art_enc, ext, max_art_oovs, tokens, carry, setup)

        return SearchStart(step, carry, articles)
