"""Training deletes and rotates only the files it wrote: a relative --log_root rotates
the experiment's own checkpoints, never a file of the working directory; entries of the
`checkpoint` state file that name files outside `train/` are dropped, their files left
alone; of the folders in `train/` only a save's own `<prefix>_temp` leftover is removed
(docs/reliability.md). Runs are in process (`helpers.run_main_in_process`).
"""

from __future__ import annotations

import os
import shutil

import pytest

from tests import helpers


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny experiment trained to step 3 (model.ckpt-0 and -3)."""
    data = helpers.tiny_setup(tmp_path_factory.mktemp("round3"), n_train=12, n_val=5)
    assert helpers.run_main_in_process(helpers.run_args(data, "exp", max_steps=3)) == 0
    return data


def _copy(data, name: str) -> str:
    """A copy of the trained experiment named `name`; returns its folder."""
    root = os.path.join(data.log_root, name)
    shutil.copytree(os.path.join(data.log_root, "exp"), root)
    return root


def test_a_relative_log_root_rotates_only_its_own_checkpoints(tmp_path, monkeypatch, caplog):
    """Resuming with a relative --log_root (as the README writes it) joined the state
    file's paths twice and rotation deleted `./model.ckpt-3.*` of the working directory,
    while the real checkpoints were never rotated away."""
    data = helpers.tiny_setup(tmp_path, n_train=12, n_val=2)
    monkeypatch.chdir(tmp_path)
    decoys = {}
    for name in ("model.ckpt-3.index", "model.ckpt-3.data-00000-of-00001"):
        decoys[name] = f"a file of the user's: {name}".encode()
        (tmp_path / name).write_bytes(decoys[name])

    def run(steps):
        args = helpers.run_args(data, "rel", max_steps=steps, log_root="logs")
        assert helpers.run_main_in_process(args) == 0

    for steps in (3, 6, 9, 12):
        run(steps)
    for name, content in decoys.items():
        assert (tmp_path / name).read_bytes() == content
    train_dir = tmp_path / "logs" / "rel" / "train"
    assert helpers.checkpoint_steps(str(train_dir)) == [6, 9, 12]  # rotated: newest 3
    state = (train_dir / "checkpoint").read_text()
    assert "../" not in state and "logs/" not in state, state
    assert "missing or damaged" not in caplog.text


def test_state_file_entries_outside_the_folder_are_dropped_not_deleted(trained, tmp_path, caplog):
    """A state file written by the earlier bug (`"../../../model.ckpt-3"`): the training
    job drops the entry and never touches the file it names."""
    from pointer_generator.runtime import checkpointing

    root = _copy(trained, "foreign")
    train_dir = os.path.join(root, "train")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    for suffix in (".index", ".data-00000-of-00001"):
        shutil.copy(
            os.path.join(train_dir, "model.ckpt-0" + suffix), outside / f"model.ckpt-1{suffix}"
        )
    rel = os.path.relpath(outside / "model.ckpt-1", train_dir)
    with open(os.path.join(train_dir, "checkpoint"), "w") as f:
        f.write(
            f'model_checkpoint_path: "model.ckpt-3"\nall_model_checkpoint_paths: "{rel}"\n'
            'all_model_checkpoint_paths: "model.ckpt-0"\n'
            'all_model_checkpoint_paths: "model.ckpt-3"\n'
        )
    with caplog.at_level("WARNING"):
        newest = checkpointing.recover_train_dir(train_dir)
    assert newest == os.path.join(train_dir, "model.ckpt-3")
    assert "not a checkpoint of this folder" in caplog.text
    state = open(os.path.join(train_dir, "checkpoint")).read()
    assert "elsewhere" not in state and "../" not in state
    assert sorted(os.listdir(outside)) == ["model.ckpt-1.data-00000-of-00001", "model.ckpt-1.index"]
    args = helpers.run_args(trained, "foreign", max_steps=9, save_checkpoint_secs=3600)
    assert helpers.run_main_in_process(args) == 0
    assert sorted(os.listdir(outside)) == ["model.ckpt-1.data-00000-of-00001", "model.ckpt-1.index"]


def test_only_a_saves_own_leftover_folder_is_removed(trained, caplog):
    """The glob was `*_temp*`: a training start deleted `my_templates/` and
    `notes_temporary/` with the user's files in them."""
    root = _copy(trained, "temps")
    train_dir = os.path.join(root, "train")
    users = {
        "my_templates/a.txt": "mine",
        "notes_temporary/b.txt": "mine too",
        "model.ckpt-9_temp/notes.txt": "named like a leftover, but holds a user's file",
        "x_temp/part-00000-of-00001.index": "not a checkpoint prefix",
    }
    for rel, text in users.items():
        os.makedirs(os.path.join(train_dir, os.path.dirname(rel)), exist_ok=True)
        with open(os.path.join(train_dir, rel), "w") as f:
            f.write(text)
    leftover = os.path.join(train_dir, "model.ckpt-7_temp")
    os.makedirs(leftover)
    for name in ("part-00000-of-00001.index", "part-00000-of-00001.data-00000-of-00001"):
        open(os.path.join(leftover, name), "wb").close()
    with caplog.at_level("INFO"):
        args = helpers.run_args(trained, "temps", max_steps=4)
        assert helpers.run_main_in_process(args) == 0
    for rel, text in users.items():
        with open(os.path.join(train_dir, rel)) as f:
            assert f.read() == text
    assert not os.path.exists(leftover)
    assert "model.ckpt-7_temp, left by a save that did not finish" in caplog.text
    assert "my_templates" not in caplog.text and "notes_temporary" not in caplog.text
