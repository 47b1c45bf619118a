"""The tiny trained experiment that several test files use: `build` makes one, and each file
declares its own module-scoped `trained` fixture returning `build(tmp_path_factory)`."""

from __future__ import annotations

import os

from tests import helpers


def mode_args(trained, mode: str, *extra: str) -> list[str]:
    """A single-pass run of `mode` on the experiment's validation data, naming no model
    flag or vocabulary (the experiment's stored settings give them)."""
    return [
        f"--mode={mode}",
        "--single_pass",
        f"--data_path={trained.val_path}",
        f"--log_root={trained.log_root}",
        "--exp_name=exp",
        *extra,
    ]


def build(tmp_path_factory):
    """A tiny experiment trained with explicit model flags (settings.json written)."""
    # Not "trained": a decode folder is named decode_train if "train" occurs anywhere in
    # the data path (the original's rule), and the tests expect decode_val.
    root = tmp_path_factory.mktemp("experiment")
    data = helpers.tiny_setup(root, n_train=12, n_val=6)
    args = helpers.run_args(data, "exp", max_steps=3, hidden_dim=12, emb_dim=6)
    assert helpers.run_main_in_process(args) == 0
    data.exp_dir = os.path.join(data.log_root, "exp")
    return data
