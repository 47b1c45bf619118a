"""`--model=abs|ras_elman|ras_lstm` through the command line: train (and resume), eval,
single-pass decode with ROUGE, summarize — the same pipeline, checkpoints and search as
the pointer-generator."""

from __future__ import annotations

import json
import os
import re

import pytest
import tensorflow as tf

import pointer_generator as pg
from pointer_generator.cli import entry
from pointer_generator.data.vocab import UNK_TOKEN
from pointer_generator.runtime import checkpointing
from tests import helpers


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return helpers.tiny_setup(tmp_path_factory.mktemp("families"), n_train=12, n_val=4)


@pytest.mark.parametrize(
    "family, flags",
    [
        ("abs", {"abs_encoder": "attention", "context_window": 3}),
        ("abs", {"abs_encoder": "bow", "context_window": 3}),
        ("ras_elman", {"conv_width": 3, "max_positions": 40}),
        ("ras_lstm", {"conv_width": 3, "max_positions": 40}),
    ],
    ids=["abs_attention", "abs_bow", "ras_elman", "ras_lstm"],
)
def test_a_family_trains_evaluates_and_decodes_from_the_command_line(
    data, capfd, tmp_path, family, flags
):
    exp = f"{family}_{flags.get('abs_encoder', 'x')}"
    common = {"model": family, **flags}
    assert helpers.run_main_in_process(helpers.run_args(data, exp, max_steps=2, **common)) == 0
    # Resumed, with the flags taken from the experiment's settings.
    args = [f"--log_root={data.log_root}", f"--exp_name={exp}", f"--data_path={data.train_path}"]
    assert helpers.run_main_in_process(["--mode=train", "--max_steps=3", *args]) == 0
    train_dir = os.path.join(data.log_root, exp, "train")
    assert checkpointing.latest_checkpoint(train_dir).endswith("model.ckpt-3")
    with open(os.path.join(data.log_root, exp, "settings.json"), encoding="utf-8") as f:
        stored = json.load(f)["flags"]
    assert stored["model"] == family and stored["pointer_gen"] is False
    capfd.readouterr()
    val = [f"--log_root={data.log_root}", f"--exp_name={exp}", f"--data_path={data.val_path}"]
    assert helpers.run_main_in_process(["--mode=eval", "--single_pass", "--input_gap", *val]) == 0
    out = capfd.readouterr().out
    assert "Single-pass eval of model.ckpt-3 (step 3) over 4 examples" in out
    line = r"another example's article: [0-9.]+ \(input gap ([-+][0-9.]+) nats\)"
    gap = re.search(line, out)
    assert gap, out
    with open(os.path.join(data.log_root, exp, "eval", "single_pass_loss.txt")) as f:
        stored = dict(x.split(": ", 1) for x in f.read().splitlines())
    assert float(stored["input_gap"]) == pytest.approx(float(gap.group(1)), abs=1e-4)
    assert helpers.run_main_in_process(["--mode=decode", "--single_pass", *val]) == 0
    (folder,) = [d for d in os.listdir(os.path.join(data.log_root, exp)) if d.startswith("decode")]
    folder = os.path.join(data.log_root, exp, folder)
    assert len(os.listdir(os.path.join(folder, "decoded"))) == 4
    assert os.path.exists(os.path.join(folder, "ROUGE_results.txt"))
    article = tmp_path / "a.txt"
    article.write_text("W3 w4 w5 w6 said . w7 w8 w9 .\n")
    status = entry.run_subcommand(
        "summarize", [f"--log_root={data.log_root}", f"--exp_name={exp}", str(article)]
    )
    assert status == 0 and capfd.readouterr().out.strip()


def test_the_families_have_no_pointer_or_coverage(data, capfd):
    args = helpers.run_args(data, "abs_cov", model="abs", coverage=True)
    assert helpers.run_main_in_process(args) == 2
    assert "error: --model=abs has no coverage: drop --coverage" in capfd.readouterr().err


def test_block_unk_keeps_unk_out_of_the_families_summaries(data):
    """A model whose output bias makes [UNK] the likeliest word everywhere writes it,
    unless --block_unk."""
    from pointer_generator.data import input_pipeline
    from pointer_generator.data.vocab import UNK_ID
    from pointer_generator.models.abs_model import ABSConfig, ABSModel

    hps = helpers.hparams(model="abs", pointer_gen=False)
    vocab = pg.Vocab(data.vocab_path, 100)
    config = ABSConfig(window=3, emb_dim=8, hidden_dim=8, namas=True)  # an output bias
    model = ABSModel(config, vocab.size()).build_weights()
    model.out.bias.assign(tf.one_hot(UNK_ID, vocab.size()) * 50.0)
    ds = input_pipeline.make_dataset(
        data.val_path, vocab, hps.replace(batch_size=2), "decode", True
    )
    batch = next(iter(ds))
    for block in (False, True):
        settings = helpers.search(hps, block_unk=block)
        decoder = pg.BeamSearchDecoder(model, vocab, hps, settings)
        words = [w for summary in decoder.decode_batch(batch) for w in summary.words]
        assert words and (UNK_TOKEN in words) != block, words


@pytest.mark.parametrize(
    "model, given, want",
    [
        ("abs", [], 1e-4),
        ("ras_lstm", [], 1e-4),
        ("ras_elman", ["--adagrad_init_acc=0.3"], 0.3),
        ("pointer_generator", [], 0.1),
    ],
)
def test_the_families_adagrad_starts_from_their_own_accumulator(model, given, want):
    """Issue 29: TF1's 0.1 throttled the families (experiments/results/families_results.md);
    a given flag wins, and the pointer-generator keeps the original's value."""
    from absl import flags as absl_flags

    from pointer_generator.cli import configs, flag_checks
    from pointer_generator.cli.flags import define_flags

    fv = define_flags(absl_flags.FlagValues())
    fv(["prog", f"--model={model}", *given])
    flag_checks.apply_model_family(fv)
    assert configs.hparams(fv).adagrad_init_acc == pytest.approx(want)


@pytest.mark.parametrize(
    "given, want",
    [(["--abs_encoder=conv"], 0.02), (["--abs_encoder=conv", "--lr=0.2"], 0.2),
     (["--abs_encoder=bow"], 0.15)],
)  # fmt: skip
def test_abs_convolutional_encoder_has_its_own_learning_rate(given, want):
    """At 0.15 its tanh units saturate for every input (experiments/results/families_results.md)."""
    from absl import flags as absl_flags

    from pointer_generator.cli import configs, flag_checks
    from pointer_generator.cli.flags import define_flags

    fv = define_flags(absl_flags.FlagValues())
    fv(["prog", "--model=abs", *given])
    flag_checks.apply_model_family(fv)
    assert configs.hparams(fv).lr == pytest.approx(want)


def test_an_option_of_another_family_is_refused_not_ignored():
    """--abs_encoder with --model=ras_elman was silently ignored (issue 43)."""
    from absl import flags as absl_flags

    from pointer_generator.cli import flag_checks
    from pointer_generator.cli.flags import define_flags
    from pointer_generator.errors import FlagError

    fv = define_flags(absl_flags.FlagValues())
    fv(["prog", "--model=ras_elman", "--abs_encoder=conv"])
    with pytest.raises(FlagError, match="^--abs_encoder is a setting of --model=abs, not of"):
        flag_checks.apply_model_family(fv)
