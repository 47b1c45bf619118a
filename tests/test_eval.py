"""Eval mode: running average, best models, waiting for checkpoints, single-pass loss."""

import os
import threading

import numpy as np
import pytest
import tensorflow as tf

import pointer_generator as pg
from pointer_generator.data import binfile
from pointer_generator.data.vocab import PAD_ID
from pointer_generator.errors import DataError
from pointer_generator.evaluation import evaluate
from pointer_generator.runtime import checkpointing, tensorboard
from pointer_generator.runtime.experiment import Experiment
from pointer_generator.training import train
from tests import helpers


def test_running_average_follows_the_original_formula():
    r = evaluate.running_avg_loss(5.0, None)
    assert r == 5.0
    r = evaluate.running_avg_loss(3.0, r)
    assert r == pytest.approx(0.99 * 5.0 + 0.01 * 3.0)
    assert evaluate.running_avg_loss(30.0, None) == 12.0  # clipped at 12
    assert evaluate.running_avg_loss(100.0, 11.9) == 12.0


def test_latest_checkpoint_ignores_a_state_file_naming_deleted_files(tmp_path):
    trainer = train.Trainer(helpers.hparams(), 100)
    ckpts = checkpointing.TrainCheckpoints(str(tmp_path), trainer.checkpoint(), trainer.step)
    path = ckpts.save()
    assert checkpointing.latest_checkpoint(str(tmp_path)) == path
    checkpointing.delete_checkpoint_files(path)  # e.g. rotated away by the train job
    assert checkpointing.latest_checkpoint(str(tmp_path)) is None


# ------------------------------------------------------------------------------ concurrent
@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("eval")
    data = helpers.tiny_setup(root)
    exp = Experiment(str(root / "exp"))
    os.makedirs(exp.eval_dir)
    hps = helpers.hparams(coverage=True)
    trainer = train.Trainer(hps, 100)  # only writes "training" checkpoints
    ckpts = checkpointing.TrainCheckpoints(exp.train_dir, trainer.checkpoint(), trainer.step)
    evaluator = evaluate.Evaluator(hps, 100)
    return data, exp, trainer, ckpts, evaluator, pg.Vocab(data.vocab_path, 100)


def _save_train_checkpoint(trainer, ckpts, step, seed):
    rng = np.random.default_rng(seed)
    for v in trainer.model.trainable_variables:
        v.assign(v.numpy() + rng.normal(scale=0.05, size=v.shape).astype(np.float32))
    trainer.step.assign(step)
    return ckpts.save()


def test_concurrent_eval_waits_then_evaluates_and_keeps_best_models(setup, tmp_path):
    data, _, trainer, _, evaluator, vocab = setup
    # An experiment of its own: waiting needs a train folder without checkpoints, and the
    # module's gets them from the other tests, in whatever order they run.
    exp = Experiment(str(tmp_path / "exp"))
    os.makedirs(exp.eval_dir)
    ckpts = checkpointing.TrainCheckpoints(exp.train_dir, trainer.checkpoint(), trainer.step)
    # No checkpoint yet: the eval job waits; one appears 1.5 s later.
    timer = threading.Timer(1.5, _save_train_checkpoint, (trainer, ckpts, 5, 0))
    timer.start()
    try:
        avg = evaluate.concurrent(
            evaluator, vocab, exp, data.val_path, interval_secs=0.2, max_iterations=3
        )
    finally:
        timer.join()
    assert int(evaluator.step.numpy()) == 5
    scalars = helpers.read_scalars(exp.eval_dir)
    running = scalars[tensorboard.RUNNING_AVG_LOSS]
    losses = [v for _, v in scalars[tensorboard.LOSS]]
    assert [s for s, _ in running] == [5, 5, 5]
    # r1 = loss1, then r = 0.99 r + 0.01 loss: recompute from the logged losses.
    want = losses[0]
    for loss in losses[1:]:
        want = 0.99 * want + 0.01 * loss
    assert running[-1][1] == pytest.approx(want, rel=1e-6) and avg == pytest.approx(want)
    assert (
        "seq2seq/loss/coverage_loss/coverage_loss" in scalars
        and "seq2seq/loss/total_loss" in scalars
    )
    best = checkpointing.latest_checkpoint(exp.eval_dir, checkpointing.BEST_STATE_FILE)
    assert best == os.path.join(exp.eval_dir, "bestmodel-5")
    assert os.path.isfile(os.path.join(exp.eval_dir, "checkpoint_best"))
    assert not os.path.exists(os.path.join(exp.eval_dir, "checkpoint"))


