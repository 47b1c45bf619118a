"""--decoder_buckets (issue 46): summaries padded to a few lengths instead of always
max_dec_steps, and training pools grouped by article bucket, then summary length.

The padding changes no loss (every position past a summary's end is masked out), only the
work; the grouping changes which examples train together, so the original's fixed
padding and article-length grouping stay the default.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import tensorflow as tf

import pointer_generator as pg
from pointer_generator.data import input_pipeline as ip
from pointer_generator.evaluation import evaluate
from tests import helpers


def test_bucket_order_groups_by_article_bucket_then_summary_length():
    """Against a NumPy reference: a stable sort by (bucket of the article length, summary
    length), cut into consecutive groups; the groups in some order, each whole."""
    rng = np.random.default_rng(0)
    n, batch = 64, 4
    enc = rng.integers(1, 401, n)
    dec = rng.integers(1, 101, n)
    bounds = [104, 200, 304, 400]
    order = ip.bucket_order(
        tf.constant(enc), batch, tf.constant([1, 2]), dec_lens=tf.constant(dec), enc_bounds=bounds
    ).numpy()
    bucket = np.searchsorted(bounds, enc, side="left")
    want = np.lexsort((dec, bucket)).reshape(-1, batch)  # (lexsort is stable)
    got = order.reshape(-1, batch)
    assert sorted(map(tuple, got)) == sorted(map(tuple, want))
    # Without summary lengths: by article length alone, as the original.
    plain = ip.bucket_order(tf.constant(enc), batch, tf.constant([1, 2])).numpy()
    assert sorted(map(tuple, plain.reshape(-1, batch))) == sorted(
        map(tuple, np.argsort(enc, kind="stable").reshape(-1, batch))
    )


@pytest.mark.parametrize(
    "longest,width", [([3, 5], 32), ([32], 32), ([33, 2], 56), ([80], 80), ([81], 100)]
)
def test_decoder_width_is_the_smallest_bucket_that_holds_the_longest_summary(longest, width):
    hps = pg.HParams(max_dec_steps=100, decoder_buckets=4)  # 32, 56, 80, 100
    assert int(ip.decoder_width(tf.constant(longest, tf.int32), hps)) == width
    assert ip.decoder_width(tf.constant(longest), hps.replace(decoder_buckets=1)) == 100
    fixed = hps.replace(static_shapes=True)
    assert ip.decoder_width(tf.constant(longest), fixed) == 100


@pytest.mark.parametrize("model", ["pointer_generator", "abs"])
def test_bucketed_summaries_give_the_losses_of_fixed_padding(tmp_path, model):
    """The same examples, padded to max_dec_steps and to decoder buckets, through one
    model: every loss term equal, and the bucketed batches narrower."""
    data = helpers.tiny_setup(tmp_path, n_train=40, n_val=24)
    vocab = pg.Vocab(data.vocab_path, 100)
    overrides = dict(model=model, max_dec_steps=24, batch_size=4)
    if model == "pointer_generator":
        overrides["coverage"] = True
    fixed = helpers.hparams(**overrides)
    bucketed = fixed.replace(decoder_buckets=3)  # 8, 16, 24
    evaluator = evaluate.Evaluator(fixed, 100)
    widths = []
    for a, b in zip(
        _batches(data.val_path, vocab, fixed), _batches(data.val_path, vocab, bucketed), strict=True
    ):
        width = b["target_batch"].shape[1]
        widths.append(width)
        assert width == min(n for n in (8, 16, 24) if n >= int(max(b["dec_lens"])))
        np.testing.assert_array_equal(a["target_batch"][:, :width], b["target_batch"])
        assert not a["dec_padding_mask"][:, width:].numpy().any()
        got, want = evaluator.evaluate(b), evaluator.evaluate(a)
        for name in ("loss", "total_loss", "coverage_loss", "token_nll_sum", "tokens"):
            assert got[name] == pytest.approx(want[name], rel=1e-5, abs=1e-6), name
    assert min(widths) < 24  # some batch really was narrower


def _batches(path, vocab, hps):
    ds = ip.make_dataset(path, vocab, hps, "eval", single_pass=True)
    return [ip.model_inputs(b) for b in ds]


def test_training_and_eval_run_with_decoder_buckets(tmp_path):
    """The command line: training groups and pads by summary length, the eval job pads as
    the experiment was trained (the setting is remembered), and the flag is refused with
    fixed shapes."""
    data = helpers.tiny_setup(tmp_path)
    args = helpers.run_args(data, "buckets", max_steps=6, decoder_buckets=2)
    assert helpers.run_main_in_process(args) == 0
    with open(os.path.join(data.log_root, "buckets", "settings.json"), encoding="utf-8") as f:
        assert json.load(f)["flags"]["decoder_buckets"] == 2
    eval_args = helpers.run_args(data, "buckets", mode="eval", single_pass=True)
    assert helpers.run_main_in_process(eval_args) == 0
    refused = helpers.run_args(data, "fixed", static_shapes=True, decoder_buckets=2)
    assert helpers.run_main_in_process(refused) == 2
