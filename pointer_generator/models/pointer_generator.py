"""The pointer-generator network (paper section 2; spec section 4) as a Keras model.

Training runs the recurrent decoder in a `tf.while_loop` that carries only what the
recurrence needs (LSTM state, previous context, coverage) and records the per-step
tensors; everything that does not feed back (p_gen, the output projection, the 50k-way
vocabulary softmax, the losses) is computed once for all steps after the loop. With
`hps.fused_recurrence` (the default) the encoder and that loop run as XLA-compiled loops
with hand-written gradients (`layers/fused_encoder.py`, `layers/fused_decoder.py`);
decoding uses XLA for the attention and the final distribution (docs/performance.md).
"""

from __future__ import annotations

import keras
import tensorflow as tf

from pointer_generator.hparams import HParams
from pointer_generator.layers import (
    CoverageAttention,
    FinalDistribution,
    GenerationProbability,
    ReduceState,
    fused_decoder,
    fused_encoder,
    losses,
)
from pointer_generator.layers.initializers import glorot, lstm_uniform, trunc_normal
from pointer_generator.layers.input_feeding import InputFeeding
from pointer_generator.layers.recurrent import keras_cell_step
from pointer_generator.models import pointer_generator_checkpoints as checkpoints
from pointer_generator.models.family import parameter_summary
from pointer_generator.models.model_io import EncoderOutput
from pointer_generator.models.pointer_generator_search import PointerGeneratorSearch


def _cell_weights(cell: keras.layers.LSTMCell):
    """(kernel, recurrent_kernel, bias) of a Keras LSTMCell as tensors."""
    return tuple(tf.convert_to_tensor(w) for w in (cell.kernel, cell.recurrent_kernel, cell.bias))


