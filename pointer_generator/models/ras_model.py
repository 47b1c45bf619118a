"""RAS-Elman and RAS-LSTM (Chopra, Auli & Rush 2016; spec abs-ras.md §3): a recurrent
decoder that attends, with its previous state, over convolutional keys of the input.

    z = conv_q(x + l)                      keys: words plus absolute positions
    α_t ∝ exp(z_j · h_{t-1}),  c_t = Σ_j α_tj x_j   (plain word embeddings)
    h_t = Elman(y_{t-1}, h_{t-1}, c_t)  or  the printed LSTM
    log P_t = log_softmax(W4 h_t + W5 c_t)

d (the embedding size) equals the decoder state size: the attention is a dot product.
One vocabulary for input and summary (as ABS here). Batches as for ABS (`pointer_gen=False`
pipeline); `decode_step` is a step function for the batched beam search, over the
`search_articles` of a batch (keys computed once per article).
"""

from __future__ import annotations

import dataclasses

import keras
import tensorflow as tf

from pointer_generator.layers.log_softmax_output import LogSoftmaxOutput
from pointer_generator.layers.ras_layers import ElmanCell, RASEncoder, RASLSTMCell, ras_attention
from pointer_generator.models.sentence_family import ATTENTIONS, DECODERS, INITIAL_STATES
from pointer_generator.models.sentence_model import SentenceSummarizer

H0_KEY = "model/h0/.ATTRIBUTES/VARIABLE_VALUE"


@dataclasses.dataclass(frozen=True)
class RASConfig:
    """RAS's sizes (paper: d = 512; q = 5 is recalled, unverified [R]).

    decoder: "elman" (sigmoid recurrence) or "lstm" (the printed cell; `standard_lstm`
    puts the tanh back). width: q, the convolution width (odd). max_positions: how many
    absolute positions have an embedding (inputs must not be longer). init: "torch"
    (Torch's defaults, as the paper's Torch code; layers/torch_init.py) or "keras";
    init_seed: the seed of the "torch" draw. initial_state: h_0 (and m_0) "zeros" (the
    paper is silent; spec §3.4) or "learned" vectors, started at zero: with h_0 = 0 the
    first step's attention scores z_j · h_0 are all 0, so the first summary word sees
    only the mean of the input's embeddings (docs/families.md). attention: "cosine"
    (attention_scale · cos(z_j, h_{t-1}): bounded scores; not the paper's, the default)
    or "dot" (the paper's z_j · h_{t-1}, which saturates onto one input position early
    in training; docs/families.md).
    """

    decoder: str = "elman"
    dim: int = 512
    width: int = 5
    max_positions: int = 100
    standard_lstm: bool = False
    init: str = "torch"
    init_seed: int = 111
    initial_state: str = "zeros"
    attention: str = "cosine"
    attention_scale: float = 10.0

    def __post_init__(self):
        if self.decoder not in DECODERS:
            raise ValueError(f"decoder must be one of {', '.join(DECODERS)}, got {self.decoder!r}")
        if self.attention not in ATTENTIONS:
            raise ValueError(
                f"attention must be one of {', '.join(ATTENTIONS)}, got {self.attention!r}"
            )
        if not self.attention_scale > 0:
            raise ValueError(f"attention_scale must be > 0, got {self.attention_scale}")
        if self.initial_state not in INITIAL_STATES:
            raise ValueError(
                f"initial_state must be one of {', '.join(INITIAL_STATES)}, "
                f"got {self.initial_state!r}"
            )


