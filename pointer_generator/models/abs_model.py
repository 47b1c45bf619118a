"""ABS (Rush, Chopra & Weston 2015): a feed-forward language model over the last C
summary words plus an encoder of the input sentence (spec abs-ras.md §2).

    log p(y_{i+1} | x, y_c) = log_softmax(V tanh(U [E y_c]) + W enc(x, y_c))

`encoder` picks enc1 (bag of words), enc2 (convolutional) or enc3 (attention, the ABS
model). One vocabulary for input and summary (the project's `Vocab`; NAMAS builds two,
which the config can grow into); the window starts as C copies of [START] and the
summary ends with [STOP], a training target like every word (NAMAS's implicit `</s>`).

The model reads the input pipeline's batches made with `pointer_gen=False` (article
OOVs are [UNK]): `enc_batch`, `enc_padding_mask`, `dec_batch` ([START] + summary),
`target_batch` (summary + [STOP]) and `dec_padding_mask`. `decode_step` is a step
function for `search.beam_search.batched_beam_search`.
"""

from __future__ import annotations

import dataclasses

import keras
import tensorflow as tf

from pointer_generator.data.vocab import START_ID
from pointer_generator.layers.abs_layers import (
    AttentionEncoder,
    BagOfWordsEncoder,
    ConvEncoder,
    NNLMHidden,
)
from pointer_generator.layers.log_softmax_output import LogSoftmaxOutput
from pointer_generator.models.sentence_family import ENCODERS
from pointer_generator.models.sentence_model import SentenceSummarizer

CONV_KERNEL_KEY = "model/encoder/q1/_kernel/.ATTRIBUTES/VARIABLE_VALUE"


@dataclasses.dataclass(frozen=True)
class ABSConfig:
    """ABS's sizes and switches (paper values in spec §2.8; [R] = recalled, unverified).

    window: C, the summary words the language model sees (5 [R]).
    emb_dim: D, the E and G embeddings (200 [R]). hidden_dim: H, the language model's
    hidden layer and the encoder's size (400 [R]). smoothing: Q (2 [R]);
    smoothing_divisor: "Q" as printed or "2Q+1". conv_layers: L (3 [R]).
    namas: the official code's departures (biases, learned smoothing, extra linear
    layers; spec §2.9) instead of the paper's equations.
    init: "torch", the weights as NAMAS drew them (Torch's defaults; layers/torch_init.py),
    or "keras" (Keras' defaults); init_seed: the seed of the "torch" draw.
    """

    encoder: str = "attention"
    window: int = 5  # the paper configuration ("abs_paper") is the default
    emb_dim: int = 200
    hidden_dim: int = 400
    smoothing: int = 2
    smoothing_divisor: str = "Q"
    conv_layers: int = 3
    namas: bool = False
    init: str = "torch"
    init_seed: int = 111

    def __post_init__(self):
        if self.encoder not in ENCODERS:
            raise ValueError(f"encoder must be one of {', '.join(ENCODERS)}, got {self.encoder!r}")


def context_windows(dec_batch, window: int):
    """[B, T, C]: for each decoder step t the last C summary tokens up to y_t, where
    dec_batch[:, t] = y_t ([START] at t = 0) and positions before the start are [START]."""
    start = tf.fill([tf.shape(dec_batch)[0], window - 1], tf.constant(START_ID, dec_batch.dtype))
    padded = tf.concat([start, dec_batch], axis=1)
    return tf.signal.frame(padded, window, 1, axis=1)


