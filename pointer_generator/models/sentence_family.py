"""ABS / ABS+ (Rush et al. 2015) and RAS-Elman / RAS-LSTM (Chopra et al. 2016) as model
families (models/family.py), and the choices of their settings. TensorFlow is imported
only when a model is built, so that the command line can ask a family about its settings
before it starts TensorFlow."""

from __future__ import annotations

from pointer_generator.models.family import FamilyOption, ModelFamily

ENCODERS = ("bow", "conv", "attention")  # ABS: enc1, enc2, enc3
DECODERS = ("elman", "lstm")  # RAS
INITIAL_STATES = ("zeros", "learned")  # RAS: h_0 (and m_0)
ATTENTIONS = ("dot", "cosine")  # RAS: the paper's dot product, or scaled cosine
INITS = ("torch", "keras")  # how their weights are drawn (layers/torch_init.SCHEMES)


class SentenceFamily(ModelFamily):
    """What ABS and RAS share as families: no pointer, no coverage, the mean NLL per
    target word (or, with --loss_reduction=sum, RAS's printed objective, the sum), the
    papers' Torch-like Adagrad start."""

    # Adagrad's first accumulator: TF1's 0.1 turns the small gradients of Torch-initialised
    # weights into tiny steps (an element's step is lr * g / sqrt(0.1 + sum g^2), ~0.47 g
    # at first), so on the toy task ABS's bag-of-words encoder read its input 5x less after
    # 1,000 steps (gap 0.08 vs 0.40 nats) and RAS-Elman's loss stayed at 1.76 instead of
    # 0.95. Torch's Adagrad starts at 0; 1e-4 keeps the first step bounded
    # (docs/families.md).
    DEFAULTS = {"adagrad_init_acc": 1e-4}
    reductions = ("mean", "sum")
    # Never generate [UNK] (the papers' search), ABS+'s features and their n-best lists:
    # the search step is a plain distribution over the vocabulary.
    SEARCH_OPTIONS = frozenset({"block_unk", "features", "nbest"})
    search_option_note = ""
    # The pointer-generator's settings, which their models never read.
    unused_settings = (
        "decode_attention",
        "cov_loss_wt",
        "safe_numerics",
        "mixed_precision",
        "rand_unif_init_mag",
        "trunc_norm_init_std",
    )
    # The pointer-generator's fused encoder and decoder loops: given on the command line
    # it would be ignored (tests/helpers.py's tiny configurations set it for every model).
    unused_flags = ("fused_recurrence",)
    options = (
        FamilyOption(
            "family_init",
            "torch",
            "--model=abs|ras_*: draw the weights as the papers' Torch code did (N(0, 1) "
            "lookup tables, U(+-1/sqrt(fan_in)) linear maps; the default), or with Keras' "
            "defaults (U(+-0.05) embeddings, Glorot kernels: the models then learn to "
            "ignore the input).",
            choices=INITS,
        ),
    )

    def defaults(self, values) -> dict:
        return dict(self.DEFAULTS)

    def build(self, hps, vocab_size: int):
        return self.model_class.from_hparams(hps, vocab_size).build_weights()

    def objective(self, hps, means, sums):
        # RAS's printed objective, L = -sum_i sum_t log P: the NLL summed over the batch's
        # target words (the reported loss stays the mean per word).
        return sums["loss"] if hps.loss_reduction == "sum" else means["loss"]

    def implied_settings(self, shapes):
        return self.model_class.implied_settings(shapes)

    def embedding_key(self, shapes):
        return self.model_class.embedding_key(shapes)


class ABSFamily(SentenceFamily):
    name = "abs"
    summary = "abs (Rush et al. 2015; --hidden_dim is its H, --emb_dim its D)"
    options = SentenceFamily.options + (
        FamilyOption(
            "abs_encoder",
            "attention",
            "--model=abs: the encoder (enc1 bag of words, enc2 convolutional, enc3 attention).",
            choices=ENCODERS,
        ),
        FamilyOption(
            "context_window",
            5,
            "--model=abs: C, the summary words its language model sees.",
            low=1,
        ),
        FamilyOption(
            "smoothing_window",
            2,
            "--model=abs: Q, the attention encoder's +-Q smoothing and the convolutional "
            "encoder's width 2Q+1.",
            low=0,
        ),
        FamilyOption(
            "abs_namas",
            False,
            "--model=abs: the official NAMAS code's departures from the paper's equations "
            "(biases, learned smoothing, extra linear layers) instead of the printed forms.",
        ),
    )
    # The convolutional encoder (tanh units, max over time): Adagrad's first steps move
    # every kernel element by about the rate, and the kernels start at U(+-1/sqrt(width *
    # D)), so the safe rate falls as the encoder grows. Too high, its units saturate at
    # +-1 within 10 steps, the same for every input, and stay there (a dead encoder, input
    # gap 0.000): at 0.15 in one seed of two on the toy task (D 64), at 0.05 at the
    # papers' sizes (D 200, the proxy task); at 0.02 in no run tried (docs/families.md).
    ENCODER_DEFAULTS = {"conv": {"lr": 0.02}}

    @property
    def model_class(self):
        from pointer_generator.models.abs_model import ABSModel

        return ABSModel

    def defaults(self, values) -> dict:
        encoder = values.get("abs_encoder", "attention")
        return {**super().defaults(values), **self.ENCODER_DEFAULTS.get(encoder, {})}


class RASFamily(SentenceFamily):
    """RAS with the Elman or the LSTM decoder (`decoder`)."""

    options = SentenceFamily.options + (
        FamilyOption(
            "conv_width", 5, "--model=ras_*: q, the encoder's convolution width (odd).", low=1
        ),
        FamilyOption(
            "max_positions",
            400,
            "--model=ras_*: input positions with a learned embedding (at least --max_enc_steps).",
            low=1,
        ),
        # A weight more or less: older experiments have zeros.
        FamilyOption(
            "ras_initial_state",
            "zeros",
            "--model=ras_*: the decoder's initial state h_0 (and m_0): zeros (the paper is "
            "silent), or learned vectors, so that the first summary word can attend to the "
            "input (with zeros its attention is uniform).",
            choices=INITIAL_STATES,
        ),
        # No weight of its own: only the settings say (`predating`).
        FamilyOption(
            "ras_attention",
            "cosine",
            "--model=ras_*: the attention scores: cosine, --ras_attention_scale times the "
            "cosine of z_j and h_{t-1} (bounded; the default), or dot, the paper's "
            "z_j . h_{t-1}, which saturates onto one input position early in training "
            "(docs/families.md).",
            choices=ATTENTIONS,
        ),
        FamilyOption(
            "ras_attention_scale",
            10.0,
            "--model=ras_* --ras_attention=cosine: s in s * cos(z_j, h_{t-1}).",
            low=0.0,
            open_low=True,
        ),
    )
    # RAS attended with the paper's dot product before --ras_attention existed.
    predating = {"ras_attention": "dot"}

    def __init__(self, decoder: str):
        self.decoder = decoder
        self.name = "ras_" + decoder
        self.summary = f"{self.name} (Chopra et al. 2016; --hidden_dim is its d)"

    @property
    def model_class(self):
        from pointer_generator.models.ras_model import RASModel

        return RASModel


ABS = ABSFamily()
ELMAN = RASFamily("elman")
LSTM = RASFamily("lstm")
