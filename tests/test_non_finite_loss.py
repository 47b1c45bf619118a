"""A non-finite loss stops training with one message (docs/reliability.md): the bad
update is not applied, nothing is saved after it, and the newest checkpoint, named in
the message, is finite (`inspect_checkpoint` passes it). The run is in process
(`helpers.run_main_in_process`).
"""

from __future__ import annotations

import os

from pointer_generator.cli import inspect_checkpoint
from pointer_generator.runtime import checkpointing
from tests import helpers


def test_non_finite_loss_stops_with_one_message_and_a_finite_checkpoint(tmp_path, capsys):
    data = helpers.tiny_setup(tmp_path)
    args = helpers.cli_args(
        mode="train",
        data_path=data.train_path,
        vocab_path=data.vocab_path,
        log_root=data.log_root,
        exp_name="nan",
        lr=1e30,
        max_steps=30,
        save_checkpoint_secs=3600,
    )
    assert helpers.run_main_in_process(args) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    train_dir = os.path.join(data.log_root, "nan", "train")
    newest = checkpointing.latest_checkpoint(train_dir)
    assert len(errors) == 1 and "Traceback" not in err, err[-3000:]
    assert errors[0].startswith("error: loss is not finite at training step 2 (loss=nan")
    assert f"last good checkpoint: {newest}" in errors[0]
    assert newest.endswith("model.ckpt-0")

    assert inspect_checkpoint.main([train_dir]) == 0
    report = capsys.readouterr().out
    assert report.strip().endswith("CHECK PASSED")
    finite = report.split("Finite variables (")[1].split("Variables that are")[0]
    assert "model/embedding/" in finite and "optimizer/accumulators/" in finite
    assert "entirely inf/NaN (0):" in report and "partly inf/NaN (0):" in report
