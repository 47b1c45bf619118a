"""Checkpoints: resume after a kill, atomic saves, one-off conversions, mismatches."""

import json
import logging
import os
import signal
import subprocess
import sys
import time
import types

import numpy as np
import pytest
import tensorflow as tf

import pointer_generator as pg
from pointer_generator.cli import configs
from pointer_generator.errors import CheckpointError
from pointer_generator.runtime import checkpointing
from pointer_generator.runtime.experiment import Experiment
from pointer_generator.training import train
from tests import helpers

ACC = "optimizer/accumulators/"


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return helpers.tiny_setup(tmp_path_factory.mktemp("ckpt_data"))


def _accumulators(path):
    reader = tf.train.load_checkpoint(path)
    return {
        k: reader.get_tensor(k) for k in reader.get_variable_to_shape_map() if k.startswith(ACC)
    }


def _step(path):
    return int(tf.train.load_checkpoint(path).get_tensor("step/.ATTRIBUTES/VARIABLE_VALUE"))


# ------------------------------------------------------------------------------ kill/resume
@pytest.fixture(scope="module")
def killed_run(data, tmp_path_factory):
    """A CLI training job SIGKILLed after it wrote a periodic checkpoint past step 2."""
    args = helpers.cli_args(
        mode="train",
        data_path=data.train_path,
        vocab_path=data.vocab_path,
        log_root=data.log_root,
        exp_name="killed",
        save_checkpoint_secs=1,
        max_steps=0,
    )
    exp = Experiment(os.path.join(data.log_root, "killed"))
    log_path = tmp_path_factory.mktemp("killed_logs") / "train.log"
    with open(log_path, "w") as log_file:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pointer_generator.run_summarization", *args],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            env=helpers.subprocess_env(),
            cwd=helpers.REPO_ROOT,
        )
        deadline = time.time() + 180
        try:
            while time.time() < deadline and proc.poll() is None:
                latest = checkpointing.latest_checkpoint(exp.train_dir)
                if latest and _step(latest) >= 3:
                    break
                time.sleep(0.2)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, open(log_path).read()[-3000:]
    latest = checkpointing.latest_checkpoint(exp.train_dir)
    assert latest is not None and _step(latest) >= 3, open(log_path).read()[-3000:]
    return types.SimpleNamespace(
        exp=exp, latest=latest, step=_step(latest), log=open(log_path).read()
    )


def test_resume_after_kill_continues_from_the_newest_checkpoint(killed_run, data, caplog):
    start = killed_run.step
    acc_before = _accumulators(killed_run.latest)
    flags = helpers.flag_namespace(
        data_path=data.train_path,
        vocab_path=data.vocab_path,
        log_root=data.log_root,
        exp_name="killed",
        max_steps=start + 2,
        save_checkpoint_secs=3600,
    )
    caplog.set_level(logging.INFO)
    train.run_train_mode(
        configs.hparams(flags),
        pg.Vocab(flags.vocab_path, flags.vocab_size),
        configs.train_config(flags),
    )

    assert f"Resuming from {killed_run.latest} (step {start})" in caplog.text
    assert "starts afresh" not in caplog.text  # the data position was restored too
    latest = checkpointing.latest_checkpoint(killed_run.exp.train_dir)
    assert latest.endswith(f"model.ckpt-{start + 2}") and _step(latest) == start + 2
    # Adagrad accumulators only grow; reset ones (0.1) would be smaller than before.
    acc_after = _accumulators(latest)
    assert acc_after.keys() == acc_before.keys()
    for key, before in acc_before.items():
        assert np.all(acc_after[key] >= before), key
    assert any(np.any(a > 0.1 + 1e-6) for a in acc_before.values())
    assert "trainable parameters" in killed_run.log  # start-up printed the model size