@keras.saving.register_keras_serializable(package="pointer_generator")
class RASModel(SentenceSummarizer):
    """The RAS family: input and output word embeddings, the convolutional encoder, an
    Elman or LSTM decoder cell, the output layer."""

    CONFIG = RASConfig
    FAMILY = "ras_elman"  # (or ras_lstm: see `family`)
    EMBEDDING = ("model/y_emb/_embeddings/.ATTRIBUTES/VARIABLE_VALUE", "hidden_dim")

    @classmethod
    def from_hparams(cls, hps, vocab_size: int) -> RASModel:
        """RAS as the flags give it: hidden_dim is d (embeddings and state); its own
        settings are its family's options (models/sentence_family.py), defaults filled."""
        from pointer_generator.models import family_registry

        family = family_registry.of(hps)
        own = family.config(hps)
        config = RASConfig(
            decoder=family.decoder,
            dim=hps.hidden_dim,
            width=own.conv_width,
            max_positions=own.max_positions,
            init=own.family_init,
            init_seed=hps.seed,
            initial_state=own.ras_initial_state,
            attention=own.ras_attention,
            attention_scale=own.ras_attention_scale,
        )
        return cls(config, vocab_size)

    def embedding_width(self) -> int:
        return self.config.dim

    @property
    def family(self) -> str:
        return f"ras_{self.config.decoder}"

    @staticmethod
    def _decoder_of(shapes: dict) -> str:
        lstm = any(k.startswith("model/cell/recurrent_kernel/") for k in shapes)
        return "lstm" if lstm else "elman"

    def checkpoint_mismatches(self, shapes: dict) -> list[str]:
        problems = super().checkpoint_mismatches(shapes)
        found = self._decoder_of(shapes)
        if self.EMBEDDING[0] in shapes and found != self.config.decoder:
            problems.append(f"it is a --model=ras_{found} checkpoint but --model={self.family}")
        state = "learned" if H0_KEY in shapes else "zeros"
        if self.EMBEDDING[0] in shapes and state != self.config.initial_state:
            problems.append(
                f"its initial state is {state} but --ras_initial_state={self.config.initial_state}"
            )
        return problems

    @classmethod
    def implied_settings(cls, shapes: dict) -> dict | None:
        found = super().implied_settings(shapes)
        if found is not None:
            found["model"] = "ras_" + cls._decoder_of(shapes)
            found["ras_initial_state"] = "learned" if H0_KEY in shapes else "zeros"
        return found

    def kind(self) -> str:
        return "RAS-" + {"elman": "Elman", "lstm": "LSTM"}[self.config.decoder]

    def __init__(self, config: RASConfig, vocab_size: int, **kwargs):
        super().__init__(config, vocab_size, **kwargs)
        d = config.dim
        self.x_emb = keras.layers.Embedding(vocab_size, d, name="x")
        self.y_emb = keras.layers.Embedding(vocab_size, d, name="y")
        self.encoder = RASEncoder(config.width, config.max_positions, name="encoder")
        if config.decoder == "elman":
            self.cell = ElmanCell(d, name="elman")
        else:
            self.cell = RASLSTMCell(d, standard=config.standard_lstm, name="lstm")
        self.out = LogSoftmaxOutput(vocab_size, ("W4", "W5"), name="output")
        if config.initial_state == "learned":
            # Started at zero (the "zeros" model's start); Torch init leaves it there.
            self.h0 = self.add_weight(name="h0", shape=(d,), initializer="zeros")
            if self.lstm:
                self.m0 = self.add_weight(name="m0", shape=(d,), initializer="zeros")

    @property
    def lstm(self) -> bool:
        return self.config.decoder == "lstm"

    def search_articles(self, enc_batch, enc_padding_mask) -> dict:
        """What every decoder step reads of the articles: words x, keys z [B, M, d], mask."""
        length = enc_batch.shape[1]
        if length is not None and length > self.config.max_positions:
            raise ValueError(
                f"inputs of {length} tokens are longer than the {self.config.max_positions} "
                "positions RAS has embeddings for (max_positions)"
            )
        x = self.x_emb(enc_batch)
        mask = tf.cast(enc_padding_mask, x.dtype)
        return {"x": x, "z": self.encoder(x, mask), "mask": mask}

    def initial_carry(self, batch_size) -> dict:
        """h_0 (and m_0): zeros (the paper is silent; spec §3.4), or the learned vectors
        (`config.initial_state`) for every row."""
        if self.config.initial_state == "learned":
            h = tf.tile(self.h0[None], [batch_size, 1])
            return {"h": h, "m": tf.tile(self.m0[None], [batch_size, 1])} if self.lstm else {"h": h}
        zeros = tf.zeros([batch_size, self.config.dim])
        return {"h": zeros, "m": zeros} if self.lstm else {"h": zeros}

    def _recur(self, y, carry, art):
        """One decoder step without the output layer: (h_t, c_t, α_t, new carry)."""
        cosine = self.config.attention_scale if self.config.attention == "cosine" else None
        context, alpha = ras_attention(art["z"], art["x"], art["mask"], carry["h"], cosine)
        if self.lstm:
            h, m = self.cell(y, carry["h"], carry["m"], context)
            new = {"h": h, "m": m}
        else:
            h = self.cell(y, carry["h"], context)
            new = {"h": h}
        return h, context, alpha, new

    def output_inputs(self, enc_batch, enc_padding_mask, dec_batch):
        """The output layer's inputs at every decoder step: (h_t [B, T, d], c_t [B, T, d]);
        log P(y_{t+1} | y_1..y_t, x) = self.out(h_t, c_t) (`log_probs`, [B, T, V]).

        The recurrence runs step by step; the output layer then projects the steps' (h_t,
        c_t) at once (`log_probs`, or at the real target words only in `call`): one large
        product instead of T small ones, the same values.
        """
        art = self.search_articles(enc_batch, enc_padding_mask)
        ys = tf.transpose(self.y_emb(dec_batch), [1, 0, 2])  # [T, B, d]
        b, d = tf.shape(dec_batch)[0], self.config.dim

        def body(state, y):
            h, context, _, new = self._recur(y, state[2], art)
            return h, context, new

        first = (tf.zeros([b, d]), tf.zeros([b, d]), self.initial_carry(b))
        hs, contexts, _ = tf.scan(body, ys, initializer=first)  # [T, B, d] each
        return tf.transpose(hs, [1, 0, 2]), tf.transpose(contexts, [1, 0, 2])

    def decode_step(self, tokens, carry, articles, beam_size: int = 1):
        """A step function for `batched_beam_search`: (probs [N, V], α [N, M], p_gen [N]
        (ones), new carry); `articles` from `search_articles`, one row per article,
        tiled here to its `beam_size` hypotheses."""
        art = {k: tf.repeat(v, beam_size, axis=0) for k, v in articles.items()}
        h, context, alpha, new = self._recur(self.y_emb(tokens), carry, art)
        log_p = self.out(h, context)
        return tf.exp(log_p), alpha, tf.ones_like(log_p[:, 0]), new
