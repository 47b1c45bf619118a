"""The pointer-generator (See et al. 2017) as a model family (models/family.py): its loss
is the original's (per-example averages; the baseline's per-token mean without the
pointer), plus the weighted coverage loss (eq. 13). TensorFlow is imported only when a
model is built or a loss computed, so that the command line can ask the family about
its settings before it starts TensorFlow."""

from __future__ import annotations

from pointer_generator.errors import FlagError
from pointer_generator.models import pointer_generator_checkpoints as checkpoints
from pointer_generator.models.family import (
    EXAMPLES,
    TOKENS,
    Conversion,
    LossTerms,
    ModelFamily,
)

# Spec 1.6: a model trained without coverage made into a coverage model, w_c new.
TO_COVERAGE = Conversion(
    flag="convert_to_coverage_model",
    source={"coverage": False},
    target={"coverage": True},
    added=checkpoints.is_coverage_key,
    what_is_added="coverage weights (w_c)",
    suffix="_cov_init",
    then="now run training with --coverage=1",
    help="train mode with --coverage=1: turn the newest non-coverage checkpoint into a "
    "coverage-ready one (fresh w_c, Adagrad reset) named model.ckpt-<step>_cov_init, "
    "then exit.",
)


class PointerGeneratorFamily(ModelFamily):
    name = "pointer_generator"
    summary = "the pointer-generator (See et al. 2017)"
    own_flags = ("pointer_gen", "coverage")
    fixed_settings = {}
    # [UNK] blocked (its candidates keep a spare for it, final_candidates.candidate_count);
    # ABS+'s features are not.
    SEARCH_OPTIONS = frozenset({"block_unk"})
    search_option_note = (
        "is for --model=abs|ras_*: ABS+'s extractive features and their n-best lists are "
        "not defined for the pointer-generator, which copies through its pointer"
    )
    # Its scalars under the original's tags.
    scalar_tags = {
        "coverage_loss": "seq2seq/loss/coverage_loss/coverage_loss",
        "total_loss": "seq2seq/loss/total_loss",
        "p_gen_mean": "seq2seq/p_gen_mean",
    }
    # The paper converts a model to coverage half way: training may turn it on.
    changed_in_training = ("coverage",)
    CONVERSIONS = (TO_COVERAGE,)
    loads_original = True
    reductions = ("mean", "sum")  # the sum only without the pointer (`check`)

    @property
    def model_class(self):
        from pointer_generator.models.pointer_generator import PointerGeneratorModel

        return PointerGeneratorModel

    def check(self, hps) -> None:
        super().check(hps)
        if hps.loss_reduction == "sum" and hps.pointer_gen:
            raise FlagError(
                "--loss_reduction=sum is for --model=abs|ras_*: the pointer-generator's loss "
                "is the original's mean"
            )

    def build(self, hps, vocab_size: int):
        return self.model_class(hps, vocab_size).build_weights()

    def loss_terms(self, hps, out: dict, batch: dict) -> LossTerms:
        import tensorflow as tf

        mask = batch["dec_padding_mask"]
        examples = tf.cast(tf.shape(mask)[0], out["loss"].dtype)
        sums, per = {}, {}
        if hps.pointer_gen:
            # The original's pointer loss: the mean over examples of per-example means.
            sums["loss"], per["loss"] = out["loss"] * examples, EXAMPLES
            sums["p_gen_mean"], per["p_gen_mean"] = tf.reduce_sum(out["p_gens"] * mask), TOKENS
        else:
            # Its baseline: the mean over every real target token of the batch.
            sums["loss"], per["loss"] = tf.reduce_sum(out["step_nll"] * mask), TOKENS
        if hps.coverage:
            sums["coverage_loss"], per["coverage_loss"] = out["coverage_loss"] * examples, EXAMPLES
        return LossTerms(sums, per)

    def objective(self, hps, means, sums):
        from pointer_generator.layers import losses

        if hps.loss_reduction == "sum":
            # The baseline's token sum (RAS's printed objective; the check refuses it
            # with the pointer).
            return sums["loss"]
        if not hps.coverage:
            return means["loss"]
        return losses.with_coverage_loss(means["loss"], means["coverage_loss"], hps.cov_loss_wt)

    def scalars(self, hps) -> tuple[str, ...]:
        # As the original wrote them: coverage_loss and total_loss only with coverage.
        return (("coverage_loss", "total_loss") if hps.coverage else ()) + (
            ("p_gen_mean",) if hps.pointer_gen else ()
        )

    def logged(self, hps) -> tuple[str, ...]:
        return ("coverage_loss",) if hps.coverage else ()

    def copies_words(self, hps) -> bool:
        return bool(hps.pointer_gen)

    def implied_settings(self, shapes):
        return checkpoints.implied_settings(shapes)

    def embedding_key(self, shapes):
        return checkpoints.embedding_key(shapes)

    def load_original(self, model, path: str, *, with_optimizer: bool, converting: bool):
        from pointer_generator.models import tf1_checkpoint

        arrays = tf1_checkpoint.read_tf1_checkpoint(path)
        has_slots = any(n.endswith(tf1_checkpoint.ADAGRAD_SUFFIX) for n in arrays)
        return tf1_checkpoint.tf1_arrays_to_model(
            model,
            arrays,
            include_optimizer=with_optimizer and has_slots,
            # The coverage conversion's target: w_c keeps its initial value.
            allow_missing_coverage=converting,
            path=path,
        )


FAMILY = PointerGeneratorFamily()