@keras.saving.register_keras_serializable(package="pointer_generator")
class ABSModel(SentenceSummarizer):
    """The ABS family: three embeddings (E for the language model, G for the attention
    query, F for the input), the NNLM hidden layer, one encoder, the output layer."""

    CONFIG = ABSConfig
    FAMILY = "abs"
    EMBEDDING = ("model/e/_embeddings/.ATTRIBUTES/VARIABLE_VALUE", "emb_dim")

    @classmethod
    def from_hparams(cls, hps, vocab_size: int) -> ABSModel:
        """ABS as the flags give it: hidden_dim is H, emb_dim is D; its own settings are
        its family's options (models/sentence_family.py), defaults filled."""
        from pointer_generator.models.sentence_family import ABS

        own = ABS.config(hps)
        config = ABSConfig(
            encoder=own.abs_encoder,
            window=own.context_window,
            emb_dim=hps.emb_dim,
            hidden_dim=hps.hidden_dim,
            smoothing=own.smoothing_window,
            namas=own.abs_namas,
            init=own.family_init,
            init_seed=hps.seed,
        )
        return cls(config, vocab_size)

    def embedding_width(self) -> int:
        return self.config.emb_dim

    def checkpoint_mismatches(self, shapes: dict) -> list[str]:
        problems = super().checkpoint_mismatches(shapes)
        if (
            self.config.encoder == "conv"
            and self.EMBEDDING[0] in shapes
            and CONV_KERNEL_KEY not in shapes
        ):
            # Before the fix of issue 29 the convolutions' kernels were not saved.
            problems.append(
                "it holds no convolutional encoder (--abs_encoder=conv checkpoints written "
                "before this version lack it): train the model again"
            )
        return problems

    def kind(self) -> str:
        return f"ABS ({self.config.encoder} encoder)"

    def __init__(self, config: ABSConfig, vocab_size: int, **kwargs):
        super().__init__(config, vocab_size, **kwargs)
        c = config
        self.e = keras.layers.Embedding(vocab_size, c.emb_dim, name="E")
        self.f = keras.layers.Embedding(vocab_size, c.hidden_dim, name="F")
        self.g = (
            keras.layers.Embedding(vocab_size, c.emb_dim, name="G")
            if c.encoder == "attention"
            else None
        )
        self.nnlm = NNLMHidden(c.hidden_dim, use_bias=c.namas, name="nnlm")
        if c.encoder == "bow":
            self.encoder = BagOfWordsEncoder(extra_linear=c.namas, name="encoder")
        elif c.encoder == "conv":
            self.encoder = ConvEncoder(c.conv_layers, c.smoothing, name="encoder")
        else:
            self.encoder = AttentionEncoder(
                c.smoothing,
                c.smoothing_divisor,
                p_bias=c.namas,
                learned_smoothing=c.namas,
                extra_linear=c.namas,
                name="encoder",
            )
        self.out = LogSoftmaxOutput(vocab_size, ("V", "W"), use_bias=c.namas, name="output")

    def _attend(self, embedded, enc_padding_mask, windows):
        """enc3 for T windows per input: embedded [B, M, H] (F x), windows [B, T, C] ->
        (enc [B, T, H], attention [B, T, M])."""
        return self.encoder(embedded, enc_padding_mask, self.g(windows))

    def output_inputs(self, enc_batch, enc_padding_mask, dec_batch):
        """The output layer's inputs at every decoder step: (h [B, T, H], the NNLM's hidden
        layer, enc [B, T, H], the encoder's output); log p(y_{t+1} | x, y_c) =
        self.out(h, enc) (`log_probs`, [B, T, V])."""
        windows = context_windows(dec_batch, self.config.window)  # [B, T, C]
        b, t = tf.shape(windows)[0], tf.shape(windows)[1]
        flat = tf.reshape(windows, [b * t, self.config.window])
        h = self.nnlm(self.e(flat))
        x = self.f(enc_batch)
        if self.g is None:
            enc = tf.repeat(self.encoder(x, enc_padding_mask), t, axis=0)
        else:
            enc, _ = self._attend(x, enc_padding_mask, windows)
        width = self.config.hidden_dim
        return tf.reshape(h, [b, t, width]), tf.reshape(enc, [b, t, width])

    # ------------------------------------------------------------------ decoding
    def search_articles(self, enc_batch, enc_padding_mask) -> dict:
        """What every search step reads of the articles (one row per article). enc1 and
        enc2 ignore the summary so far: their encoding is computed here, once."""
        mask = tf.cast(enc_padding_mask, tf.float32)
        embedded = self.f(enc_batch)
        if self.g is None:
            return {"mask": mask, "encoded": self.encoder(embedded, mask)}
        return {"mask": mask, "embedded": embedded}

    def initial_carry(self, batch_size):
        """The window of a new summary: C copies of [START] (the search feeds [START] as
        the first token, which shifts in as the newest)."""
        return {"window": tf.fill([batch_size, self.config.window], START_ID)}

    def decode_step(self, tokens, carry, articles, beam_size: int = 1):
        """One search step for `search.beam_search.batched_beam_search`: (probs [N, V],
        attn [N, M] (zeros for enc1/enc2), p_gen [N] (ones), new carry), N = S * K rows.

        tokens [N]: each hypothesis' latest token; carry {"window": [N, C]};
        articles: `search_articles` ({"mask": [S, M]} and "embedded" [S, M, H] (F x, enc3)
        or "encoded" [S, H] (enc1/enc2)), one row per article; hypothesis k of article s
        is row s*K + k.
        """
        window = tf.concat([carry["window"][:, 1:], tokens[:, None]], axis=1)
        h = self.nnlm(self.e(window))
        if "encoded" in articles:
            enc = tf.repeat(articles["encoded"], beam_size, axis=0)
            attn = tf.repeat(tf.zeros_like(articles["mask"]), beam_size, axis=0)
        else:
            # Hypotheses of one article as T = beam_size queries of its embeddings.
            per_article = tf.reshape(window, [-1, beam_size, self.config.window])
            enc, attn = self._attend(articles["embedded"], articles["mask"], per_article)
            enc = tf.reshape(enc, [-1, tf.shape(enc)[-1]])
            attn = tf.reshape(attn, [-1, tf.shape(attn)[-1]])
        log_p = self.out(h, enc)
        return tf.exp(log_p), attn, tf.ones_like(log_p[:, 0]), {"window": window}