def test_eval_reloads_new_checkpoints_and_keeps_the_3_newest_best(setup):
    data, exp, trainer, ckpts, evaluator, vocab = setup
    for step in (9, 13, 17):
        _save_train_checkpoint(trainer, ckpts, step, seed=step)
        evaluate.concurrent(
            evaluator, vocab, exp, data.val_path, interval_secs=0.1, max_iterations=1
        )
        assert int(evaluator.step.numpy()) == step
        for a, b in zip(trainer.model.weights, evaluator.model.weights, strict=True):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert helpers.checkpoint_steps(exp.eval_dir, "bestmodel") == [9, 13, 17]
    state = tf.train.get_checkpoint_state(exp.eval_dir, "checkpoint_best")
    assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == [
        "bestmodel-9",
        "bestmodel-13",
        "bestmodel-17",
    ]


def test_eval_survives_a_checkpoint_vanishing_while_loading(setup, monkeypatch):
    data, exp, trainer, ckpts, evaluator, vocab = setup
    _save_train_checkpoint(trainer, ckpts, 21, seed=21)
    real_load = evaluator.load
    calls = []

    def flaky_load(path):
        calls.append(path)
        if len(calls) == 1:
            raise tf.errors.NotFoundError(None, None, f"{path}.data-00000-of-00001 is gone")
        real_load(path)

    monkeypatch.setattr(evaluator, "load", flaky_load)
    evaluate.concurrent(evaluator, vocab, exp, data.val_path, interval_secs=0.05, max_iterations=1)
    assert len(calls) == 2 and int(evaluator.step.numpy()) == 21


def test_eval_says_it_waits_and_ends_when_no_new_checkpoint_comes(setup, monkeypatch, caplog):
    """Issue 45 item 7: with --eval_idle_secs the endless loop ends once training has
    stopped writing checkpoints; while the checkpoint stays the same it says so."""
    import logging
    import time

    data, exp, trainer, ckpts, evaluator, vocab = setup
    _save_train_checkpoint(trainer, ckpts, 25, seed=25)
    monkeypatch.setattr(evaluate._IdleClock, "NOTICE_SECS", 0.3)
    caplog.set_level(logging.INFO, logger=evaluate.__name__)
    t0 = time.monotonic()
    evaluate.concurrent(evaluator, vocab, exp, data.val_path, interval_secs=0.05, idle_secs=1.5)
    took = time.monotonic() - t0
    lines = [r.getMessage() for r in caplog.records]
    evaluated = [ln for ln in lines if ln.startswith("eval step 25 ")]
    waiting = [ln for ln in lines if ln.startswith("Waiting for training's next checkpoint")]
    ended = [ln for ln in lines if ln.startswith("No new checkpoint in")]
    assert 1.5 <= took < 30 and len(evaluated) >= 2, (took, len(evaluated))
    assert waiting and "ckpt-25 unchanged for" in waiting[0] and "ends after 2 s" in waiting[0]
    assert len(ended) == 1 and ended[0].endswith("eval ends (--eval_idle_secs)"), ended
    # 0 = the original: only max_eval_iterations ends it, and the notice names the flag.
    caplog.clear()
    monkeypatch.setattr(evaluate._IdleClock, "NOTICE_SECS", 0.0)
    evaluate.concurrent(evaluator, vocab, exp, data.val_path, interval_secs=0.05, max_iterations=3)
    lines = [r.getMessage() for r in caplog.records]
    assert not [ln for ln in lines if ln.startswith("No new checkpoint in")]
    assert any("--eval_idle_secs=S ends eval" in ln for ln in lines), lines


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
def test_a_ctrl_c_that_a_finalizer_swallowed_still_ends_the_eval_loop(setup, monkeypatch):
    """The real eval job once evaluated on for a minute after Ctrl-C: the signal had
    landed in a TensorFlow finalizer, where Python ignores the KeyboardInterrupt."""
    data, exp, trainer, ckpts, evaluator, vocab = setup
    _save_train_checkpoint(trainer, ckpts, 25, seed=25)
    real_evaluate = evaluator.evaluate
    calls = []

    def evaluate_then_press(batch):
        calls.append(1)
        if len(calls) == 2:
            helpers.ctrl_c_in_a_finalizer()
        return real_evaluate(batch)

    monkeypatch.setattr(evaluator, "evaluate", evaluate_then_press)
    with helpers.ctrl_c_remembered(), pytest.raises(KeyboardInterrupt):
        evaluate.concurrent(
            evaluator, vocab, exp, data.val_path, interval_secs=0.05, max_iterations=6
        )
    assert len(calls) == 2  # it stopped before the next evaluation