def test_mismatching_flags_fail_at_start_up_with_one_line(killed_run, data, capsys):
    args = helpers.cli_args(
        mode="train",
        data_path=data.train_path,
        vocab_path=data.vocab_path,
        log_root=data.log_root,
        exp_name="killed",
        hidden_dim=16,
        emb_dim=6,
    )
    assert helpers.run_main_in_process(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    # The experiment remembers its model flags (settings.json): both contradictions
    # are named before the checkpoint is even opened.
    assert err.startswith("error: --emb_dim=6 contradicts this experiment's emb_dim=8; ")
    assert "--hidden_dim=16 contradicts this experiment's hidden_dim=8 (stored in " in err


# ------------------------------------------------------------------------------ atomicity
def _trainer(**overrides):
    return train.Trainer(helpers.hparams(**overrides), 100)


def test_a_save_killed_before_the_state_update_leaves_the_previous_one(tmp_path, monkeypatch):
    trainer = _trainer()
    ckpts = checkpointing.TrainCheckpoints(str(tmp_path), trainer.checkpoint(), trainer.step)
    trainer.step.assign(4)
    first = ckpts.save()
    trainer.step.assign(5)

    def die(*args, **kwargs):
        raise SystemExit("killed")  # the process dies after writing the files

    from tensorflow.python.checkpoint import checkpoint_management

    monkeypatch.setattr(checkpoint_management, "update_checkpoint_state_internal", die)
    with pytest.raises(SystemExit):
        ckpts.save()
    monkeypatch.undo()
    assert checkpointing.latest_checkpoint(str(tmp_path)) == first
    # A half-written newer checkpoint (here: index without data) is never picked up.
    with open(os.path.join(tmp_path, "model.ckpt-9.index"), "wb") as f:
        f.write(b"\x00garbage")
    fresh = _trainer()
    checkpointing.restore(
        fresh.checkpoint(), checkpointing.latest_checkpoint(str(tmp_path)), fresh.model
    )
    assert int(fresh.step.numpy()) == 4


def test_an_existing_checkpoint_is_never_overwritten(tmp_path):
    trainer = _trainer()
    ckpts = checkpointing.TrainCheckpoints(str(tmp_path), trainer.checkpoint(), trainer.step)
    trainer.step.assign(3)
    path = ckpts.save()
    mtime = os.path.getmtime(path + ".index")
    assert ckpts.save() is None
    assert os.path.getmtime(path + ".index") == mtime


def test_data_position_is_restored_only_for_unchanged_data_settings(data, tmp_path, caplog):
    vocab = pg.Vocab(data.vocab_path, 100)
    stub = types.SimpleNamespace(
        hps=helpers.hparams(batch_size=2),
        num_workers=1,
        strategy=tf.distribute.get_strategy(),
        step=tf.Variable(5, dtype=tf.int64),
    )
    flags = configs.train_config(helpers.flag_namespace(data_path=data.train_path, batch_size=2))
    it, config = train.training_data(stub, vocab, flags, latest=None)
    assert json.loads(config)["seed"] == 111 + 5
    for _ in range(3):
        next(it)
    path = tf.train.Checkpoint(data=it, data_config=tf.Variable(config)).write(str(tmp_path / "c"))
    expected = [next(it)["enc_batch"].numpy() for _ in range(2)]

    again, _ = train.training_data(stub, vocab, flags, latest=path)
    for want in expected:
        np.testing.assert_array_equal(next(again)["enc_batch"].numpy(), want)

    caplog.set_level(logging.WARNING)
    stub.hps = helpers.hparams(batch_size=4)
    changed, config = train.training_data(stub, vocab, flags, latest=path)
    assert "data settings changed" in caplog.text
    assert next(changed)["enc_batch"].shape[0] == 4
    assert json.loads(config)["pipeline"]["worker_batch_size"] == 4


# ------------------------------------------------------------------------------ one-offs
def _vocab(data):
    return pg.Vocab(data.vocab_path, 100)


def _to_coverage(hps, vocab, exp):
    """The pointer-generator's --convert_to_coverage_model (its family's conversion)."""
    from pointer_generator.models.pointer_generator_family import TO_COVERAGE
    from pointer_generator.training.conversions import convert

    return convert(TO_COVERAGE, hps, vocab, exp)


def test_convert_to_coverage_model(data, tmp_path):
    exp = Experiment(str(tmp_path / "exp"))
    source = _trainer(coverage=False)
    source.step.assign(42)
    for acc in source.optimizer.accumulators.values():
        acc.assign(tf.fill(acc.shape, 5.0))
    ckpts = checkpointing.TrainCheckpoints(exp.train_dir, source.checkpoint(), source.step)
    original = ckpts.save()

    path = _to_coverage(helpers.hparams(coverage=True), _vocab(data), exp)

    assert path == original + "_cov_init"
    assert checkpointing.latest_checkpoint(exp.train_dir) == path
    assert tf.io.gfile.exists(original + ".index")  # the user's checkpoint is kept
    resumed = _trainer(coverage=True)
    checkpointing.restore(resumed.checkpoint(), path, resumed.model)
    assert int(resumed.step.numpy()) == 42
    for a, b in zip(
        source.model.weights, [w for w in resumed.model.weights if "w_c" not in w.path], strict=True
    ):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert np.any(resumed.model.attention.w_c.numpy() != 0)  # initialised, not zeros
    for acc in resumed.optimizer.accumulators.values():
        np.testing.assert_array_equal(acc.numpy(), np.full(acc.shape, 0.1, np.float32))
    # Training from it rotates old checkpoints but keeps the converted one.
    later = checkpointing.TrainCheckpoints(exp.train_dir, resumed.checkpoint(), resumed.step)
    for step in range(43, 47):
        resumed.step.assign(step)
        later.save()
    assert helpers.checkpoint_steps(exp.train_dir) == [42, 44, 45, 46]
    assert tf.io.gfile.exists(path + ".index")
    with pytest.raises(CheckpointError, match="already has coverage"):
        _to_coverage(helpers.hparams(coverage=True), _vocab(data), exp)


def test_convert_without_a_checkpoint_is_a_clear_error(data, tmp_path):
    with pytest.raises(CheckpointError, match="no checkpoint in .* to convert"):
        _to_coverage(helpers.hparams(coverage=True), _vocab(data), Experiment(str(tmp_path)))


def test_restore_best_model(data, tmp_path):
    exp = Experiment(str(tmp_path / "exp"))
    best = _trainer()
    best.step.assign(17)
    checkpointing.BestModels(exp.eval_dir, best.weights_checkpoint()).save(17)

    path = train.restore_best_model(helpers.hparams(), _vocab(data), exp)

    assert path == os.path.join(exp.train_dir, "model-17")
    assert checkpointing.latest_checkpoint(exp.train_dir) == path
    loaded = _trainer()
    checkpointing.restore(loaded.checkpoint(), path, loaded.model)
    assert int(loaded.step.numpy()) == 17
    for a, b in zip(best.model.weights, loaded.model.weights, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    for acc in loaded.optimizer.accumulators.values():
        np.testing.assert_array_equal(acc.numpy(), np.full(acc.shape, 0.1, np.float32))


def test_restore_best_model_without_an_eval_job_is_a_clear_error(data, tmp_path):
    with pytest.raises(CheckpointError, match="no best model"):
        train.restore_best_model(helpers.hparams(), _vocab(data), Experiment(str(tmp_path)))


# ------------------------------------------------------------------------------ mismatches
@pytest.fixture(scope="module")
def baseline_checkpoint(tmp_path_factory):
    trainer = _trainer(pointer_gen=False)
    return trainer.checkpoint().write(str(tmp_path_factory.mktemp("mismatch") / "ckpt"))


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"pointer_gen": True}, "baseline model but --pointer_gen=1"),
        ({"pointer_gen": False, "coverage": True}, "without coverage; convert it first"),
        ({"pointer_gen": False, "emb_dim": 4}, "emb_dim=8 but --emb_dim=4"),
    ],
)
def test_mismatching_checkpoint_names_the_flag(baseline_checkpoint, overrides, message):
    model = _trainer(**overrides).model
    with pytest.raises(CheckpointError, match=message):
        checkpointing.check_compatible(baseline_checkpoint, model)


def test_vocab_size_mismatch(baseline_checkpoint):
    trainer = train.Trainer(helpers.hparams(pointer_gen=False), 120)
    with pytest.raises(CheckpointError, match="vocabulary of 100 words .* give 120"):
        checkpointing.restore(trainer.checkpoint(), baseline_checkpoint, trainer.model)


def test_original_tf1_checkpoint_in_train_dir_is_explained(tmp_path):
    prefix = str(tmp_path / "model.ckpt-5")
    tf.raw_ops.SaveV2(
        prefix=prefix,
        tensor_names=["seq2seq/embedding/embedding"],
        shape_and_slices=[""],
        tensors=[np.zeros((100, 8), np.float32)],
    )
    with pytest.raises(CheckpointError, match="--tf1_checkpoint"):
        checkpointing.check_compatible(prefix, _trainer().model)
