"""All hyper-parameters in one dataclass (built from the flags by `cli/configs.py`).

Field names and defaults are the original release's flags (spec section 1.1); fields
after the marked line are this implementation's additions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from pointer_generator.errors import FlagError

MODES = ("train", "eval", "decode")
DECODE_ATTENTION_MODES = ("original", "train_consistent")
GRAD_NORM_MODES = ("original", "dense")
OPTIMIZERS = ("adagrad", "sgd")
# Learning-rate annealing on validation (SGD): "plateau" divides the rate when the
# validation perplexity is no better than the best so far (the papers' wording);
# "previous" when it is worse than the previous epoch's (what NAMAS's code does).
LR_DECAYS = ("none", "plateau", "previous")
# Fields with a fixed set of values. (A model family's own fields, and `model` itself,
# are its family's to check: `models/family_registry.py`, whose `build_model` checks them.)
_CHOICES = {
    "decode_attention": DECODE_ATTENTION_MODES,
    "grad_norm": GRAD_NORM_MODES,
    "optimizer": OPTIMIZERS,
    "lr_decay": LR_DECAYS,
    "loss_reduction": ("mean", "sum"),
}
# Fields that must be > 0 (the command line checks the same ones, cli/flags.py).
POSITIVE_FIELDS = (
    "hidden_dim",
    "emb_dim",
    "batch_size",
    "max_enc_steps",
    "max_dec_steps",
    "length_buckets",
    "decoder_buckets",
)


@dataclass(frozen=True)
class HParams:
    lr: float = 0.15
    adagrad_init_acc: float = 0.1
    rand_unif_init_mag: float = 0.02
    trunc_norm_init_std: float = 1e-4
    max_grad_norm: float = 2.0
    hidden_dim: int = 256
    emb_dim: int = 128
    batch_size: int = 16
    max_enc_steps: int = 400
    # The summary length training reads (targets are cut to it), and the search's
    # default maximum; the search's own settings are `SearchSettings` (beam_size,
    # min_dec_steps, ...), not hyper-parameters of the model.
    max_dec_steps: int = 100
    vocab_size: int = 50000
    pointer_gen: bool = True
    coverage: bool = False
    cov_loss_wt: float = 1.0
    # ---- additions of this implementation --------------------------------------------
    seed: int = 111
    # How batches are padded (input_pipeline.encoder_width):
    #   None (default): each batch's encoder length up to one of `length_buckets` fixed
    #     lengths, so the XLA-compiled loops compile a few times, not once per new length;
    #   True: every dimension fixed (max_enc_steps, at most `max_oovs` article OOVs; XLA/TPU);
    #   False: each batch to its own longest article, as the original Batcher did.
    static_shapes: bool | None = None
    length_buckets: int = 4
    # Decoder padding (input_pipeline.decoder_width): 1 (default) every batch's summaries
    # to max_dec_steps, as the original; N > 1 (not with static_shapes=True) each batch to
    # the smallest of N evenly spaced lengths that holds its longest summary, and training
    # and eval pools sorted by article length bucket, then summary length, so that a
    # batch's summaries are alike (the original sorted by article length alone).
    decoder_buckets: int = 1
    max_oovs: int = 400
    # How the one-step decoder computes attention at decode time (spec 4.12):
    # "original" recomputes it from the previous state like the TF1 decode graph;
    # "train_consistent" carries the previous context like training does.
    decode_attention: str = "original"
    # Numerically safe loss/attention (no log(0), no 0/0). False = the original formula.
    safe_numerics: bool = True
    # Run the encoder and the training decoder loop as fused XLA loops with hand-written
    # gradients (pointer_generator/layers/fused_*.py), and the vocabulary projection + loss
    # with one (losses.vocab_logits_and_gold); False = Keras layers, log-softmax and
    # autodiff (same values, slower; numeric checks of --debug can see inside).
    fused_recurrence: bool = True
    # bfloat16 inputs for the vocabulary projection (most of a step's FLOPs), float32
    # variables, logits, softmax, distributions and loss. For GPUs/TPUs with bf16 units.
    mixed_precision: bool = False
    # The global norm that gradients are clipped to `max_grad_norm` by (grad_norm.py):
    # "original" = TF1's `tf.global_norm` over the gradients as `tf.gradients` returned
    # them, where the embedding's gradient is one row per looked-up token (duplicates not
    # summed); "dense" = the norm of the summed (dense) embedding gradient.
    grad_norm: str = "original"
    # ---- the earlier families (models/family_registry.py) ------------------------------
    # Which model: the name of a registered family (models/family_registry.py: the
    # pointer-generator, ABS, RAS-Elman, RAS-LSTM, or one registered), which checks the
    # settings and says what it fixes (ABS and RAS have no pointer and no coverage).
    model: str = "pointer_generator"
    # The family's own settings ({name: value}, e.g. ABS's {"abs_encoder": "conv"}): its
    # `FamilyOption`s, which say their defaults, types and flags
    # (`ModelFamily.option_values` fills the defaults). Kept as sorted (name, value) pairs
    # so that HParams stays hashable; give a dict.
    options: tuple = ()
    # ---- how the earlier families were trained (training/optimizers.py, epochs.py) -----
    optimizer: str = "adagrad"  # "sgd": plain SGD (ABS, RAS) with an annealed rate
    lr_decay: str = "none"  # annealing on validation perplexity, see LR_DECAYS
    lr_decay_factor: float = 2.0  # the rate is divided by this ("annealing 2")
    embedding_max_norm: float = 0.0  # > 0: renormalise embedding rows each epoch (ABS: 1)
    # What the gradient is taken of: the mean NLL per target word, or (RAS's printed
    # objective, L = -sum_i sum_t log P) the sum over the batch's words.
    loss_reduction: str = "mean"

    def __post_init__(self):
        pairs = self.options.items() if isinstance(self.options, Mapping) else self.options
        object.__setattr__(self, "options", tuple(sorted((str(k), v) for k, v in pairs)))
        for name, allowed in _CHOICES.items():
            if getattr(self, name) not in allowed:
                raise FlagError(
                    f"--{name} must be one of {', '.join(allowed)}, got {getattr(self, name)!r}"
                )
        for name in POSITIVE_FIELDS:
            if getattr(self, name) <= 0:
                raise FlagError(f"--{name} must be positive, got {getattr(self, name)}")
        if self.lr_decay != "none" and self.optimizer != "sgd":
            raise FlagError(
                f"--lr_decay={self.lr_decay} anneals plain SGD's rate: add --optimizer=sgd "
                "(Adagrad adapts its own step sizes)"
            )
        if self.lr_decay_factor <= 1:
            raise FlagError(f"--lr_decay_factor must be > 1, got {self.lr_decay_factor}")
        if self.embedding_max_norm < 0:
            raise FlagError(
                f"--embedding_max_norm must be >= 0 (0 = off), got {self.embedding_max_norm}"
            )

    @property
    def attention_dim(self) -> int:
        """Size of the attention features: the encoder state size, 2 * hidden_dim."""
        return 2 * self.hidden_dim

    def option(self, name: str):
        """The value of the family option `name` held here (KeyError if none is)."""
        return dict(self.options)[name]

    def replace(self, **changes) -> HParams:
        """A copy with `changes`; a name that is no field is a family option."""
        fields = {f.name for f in dataclasses.fields(self)}
        options = {k: v for k, v in changes.items() if k not in fields}
        if options:
            changes = {k: v for k, v in changes.items() if k in fields}
            changes["options"] = {**dict(changes.get("options", self.options)), **options}
        return dataclasses.replace(self, **changes)