# ------------------------------------------------------------------------------ single pass
def test_the_input_gap_is_the_loss_on_rotated_articles_minus_the_loss(tmp_path, capsys):
    """--input_gap's wrong-article loss equals the plain single-pass loss of a file whose
    pair k holds article k + 5 // 2 (mod 5; written here, independently of the pipeline's
    pairing); two examples pair with each other."""
    words = helpers.write_vocab(str(tmp_path / "vocab"))
    pairs = helpers.make_pairs(5, words, seed=4)
    rotated = [(pairs[(k + 2) % 5][0], pairs[k][1]) for k in range(5)]
    binfile.write_chunked(str(tmp_path / "data"), "val", pairs, 1000)
    binfile.write_chunked(str(tmp_path / "data"), "rot", rotated, 1000)
    binfile.write_chunked(str(tmp_path / "data"), "one", pairs[:1], 1000)
    vocab = pg.Vocab(str(tmp_path / "vocab"), 100)
    exp = Experiment(str(tmp_path / "exp"))
    os.makedirs(exp.eval_dir)
    hps = helpers.hparams(batch_size=2)
    trainer = train.Trainer(hps, 100)
    ckpts = checkpointing.TrainCheckpoints(exp.train_dir, trainer.checkpoint(), trainer.step)
    _save_train_checkpoint(trainer, ckpts, 3, seed=1)
    evaluator = evaluate.Evaluator(hps, 100)

    data = str(tmp_path / "data")
    result = evaluate.single_pass(evaluator, vocab, exp, f"{data}/val_*", input_gap=True)
    reference = evaluate.single_pass(evaluator, vocab, exp, f"{data}/rot_*")

    assert result["loss_other_articles"] == pytest.approx(reference["loss"], rel=1e-6)
    assert result["input_gap"] == pytest.approx(reference["loss"] - result["loss"], rel=1e-6)
    out = capsys.readouterr().out
    assert f"(input gap {result['input_gap']:+.4f} nats)" in out
    with pytest.raises(DataError, match="holds only one example"):
        evaluate.single_pass(evaluator, vocab, exp, f"{data}/one_*", input_gap=True)


