"""The flags of how batches are padded (`--static_shapes`, `--length_buckets`,
`--decoder_buckets`, `--max_oovs`; data/padding.py, docs/input_pipeline.md). Part of
`flags.define_flags`; stored with the experiment (runtime/experiment_settings.PADDING_FLAGS)."""

from __future__ import annotations

from absl import flags


def define(fv: flags.FlagValues) -> None:
    flags.DEFINE_boolean(
        "static_shapes",
        None,
        "How batches are padded. Not given: each batch's article length up to one of "
        "--length_buckets fixed lengths, so training, eval and decode compile a few times "
        "instead of once per new length (remembered by the experiment). 1: every batch to "
        "max_enc_steps and max_oovs article OOVs (fixed shapes for XLA/TPU). 0: each batch "
        "to its own longest article, as the original did (a compile per new length).",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "length_buckets",
        4,
        "The fixed article lengths batches are padded to when --static_shapes is not "
        "given: this many, evenly spaced up to max_enc_steps (1 = always max_enc_steps).",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "decoder_buckets",
        1,
        "The summary lengths batches are padded to: 1 (default), every batch to "
        "max_dec_steps, as the original; N > 1, each to the smallest of N evenly spaced "
        "lengths up to max_dec_steps that holds its longest summary, with the training "
        "and eval batches grouped by article length bucket, then summary length (the "
        "original grouped by article length alone), so a batch's decoder runs fewer "
        "padded steps (remembered by the experiment; not with --static_shapes=1).",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "max_oovs", 400, "Article OOVs per example kept with --static_shapes.", flag_values=fv
    )
