"""Files and folders the commands write (docs/reliability.md): a new output file is
checked before any work and never overwrites one that appeared meanwhile
(`tune_features --weights_out`); files that several processes write at once are each
written through a temporary of their own; the staging folders of a killed `export` or
converter are removed by the next writer there, live ones and a folder made at
--export_dir meanwhile are kept (`runtime/staging.py`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from pointer_generator.errors import FlagError
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


def test_new_output_files_are_checked_first_and_never_overwritten(tmp_path):
    from pointer_generator.runtime import staging

    existing = tmp_path / "w.txt"
    existing.write_text("the user's", encoding="utf-8")
    for path, message in (
        (tmp_path, "is a folder"),
        (existing, "exists already"),
        (tmp_path / "no" / "w.txt", "does not exist"),
    ):
        with pytest.raises(FlagError, match=message):
            staging.check_new_file(str(path), "weights_out")
    target = tmp_path / "new.txt"
    staging.check_new_file(str(target), "weights_out")
    staging.write_new_file(str(target), "uni 1\n", "weights_out")
    assert target.read_text() == "uni 1\n"
    with pytest.raises(FlagError, match="appeared while this ran"):
        staging.write_new_file(str(existing), "uni 2\n", "weights_out")
    assert existing.read_text() == "the user's"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".new")]  # kept, not lost


def test_files_written_by_several_processes_at_once_never_fail(tmp_path):
    """Decode shards write the same decode_inputs.json at once: each write goes through
    its own temporary file (a shared `path.tmp` made one shard's rename fail with
    FileNotFoundError, exit 3, about one full test run in three). Threads race the same
    way: every write succeeds, the file holds one whole text, no temporary is left."""
    from concurrent.futures import ThreadPoolExecutor

    from pointer_generator.runtime import staging

    path = str(tmp_path / "decode_inputs.json")
    texts = [json.dumps({"writer": i, "pad": "x" * 5000}) for i in range(8)]

    def write(i):
        for _ in range(100):
            staging.replace_file(path, texts[i])

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(write, range(8)))  # re-raises any writer's error
    with open(path, encoding="utf-8") as f:
        assert f.read() in texts
    assert os.listdir(tmp_path) == ["decode_inputs.json"]
    with pytest.raises(OSError):
        staging.replace_file(str(tmp_path / "no" / "such.json"), "{}")


def test_tune_features_checks_weights_out_before_decoding(trained, tmp_path):
    root = _copy(trained, "abs_like")
    path = os.path.join(root, "settings.json")
    settings = json.load(open(path))
    settings["flags"].update(model="abs", pointer_gen=False)
    json.dump(settings, open(path, "w"))
    existing = tmp_path / "weights.txt"
    existing.write_text("mine\n")
    for out, message in ((tmp_path, "is a folder"), (existing, "exists already")):
        proc = helpers.run_python(
            ["-m", "pointer_generator.cli.entry", "tune_features", f"--log_root={trained.log_root}",
             "--exp_name=abs_like", f"--data_path={trained.val_path}", f"--weights_out={out}"],
            timeout=120,
        )  # fmt: skip
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
        assert "round" not in proc.stderr  # refused before any decoding
    assert existing.read_text() == "mine\n"


def test_a_killed_exports_staging_folder_is_removed_and_a_late_folder_kept(tmp_path):
    import socket

    from pointer_generator.cli import export
    from pointer_generator.runtime import staging

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".export-{socket.gethostname()}-{dead.pid}-abc"
    stale.mkdir()
    (stale / "saved_model.pb").write_bytes(b"half")
    mine = tmp_path / f".export-{socket.gethostname()}-{os.getpid()}-live"
    mine.mkdir()
    users = tmp_path / ".export-notes"
    users.mkdir()
    staging.remove_stale(str(tmp_path), "export")
    assert not stale.exists() and mine.exists() and users.exists()
    # A folder made at --export_dir while exporting: an error line, the folder untouched.
    target = tmp_path / "model"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    with pytest.raises(FlagError, match="was created while the model was being exported"):
        export._move_into_place(str(mine), str(target))
    assert (target / "keep.txt").read_text() == "mine" and mine.exists()


def test_a_killed_converters_staging_folder_is_removed_by_the_next_run(tmp_path):
    import socket
    import subprocess
    import sys

    from data_tools import finished_files

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    out = tmp_path / "out"
    stale = out / f".staging-{socket.gethostname()}-{dead.pid}-abc_1"
    live = out / f".staging-{socket.gethostname()}-{os.getpid()}-def_2"
    for d in (stale, live):
        (d / "chunked").mkdir(parents=True)
        (d / "chunked" / "train_000.bin").write_bytes(b"x" * 1000)
    with finished_files.FinishedFilesWriter(str(out)) as writer:
        writer.write_set("train", [("w1 w2 .", "<s> w1 . </s>")])
    assert not stale.exists() and live.exists()
    assert sorted(os.listdir(out)) == sorted([live.name, "chunked", "train.bin"]) or sorted(
        os.listdir(out)
    ) == sorted([live.name, "chunked"])