@pytest.mark.parametrize("pointer_gen", [True, False])
def test_the_history_gap_is_the_loss_with_another_summary_fed_to_the_decoder(
    tmp_path, capsys, pointer_gen
):
    """--input_gap's second control: example i's decoder is fed the summary words of
    example i + n // 2 (mod n), cycled where they are fewer than its own positions, its
    targets unchanged. The reference builds those inputs for one batch holding every
    example with NumPy and evaluates that batch."""
    words = helpers.write_vocab(str(tmp_path / "vocab"))
    data = helpers.write_data(str(tmp_path / "data"), "val", 5, words, seed=6)
    vocab = pg.Vocab(str(tmp_path / "vocab"), 100)
    exp = Experiment(str(tmp_path / "exp"))
    os.makedirs(exp.eval_dir)
    hps = helpers.hparams(batch_size=8, pointer_gen=pointer_gen)
    trainer = train.Trainer(hps, 100)
    ckpts = checkpointing.TrainCheckpoints(exp.train_dir, trainer.checkpoint(), trainer.step)
    _save_train_checkpoint(trainer, ckpts, 3, seed=2)
    evaluator = evaluate.Evaluator(hps, 100)

    result = evaluate.single_pass(evaluator, vocab, exp, data, input_gap=True)

    (batch,) = list(evaluate._dataset(data, vocab, hps, True))
    assert batch["dec_batch"].shape[0] == 5  # one batch holds every example
    dec, lens = batch["dec_batch"].numpy(), batch["dec_lens"].numpy()
    other = np.empty_like(dec)
    for i in range(5):
        j = (i + 2) % 5
        words = list(dec[j, 1 : lens[j]])
        other[i] = [dec[i, 0]] + [words[k % len(words)] for k in range(dec.shape[1] - 1)]
    assert (other != PAD_ID).all()  # every position reads a real word
    assert (lens < dec.shape[1]).any()  # and some summary is cycled
    rolled = {**batch, "dec_batch": tf.constant(other)}
    reference = evaluator.values(evaluator.evaluate(rolled))["loss"]
    assert result["loss_other_summaries"] == pytest.approx(reference, rel=1e-5)
    assert result["history_gap"] == pytest.approx(reference - result["loss"], rel=1e-5)
    out = capsys.readouterr().out
    assert f"(history gap {result['history_gap']:+.4f} nats)" in out
    stored = open(exp.single_pass_loss).read()
    assert f"history_gap: {result['history_gap']}" in stored


@pytest.mark.parametrize("gap, verdict", [(0.01, "WARNING: "), (0.6, "reads what it has written")])
def test_the_history_gap_line_warns_when_the_decoder_ignores_its_own_words(gap, verdict):
    line = evaluate.history_gap_line(2.0 + gap, gap)
    assert verdict in line and f"{gap:+.4f}" in line


@pytest.mark.parametrize("gap, verdict", [(0.001, "WARNING: "), (0.6, "reads its input")])
def test_the_input_gap_line_warns_when_the_model_ignores_its_input(gap, verdict):
    line = evaluate.input_gap_line(2.0 + gap, gap)
    assert verdict in line and f"{gap:+.4f}" in line


@pytest.mark.parametrize("pointer_gen", [True, False])
def test_single_pass_loss_is_exact_over_a_partial_final_batch(tmp_path, pointer_gen):
    words = helpers.write_vocab(str(tmp_path / "vocab"))
    data_path = helpers.write_data(str(tmp_path / "data"), "val", 5, words, seed=4)
    vocab = pg.Vocab(str(tmp_path / "vocab"), 100)
    exp = Experiment(str(tmp_path / "exp"))
    os.makedirs(exp.eval_dir)
    hps = helpers.hparams(pointer_gen=pointer_gen, coverage=pointer_gen, batch_size=2)
    trainer = train.Trainer(hps, 100)
    _save_train_checkpoint(
        trainer,
        checkpointing.TrainCheckpoints(exp.train_dir, trainer.checkpoint(), trainer.step),
        3,
        seed=1,
    )
    evaluator = evaluate.Evaluator(hps, 100)

    result = evaluate.single_pass(evaluator, vocab, exp, data_path)

    # The same 5 examples as one batch give the reference values.
    whole = next(
        iter(
            pg.make_dataset(
                data_path, vocab, hps.replace(batch_size=5), "eval", single_pass=True
            ).map(pg.model_inputs)
        )
    )
    out = trainer.model(whole, training=False)
    assert result["examples"] == 5 and result["step"] == 3
    assert result["loss"] == pytest.approx(float(out["loss"]), rel=1e-5)
    if pointer_gen:
        assert result["coverage_loss"] == pytest.approx(float(out["coverage_loss"]), rel=1e-5)
    text = open(exp.single_pass_loss, encoding="utf-8").read()
    assert f"loss: {result['loss']}" in text and "examples: 5" in text
