"""inspect_checkpoint: finiteness report of TF2 and original TF1 checkpoints, and the step,
implied flags and shapes it shows of a trained experiment's checkpoint."""

import os

import numpy as np
import pytest
import tensorflow as tf

import pointer_generator as pg
from pointer_generator.cli import inspect_checkpoint
from pointer_generator.runtime import checkpointing
from pointer_generator.training import train
from tests import helpers, trained_experiment


@pytest.fixture(scope="module")
def tf2_checkpoint(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tf2")
    trainer = train.Trainer(helpers.hparams(), 100)
    trainer.step.assign(7)
    path = checkpointing.TrainCheckpoints(str(directory), trainer.checkpoint(), trainer.step).save()
    return path


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    return trained_experiment.build(tmp_path_factory)


def _tf1_checkpoint(prefix):
    bad = np.ones((3, 2), np.float32)
    bad[1, 0] = np.inf
    tensors = {
        "seq2seq/embedding/embedding": np.zeros((5, 2), np.float32),
        "seq2seq/output_projection/v": np.full((5,), np.nan, np.float32),
        "seq2seq/reduce_final_st/w_reduce_c": bad,
        "global_step": np.int32(3),
    }
    names = sorted(tensors)
    tf.raw_ops.SaveV2(
        prefix=prefix,
        tensor_names=names,
        shape_and_slices=[""] * len(names),
        tensors=[tensors[n] for n in names],
    )
    return prefix


def test_finite_checkpoint_passes(tf2_checkpoint, capsys):
    assert inspect_checkpoint.main([tf2_checkpoint]) == 0
    out = capsys.readouterr().out
    assert out.strip().endswith("CHECK PASSED")
    assert "model/embedding/_embeddings/.ATTRIBUTES/VARIABLE_VALUE" in out
    assert "optimizer/accumulators/" in out


def test_a_directory_means_its_newest_checkpoint(tf2_checkpoint):
    directory = os.path.dirname(tf2_checkpoint)
    assert inspect_checkpoint.resolve(directory) == tf2_checkpoint
    assert inspect_checkpoint.resolve(tf2_checkpoint + ".index") == tf2_checkpoint


def test_tf1_checkpoint_with_inf_and_nan_fails(tmp_path, capsys):
    prefix = _tf1_checkpoint(str(tmp_path / "model.ckpt-3"))
    report = inspect_checkpoint.inspect(prefix)
    assert report.finite == ["seq2seq/embedding/embedding"]
    assert report.all_nonfinite == ["seq2seq/output_projection/v"]
    assert report.partly_nonfinite == ["seq2seq/reduce_final_st/w_reduce_c"]
    assert inspect_checkpoint.main([prefix]) == 1
    out = capsys.readouterr().out
    assert out.strip().endswith("CHECK FAILED")
    assert "entirely inf/NaN (1):\n  seq2seq/output_projection/v" in out


def test_missing_checkpoint_is_an_error_line(tmp_path, capsys):
    assert inspect_checkpoint.main([str(tmp_path / "nothing")]) == 2
    assert capsys.readouterr().err.startswith("error: no checkpoint at ")


def test_module_entry_point_without_a_path_prints_usage():
    proc = helpers.run_python(["-m", "pointer_generator.cli.inspect_checkpoint"], timeout=60)
    assert proc.returncode == 2
    assert "inspect_checkpoint <checkpoint prefix or directory>" in proc.stderr


def test_inspect_checkpoint_names_the_non_finite_tensors(tmp_path, capsys):
    trainer = pg.Trainer(helpers.hparams(), 100)
    bias = trainer.model.output_projection.bias
    values = bias.numpy()
    values[3] = np.inf
    bias.assign(values)
    kernel = trainer.model.output_projection.kernel
    kernel.assign(np.full(kernel.shape, np.nan, np.float32))
    path = checkpointing.TrainCheckpoints(str(tmp_path), trainer.checkpoint(), trainer.step).save()
    assert inspect_checkpoint.main([path]) == 1
    out = capsys.readouterr().out
    entirely = out.split("entirely inf/NaN (1):")[1].split("Variables")[0]
    partly = out.split("partly inf/NaN (1):")[1].split("CHECK")[0]
    assert "output_projection/_kernel/" in entirely and "output_projection/bias/" in partly
    assert out.strip().endswith("CHECK FAILED")


def test_inspect_checkpoint_shows_step_sizes_implied_flags_and_shapes(trained, capfd):
    assert inspect_checkpoint.main([os.path.join(trained.exp_dir, "train")]) == 0
    out = capfd.readouterr().out
    assert "  step: 3\n" in out
    assert "  implied flags: --vocab_size=100 --emb_dim=6 --hidden_dim=12 --pointer_gen=1 " in out
    (embedding,) = [line for line in out.splitlines() if line.startswith("  model/embedding/")]
    assert embedding.endswith("  [100, 6]")
