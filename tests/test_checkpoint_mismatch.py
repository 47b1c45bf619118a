"""Flags that do not match the checkpoint being restored (sizes, coverage, pointer_gen)
are one `error:` line naming the checkpoint and every mismatch, in train, eval and decode
mode (docs/reliability.md). Runs are in process (`helpers.run_main_in_process`).
"""

from __future__ import annotations

import os

import pytest

import pointer_generator as pg
from pointer_generator.runtime import checkpointing
from pointer_generator.runtime.experiment import Experiment
from tests import bad_input, helpers
from tests.bad_input import run_mode as _run


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    return bad_input.tiny(tmp_path_factory)


@pytest.fixture(scope="module")
def checkpoints(setup):
    """Experiments holding one checkpoint each: without and with coverage, baseline."""
    made = {}
    for name, hp in (
        ("plain", {}),
        ("covered", {"coverage": True}),
        ("baseline", {"pointer_gen": False}),
    ):
        exp = Experiment(os.path.join(setup.log_root, f"ckpt_{name}"))
        trainer = pg.Trainer(helpers.hparams(**hp), 100)
        trainer.step.assign(2)
        checkpointing.TrainCheckpoints(exp.train_dir, trainer.checkpoint(), trainer.step).save()
        made[name] = exp
    return made


MISMATCHES = [
    (
        "plain",
        {"coverage": True},
        "it was trained without coverage; convert it first with "
        "--convert_to_coverage_model=1 --coverage=1 (or drop "
        "--coverage)",
    ),
    ("covered", {"coverage": False}, "it was trained with coverage; add --coverage=1"),
    ("baseline", {}, "it is a baseline model but --pointer_gen=1"),
    ("plain", {"hidden_dim": 12}, "it has hidden_dim=8 but --hidden_dim=12"),
    (
        "plain",
        {"emb_dim": 6, "vocab_size": 90},
        "it has a vocabulary of 100 words but the vocab file and --vocab_size give 90; it has "
        "emb_dim=8 but --emb_dim=6",
    ),
]


@pytest.mark.parametrize("mode", ["train", "eval", "decode"])
@pytest.mark.parametrize(
    "exp_name, flags, problem",
    MISMATCHES,
    ids=[
        "coverage_added",
        "coverage_dropped",
        "pointer_gen",
        "hidden_dim",
        "vocab_size_and_emb_dim",
    ],
)
def test_flags_that_do_not_match_the_checkpoint_name_the_flag(
    setup, checkpoints, capfd, mode, exp_name, flags, problem
):
    exp = checkpoints[exp_name]
    data = setup.val_path if mode != "train" else setup.train_path
    # The test data is labelled by its path for decode: it contains "val".
    status, errors, err, out = _run(
        capfd,
        setup,
        mode=mode,
        exp_name=f"ckpt_{exp_name}",
        data_path=data,
        single_pass=mode != "train",
        max_eval_iterations=1,
        **flags,
    )
    assert status == 2 and len(errors) == 1, err[-3000:]
    assert errors[0] == (
        f"error: checkpoint {checkpointing.latest_checkpoint(exp.train_dir)} "
        f"does not match the flags: {problem}"
    )
