"""A single-pass decode resumes only a folder made from the same inputs (data, settings,
checkpoint): other inputs decode into a new folder and leave the old one untouched; with
no checkpoint at all it is an error at once (docs/reliability.md). Runs are in process
(`helpers.run_main_in_process`).
"""

from __future__ import annotations

import logging
import os
import shutil
import time

import pytest

from pointer_generator.runtime.progress import unstamped
from tests import helpers


def _errors(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("error: ")]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny experiment trained to step 6 in two runs: model.ckpt-0, -3 and -6."""
    root = tmp_path_factory.mktemp("state")
    data = helpers.tiny_setup(root, n_train=12, n_val=6)
    for steps in (3, 6):
        args = helpers.run_args(data, "exp", max_steps=steps)
        assert helpers.run_main_in_process(args) == 0
    train_dir = os.path.join(data.log_root, "exp", "train")
    assert helpers.checkpoint_steps(train_dir) == [0, 3, 6]
    return data


def _copy(data, name: str) -> str:
    """A copy of the trained experiment named `name`; returns its train/ directory."""
    shutil.copytree(os.path.join(data.log_root, "exp"), os.path.join(data.log_root, name))
    return os.path.join(data.log_root, name, "train")


def test_single_pass_decode_never_resumes_a_folder_made_from_other_inputs(trained, capfd, caplog):
    train_dir = _copy(trained, "resume")
    exp_dir = os.path.dirname(train_dir)
    other = helpers.write_data(os.path.join(exp_dir, "other"), "val", 3, trained.words, seed=5)
    first = helpers.run_args(trained, "resume", mode="decode", single_pass=True)
    assert helpers.run_main_in_process(first) == 0
    # Every status line on stdout carries its time, as the log lines (issue 45 item 6).
    out = [x for x in capfd.readouterr().out.splitlines() if x.strip()]
    assert any(" into " in x for x in out) and all(unstamped(x) != x for x in out), out
    (folder,) = [d for d in os.listdir(exp_dir) if d.startswith("decode_")]
    folder = os.path.join(exp_dir, folder)
    n_first = len(os.listdir(os.path.join(folder, "decoded")))
    assert n_first == 6
    snapshot = {f: os.path.getmtime(os.path.join(folder, f)) for f in os.listdir(folder)}
    caplog.set_level(logging.WARNING)

    # Same folder name (same split name, settings, checkpoint), other data files.
    second = helpers.run_args(trained, "resume", mode="decode", single_pass=True, data_path=other)
    assert helpers.run_main_in_process(second) == 0
    assert f"{folder} holds a decode of other inputs (data differ)" in caplog.text
    assert len(os.listdir(os.path.join(folder + "-2", "decoded"))) == 3
    assert "decoded: 3/3 articles" in capfd.readouterr().err.splitlines()[-1]
    assert {f: os.path.getmtime(os.path.join(folder, f)) for f in os.listdir(folder)} == snapshot
    # The original's attention at decode time is a setting a summary depends on, too.
    third = helpers.run_args(
        trained, "resume", mode="decode", single_pass=True, decode_attention="train_consistent"
    )
    assert helpers.run_main_in_process(third) == 0
    assert os.path.isdir(folder + "-3")
    # Rerunning with the first inputs resumes the first folder (nothing left to decode).
    caplog.clear()
    caplog.set_level(logging.INFO)
    assert helpers.run_main_in_process(first) == 0
    assert f"Resuming single-pass decode in {folder} after 6 complete examples" in caplog.text


def test_single_pass_decode_without_any_checkpoint_is_an_error_at_once(trained, capfd):
    os.makedirs(os.path.join(trained.log_root, "untrained", "train"))
    start = time.monotonic()
    args = helpers.run_args(trained, "untrained", mode="decode", single_pass=True)
    assert helpers.run_main_in_process(args) == 2
    assert time.monotonic() - start < 60
    errors = _errors(capfd.readouterr().err)
    assert len(errors) == 1 and errors[0].startswith("error: no checkpoint in "), errors