@keras.saving.register_keras_serializable(package="pointer_generator")
class PointerGeneratorModel(PointerGeneratorSearch, keras.Model):
    """Sequence-to-sequence attention model with optional pointer and coverage.

    Args:
      hps: hyper-parameters (hidden_dim, emb_dim, pointer_gen, coverage, initialisers...).
      vocab_size: number of words including the 4 special tokens (`Vocab.size()`).
    """

    @classmethod
    def from_hparams(cls, hps: HParams, vocab_size: int) -> PointerGeneratorModel:
        return cls(hps, vocab_size)

    def __init__(self, hps: HParams, vocab_size: int, **kwargs):
        super().__init__(**kwargs)
        self.hps = hps
        self.vocab_size = vocab_size
        hidden, emb = hps.hidden_dim, hps.emb_dim
        uni = lstm_uniform(hps.rand_unif_init_mag)
        tn = trunc_normal(hps.trunc_norm_init_std)

        # One embedding shared by encoder and decoder inputs (spec 4.3).
        self.embedding = keras.layers.Embedding(
            vocab_size, emb, embeddings_initializer=tn, name="embedding"
        )

        def lstm(name, go_backwards=False):
            return keras.layers.LSTM(
                hidden,
                return_sequences=True,
                return_state=True,
                kernel_initializer=uni,
                recurrent_initializer=uni,
                bias_initializer="zeros",
                unit_forget_bias=True,
                go_backwards=go_backwards,
                name=name,
            )

        self.encoder = keras.layers.Bidirectional(
            lstm("encoder_fw"),
            backward_layer=lstm("encoder_bw", go_backwards=True),
            merge_mode="concat",
            name="encoder",
        )
        self.reduce_state = ReduceState(hidden, hps.trunc_norm_init_std, name="reduce_final_st")
        self.attention = CoverageAttention(
            2 * hidden,
            2 * hidden,
            hps.attention_dim,
            use_coverage=hps.coverage,
            safe=hps.safe_numerics,
            name="attention",
        )
        # x_t = Linear([y_t; h*_{t-1}]) (input feeding), 640 -> 128 at the paper's sizes.
        self.input_merge = InputFeeding(
            emb, emb, kernel_initializer=glorot(), bias_initializer="zeros", name="input_merge"
        )
        self.decoder_cell = keras.layers.LSTMCell(
            hidden,
            kernel_initializer=uni,
            recurrent_initializer=uni,
            bias_initializer="zeros",
            unit_forget_bias=True,
            name="decoder_cell",
        )
        if hps.pointer_gen:
            self.p_gen_layer = GenerationProbability(name="calculate_pgen")
        # o_t = Linear([s_t; h*_t]) then logits = o_t w + v (no nonlinearity between).
        self.attn_output_projection = keras.layers.Dense(
            hidden,
            kernel_initializer=glorot(),
            bias_initializer="zeros",
            name="attn_output_projection",
        )
        self.output_projection = keras.layers.Dense(
            vocab_size, kernel_initializer=tn, bias_initializer=tn, name="output_projection"
        )
        self.final_distribution = FinalDistribution(name="final_distribution")

    # ------------------------------------------------------------------ construction
    def build_weights(self):
        """Create every weight by running a tiny dummy batch (Keras builds lazily)."""
        hidden = self.hps.hidden_dim
        self.embedding.build((None, None))
        self.encoder.build((None, None, self.hps.emb_dim))
        self.reduce_state.build()
        self.attention.build()
        self.input_merge.build((None, self.hps.emb_dim + 2 * hidden))
        self.decoder_cell.build((None, self.hps.emb_dim))
        if self.hps.pointer_gen:
            self.p_gen_layer.build((None, 4 * hidden + self.hps.emb_dim))
        self.attn_output_projection.build((None, 3 * hidden))
        self.output_projection.build((None, hidden))
        self.built = True
        return self

    def build(self, input_shape=None):
        self.build_weights()

    def parameter_summary(self) -> str:
        kind = "pointer-generator" if self.hps.pointer_gen else "baseline"
        if self.hps.coverage:
            kind += " + coverage"
        return parameter_summary(self, kind)

    # ------------------------------------------------------------------ encoder
    def encode(self, enc_batch, enc_padding_mask) -> EncoderOutput:
        """Masked bidirectional LSTM encoder and the reduce-state layer (spec 4.4-4.5).

        enc_batch: [batch, enc_len] int32; enc_padding_mask: [batch, enc_len] float.
        """
        emb = self.embedding(enc_batch)
        if self.hps.fused_recurrence:
            # Same weights and values as the Keras layer; one loop for both directions
            # with a hand-written gradient (fused_encoder.py). Outputs are zero past each end.
            states, h_fw, c_fw, h_bw, c_bw = fused_encoder.bidirectional_lstm(
                emb,
                tf.cast(enc_padding_mask, emb.dtype),
                _cell_weights(self.encoder.forward_layer.cell),
                _cell_weights(self.encoder.backward_layer.cell),
            )
        else:
            outputs, h_fw, c_fw, h_bw, c_bw = self.encoder(emb, mask=enc_padding_mask > 0)
            # TF1's dynamic RNN emits zeros past each length; Keras repeats the last output.
            states = outputs * enc_padding_mask[:, :, None]
        c0, h0 = self.reduce_state(c_fw, c_bw, h_fw, h_bw)
        features = self.attention.encoder_features(states)
        return EncoderOutput(states, features, enc_padding_mask, c0, h0)

    # ------------------------------------------------------------------ the decoder step
    def _step(self, x, h, c, coverage, enc: EncoderOutput, attend):
        """One step of the attention decoder after its input x_t (spec 4.6, 4.12): the
        LSTM cell, then the attention of the new state [c_t; s_t] over the article (eq.
        1-3; eq. 11 with the coverage vector, None without). The one definition that
        training's loop (`attend` = the attention layer itself) and decoding
        (`attend` = its `beam_attention`, K beams per article) run; the fused training
        loop is its restricted form. Returns (h, c, context, attn)."""
        h, c = keras_cell_step(self.decoder_cell, x, h, c)
        context, attn = attend(
            enc.states, enc.features, enc.padding_mask, tf.concat([c, h], 1), coverage
        )
        return h, c, context, attn

    # ------------------------------------------------------------------ training decoder
    def _decoder_loop(self, enc: EncoderOutput, dec_batch):
        """Run the attention decoder over all decoder steps (spec 4.6, training mode).

        Returns a dict of time-major-stacked tensors transposed to batch-major:
          x [batch, dec_len, emb], c/h [batch, dec_len, hidden],
          context [batch, dec_len, 2*hidden], attn [batch, dec_len, enc_len].
        """
        hidden = self.hps.hidden_dim
        emb = self.embedding(dec_batch)  # [batch, dec_len, emb_dim]
        emb_t = tf.transpose(emb, [1, 0, 2])
        dec_len = tf.shape(dec_batch)[1]
        batch = tf.shape(dec_batch)[0]
        enc_len = tf.shape(enc.states)[1]
        use_cov = self.hps.coverage
        # The embedding half of the input merge does not depend on the recurrence.
        y_part = self.input_merge.embedding_term(emb_t)
        ctx_w = self.input_merge.context_kernel()
        if self.hps.fused_recurrence:
            # `_step`, fused over all steps with a hand-written gradient (tested against
            # the loop below, tests/test_recurrent.py).
            steps = fused_decoder.attention_decoder(
                y_part,
                enc.states,
                enc.features,
                enc.padding_mask,
                enc.h,
                enc.c,
                ctx_w,
                _cell_weights(self.decoder_cell),
                self.attention.decoder_weights(),
                use_coverage=use_cov,
                safe=self.hps.safe_numerics,
            )
            names = ("x", "c", "h", "context", "attn")
            return {n: tf.transpose(v, [1, 0, 2]) for n, v in zip(names, steps, strict=True)}

        def body(t, h, c, context, coverage, tas):
            x = y_part[t] + tf.matmul(context, ctx_w)
            h, c, context, attn = self._step(
                x, h, c, coverage if use_cov else None, enc, self.attention
            )
            coverage = coverage + attn
            tas = tuple(ta.write(t, v) for ta, v in zip(tas, (x, c, h, context, attn), strict=True))
            return t + 1, h, c, context, coverage, tas

        dtype = enc.states.dtype
        tas = tuple(tf.TensorArray(dtype, size=dec_len) for _ in range(5))
        init = (
            tf.constant(0),
            enc.h,
            enc.c,
            tf.zeros([batch, 2 * hidden], dtype),
            tf.zeros([batch, enc_len], dtype),
            tas,
        )
        _, _, _, _, _, tas = tf.while_loop(
            lambda t, *_: t < dec_len, body, init, maximum_iterations=dec_len
        )
        names = ("x", "c", "h", "context", "attn")
        return {n: tf.transpose(ta.stack(), [1, 0, 2]) for n, ta in zip(names, tas, strict=True)}

    def call(self, batch, training=False):
        """Forward pass and losses for a training/eval batch.

        Args:
          batch: dict with the MODEL_INPUT_KEYS tensors of the input pipeline.
        Returns:
          dict: `loss` (NLL, scalar), `coverage_loss` (scalar, 0 without coverage),
          `total_loss` (what training minimises), `p_gen_mean` (over real decoder steps),
          `attn_dists` [batch, dec_len, enc_len], `p_gens` [batch, dec_len],
          `vocab_logits` [batch, dec_len, vocab], `step_nll` [batch, dec_len].
        """
        hps = self.hps
        enc = self.encode(batch["enc_batch"], batch["enc_padding_mask"])
        steps = self._decoder_loop(enc, batch["dec_batch"])
        dec_mask = batch["dec_padding_mask"]
        targets = batch["target_batch"]
        out = self.attn_output_projection(tf.concat([steps["h"], steps["context"]], -1))
        vocab_logits, gold_vocab = self.vocab_logits_and_gold(out, targets)
        if hps.pointer_gen:
            p_gen_logit = self.p_gen_layer.logit(
                steps["context"], steps["c"], steps["h"], steps["x"]
            )[..., 0]
            loss, step_nll = losses.pointer_nll(
                gold_vocab,
                p_gen_logit,
                steps["attn"],
                batch["enc_batch_extend_vocab"],
                targets,
                dec_mask,
                safe=hps.safe_numerics,
            )
            p_gens = tf.sigmoid(p_gen_logit)
        else:
            loss, step_nll = losses.baseline_nll(gold_vocab, dec_mask)
            p_gens = tf.ones_like(dec_mask)
        result = {
            "loss": loss,
            "attn_dists": steps["attn"],
            "p_gens": p_gens,
            "vocab_logits": vocab_logits,
            "step_nll": step_nll,
        }
        if hps.coverage:
            cov_steps = losses.coverage_step_losses(steps["attn"])
            result["coverage_loss"] = losses.mask_and_avg(cov_steps, dec_mask, hps.safe_numerics)
            result["total_loss"] = losses.with_coverage_loss(
                loss, result["coverage_loss"], hps.cov_loss_wt
            )
        else:
            result["coverage_loss"] = tf.zeros_like(loss)
            result["total_loss"] = loss
        result["p_gen_mean"] = tf.reduce_sum(p_gens * dec_mask) / tf.maximum(
            tf.reduce_sum(dec_mask), 1.0
        )
        return result

    def final_distributions(self, batch, outputs):
        """Full extended-vocab distributions of a training forward pass (for tests/analysis).

        Returns [batch, dec_len, vocab + max_art_oovs] (pointer) or [batch, dec_len, vocab].
        """
        vocab_dists = tf.nn.softmax(outputs["vocab_logits"], axis=-1)
        if not self.hps.pointer_gen:
            return vocab_dists
        b = tf.shape(vocab_dists)[0]
        t = tf.shape(vocab_dists)[1]
        flat = lambda x: tf.reshape(x, tf.concat([[b * t], tf.shape(x)[2:]], 0))  # noqa: E731
        ext = tf.repeat(batch["enc_batch_extend_vocab"], t, axis=0)
        final = self.final_distribution(
            flat(vocab_dists),
            flat(outputs["attn_dists"]),
            tf.reshape(outputs["p_gens"], [-1, 1]),
            ext,
            batch["max_art_oovs"],
        )
        return tf.reshape(final, [b, t, -1])

    # ------------------------------------------------------------------ decoding
    def initial_carry(self, enc: EncoderOutput) -> dict:
        """Decoder carry at the first decode step: LSTM state, previous context, coverage.

        All [batch, ...]: c, h [batch, hidden], context [batch, 2*hidden], coverage
        [batch, enc_len] (zeros). The context is zeros with "train_consistent"; with
        "original" it is the attention context of the initial state s_0 (and, with
        coverage, `attn` [batch, enc_len] is that attention; see `decode_step`).
        """
        batch = tf.shape(enc.states)[0]
        carry = {
            "c": enc.c,
            "h": enc.h,
            "context": tf.zeros([batch, 2 * self.hps.hidden_dim], enc.states.dtype),
            "coverage": tf.zeros(tf.shape(enc.padding_mask), enc.states.dtype),
        }
        if self.hps.decode_attention == "original":
            # The attention of the current state, which the original recomputes at the
            # start of the next step; carried instead (see `decode_step`).
            context, attn = self.attention.beam_attention(
                enc.states,
                enc.features,
                enc.padding_mask,
                tf.concat([enc.c, enc.h], 1),
                carry["coverage"] if self.hps.coverage else None,
            )
            carry["context"] = context
            if self.hps.coverage:
                carry["attn"] = attn
        return carry

    def vocab_logits(self, out):
        """Vocabulary scores (eq. 4 before the softmax): out [..., hidden] -> [..., vocab]
        float32. With `hps.mixed_precision` the product takes bfloat16 inputs (the float32
        variables are cast) and its result is cast back before the bias is added."""
        if not self.hps.mixed_precision:
            return self.output_projection(out)
        kernel = tf.cast(self.output_projection.kernel, tf.bfloat16)
        # A 2-D matmul: einsum's gradient over "...h" would broadcast [..., vocab, hidden].
        flat = tf.reshape(tf.cast(out, tf.bfloat16), [-1, tf.shape(out)[-1]])
        logits = tf.reshape(
            tf.matmul(flat, kernel), tf.concat([tf.shape(out)[:-1], [tf.shape(kernel)[1]]], 0)
        )
        return tf.cast(logits, tf.float32) + self.output_projection.bias

    def vocab_logits_and_gold(self, out, targets):
        """(vocabulary logits [..., vocab], log P_vocab(targets) [...]) for training:
        out [batch, dec_len, hidden], targets [batch, dec_len] extended ids (-1e30 for
        article OOVs). With `hps.fused_recurrence` the log-probabilities have a
        hand-written gradient (`losses.fused_gold_log_prob`), else log-softmax and
        gather, autodiff'd.
        """
        logits = self.vocab_logits(out)
        if self.hps.fused_recurrence:
            return logits, losses.fused_gold_log_prob(
                logits,
                out,
                self.output_projection.kernel,
                self.output_projection.bias,
                targets,
                tf.bfloat16 if self.hps.mixed_precision else None,
            )
        return logits, losses.gold_vocab_log_prob(tf.nn.log_softmax(logits, axis=-1), targets)

    # ------------------------------------------------------------------ the family contract
    # The search step lives in pointer_generator_search.py (`PointerGeneratorSearch`);
    # what a checkpoint must hold, in pointer_generator_checkpoints.py.
    def checkpoint_mismatches(self, shapes: dict) -> list[str]:
        """What in this model's flags disagrees with a checkpoint ({key: shape}) of this
        implementation, one phrase each (models/family.py)."""
        return checkpoints.mismatches(self.hps, self.vocab_size, shapes)

    @classmethod
    def implied_settings(cls, shapes: dict) -> dict | None:
        """The flags a checkpoint of this family implies (`checkpoints.implied_settings`)."""
        return checkpoints.implied_settings(shapes)

    @classmethod
    def embedding_key(cls, shapes: dict) -> str | None:
        """The checkpoint key of the shared embedding matrix (the projector's)."""
        return checkpoints.embedding_key(shapes)

    def get_config(self):
        import dataclasses

        return {
            "hps": dataclasses.asdict(self.hps),
            "vocab_size": self.vocab_size,
            "name": self.name,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        hps = HParams(**config.pop("hps"))
        return cls(hps, **config)
