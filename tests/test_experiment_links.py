"""An experiment folder someone else could write to (a shared one, a copy): links planted
in it never make a run overwrite, delete or load files outside it; what a run writes
follows the umask; a killed best-model save is cleaned up (issue 42, items 1, 2, 5, 7).

Every planted link points at a file of "the user's" outside the experiment, whose bytes
are checked afterwards.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat

import pytest

from tests import helpers

LINK_ERROR = "is a symbolic link (to {target}); the project never writes through a link"


def _errors(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("error: ")]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny experiment trained to step 3 (model.ckpt-0 and -3)."""
    data = helpers.tiny_setup(tmp_path_factory.mktemp("links"), n_train=12, n_val=5)
    assert helpers.run_main_in_process(helpers.run_args(data, "exp", max_steps=3)) == 0
    return data


def _copy(data, name: str) -> str:
    root = os.path.join(data.log_root, name)
    shutil.copytree(os.path.join(data.log_root, "exp"), root, symlinks=True)
    return root


def _outside(tmp_path, name: str) -> tuple[str, bytes]:
    """A file of the user's outside every experiment: (path, its bytes)."""
    path = tmp_path / name
    content = f"the user's own {name}\n".encode()
    path.write_bytes(content)
    return str(path), content


def _plant(link: str, target: str) -> None:
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(target, link)


# --------------------------------------------------------------- 1. writes through links
def test_training_never_writes_through_a_planted_lock_or_metadata_link(trained, tmp_path, capsys):
    """`train/.lock` and `train/vocab_metadata.tsv` linked to outside files: training
    used to overwrite both (the lock's target got `{"pid": ...}`) and delete the link."""
    root = _copy(trained, "planted")
    lock_target, lock_bytes = _outside(tmp_path, "lock_target")
    meta_target, meta_bytes = _outside(tmp_path, "metadata_target")
    config_target, config_bytes = _outside(tmp_path, "projector_target")
    lock = os.path.join(root, "train", ".lock")
    metadata = os.path.join(root, "train", "vocab_metadata.tsv")
    config = os.path.join(root, "train", "projector_config.pbtxt")
    _plant(lock, lock_target)
    _plant(metadata, meta_target)
    _plant(config, config_target)  # TensorBoard's own writer opened it for writing
    args = helpers.run_args(trained, "planted", max_steps=5)
    assert helpers.run_main_in_process(args) == 2
    assert _errors(capsys.readouterr().err) == [
        f"error: {lock} {LINK_ERROR.format(target=lock_target)} in its folders (it could "
        "overwrite or delete the file it points to): remove the link (what it points to is "
        "left alone)"
    ]
    assert os.path.islink(lock), "the refusal must not delete the user's link"
    # With the lock's link gone, training runs; the metadata link is replaced by the
    # file (a rename), never written through.
    os.remove(lock)
    assert helpers.run_main_in_process(args) == 0
    targets = ((lock_target, lock_bytes), (meta_target, meta_bytes))
    for path, content in (*targets, (config_target, config_bytes)):
        with open(path, "rb") as f:
            assert f.read() == content
    assert not os.path.islink(metadata) and not os.path.islink(config)
    with open(config, encoding="utf-8") as f:
        assert 'metadata_path: "vocab_metadata.tsv"' in f.read()
    with open(metadata, encoding="utf-8") as f:
        assert f.readline() == "[UNK]\n"


def test_a_lock_file_with_another_name_is_refused(trained, tmp_path, capsys):
    """A hard link (same file, two names) is not caught by O_NOFOLLOW."""
    root = _copy(trained, "hardlinked")
    target, content = _outside(tmp_path, "hard_target")
    os.link(target, os.path.join(root, "train", ".lock"))
    assert helpers.run_main_in_process(helpers.run_args(trained, "hardlinked", max_steps=4)) == 2
    (line,) = _errors(capsys.readouterr().err)
    assert "has 1 other hard link(s); writing it would change the file of those names" in line
    with open(target, "rb") as f:
        assert f.read() == content


def test_eval_never_writes_through_its_lock_link(trained, tmp_path, capsys):
    root = _copy(trained, "evallink")
    target, content = _outside(tmp_path, "eval_lock_target")
    os.makedirs(os.path.join(root, "eval"))
    lock = os.path.join(root, "eval", ".lock")
    _plant(lock, target)
    args = helpers.run_args(trained, "evallink", mode="eval", max_eval_iterations=1)
    assert helpers.run_main_in_process(args) == 2
    (line,) = _errors(capsys.readouterr().err)
    assert line.startswith(f"error: {lock} {LINK_ERROR.format(target=target)}")
    with open(target, "rb") as f:
        assert f.read() == content
    assert os.path.islink(lock)


@pytest.mark.parametrize("sub", ["train", "eval"])
def test_a_linked_experiment_folder_is_refused_by_every_mode(trained, tmp_path, sub, capsys):
    """train/ or eval/ a link to another folder: a run would rotate, delete and load the
    checkpoints there (the other experiment's). Refused by train, eval, decode and the
    commands and API over a trained experiment."""
    import pointer_generator as pg
    from pointer_generator.cli import entry
    from pointer_generator.errors import OutputError

    root = _copy(trained, f"linked_{sub}")
    elsewhere = tmp_path / f"elsewhere_{sub}"
    sub_dir = os.path.join(root, sub)
    if os.path.isdir(sub_dir):
        shutil.move(sub_dir, elsewhere)
    else:
        os.makedirs(elsewhere)
    before = sorted(os.listdir(elsewhere))
    os.symlink(elsewhere, sub_dir)
    expected = f"error: {sub_dir} is a symbolic link (to {elsewhere}); an experiment's folders"
    for mode in ("train", "eval", "decode"):
        flags = {"max_steps": 5} if mode == "train" else {"max_eval_iterations": 1}
        if mode == "decode":
            flags = {"single_pass": True}
        args = helpers.run_args(trained, f"linked_{sub}", mode=mode, **flags)
        assert helpers.run_main_in_process(args) == 2, mode
        (line,) = _errors(capsys.readouterr().err)
        assert line.startswith(expected), (mode, line)
    with pytest.raises(OutputError, match="an experiment's folders must be its own"):
        pg.Summarizer.from_experiment(trained.log_root, f"linked_{sub}")
    base = [f"--log_root={trained.log_root}", f"--exp_name=linked_{sub}"]
    article = tmp_path / "article.txt"
    article.write_text("w1 w2 w3 .")
    for command, extra in (
        ("summarize", [str(article)]),
        ("export", [f"--export_dir={tmp_path}/x"]),
    ):
        assert entry.run_subcommand(command, [*base, *extra]) == 2, command
        (line,) = _errors(capsys.readouterr().err)
        assert line.startswith(expected), (command, line)
    assert sorted(os.listdir(elsewhere)) == before


def test_decode_never_writes_through_links_in_its_folder(trained, tmp_path, capsys):
    """ROUGE_results.txt, p_gens.tsv and decoded/ linked out of a decode folder."""
    root = _copy(trained, "decodelinks")
    args = helpers.run_args(
        trained, "decodelinks", mode="decode", single_pass=True, min_dec_steps=1, max_dec_steps=4
    )
    assert helpers.run_main_in_process(args) == 0
    (folder,) = [d for d in os.listdir(root) if d.startswith("decode_")]
    folder = os.path.join(root, folder)
    capsys.readouterr()

    rouge_target, rouge_bytes = _outside(tmp_path, "rouge_target")
    _plant(os.path.join(folder, "ROUGE_results.txt"), rouge_target)
    assert helpers.run_main_in_process(args) == 0  # complete: scored again, file replaced
    assert not os.path.islink(os.path.join(folder, "ROUGE_results.txt"))
    with open(rouge_target, "rb") as f:
        assert f.read() == rouge_bytes

    p_gens = os.path.join(folder, "p_gens.tsv")
    p_gens_target, p_gens_bytes = _outside(tmp_path, "p_gens_target")
    _plant(p_gens, p_gens_target)
    os.remove(os.path.join(folder, "decoded", "000004_decoded.txt"))  # one example to redo
    capsys.readouterr()
    assert helpers.run_main_in_process(args) == 2
    (line,) = _errors(capsys.readouterr().err)
    assert line.startswith(f"error: {p_gens} {LINK_ERROR.format(target=p_gens_target)}")
    with open(p_gens_target, "rb") as f:
        assert f.read() == p_gens_bytes

    os.remove(p_gens)
    decoded = os.path.join(folder, "decoded")
    elsewhere = tmp_path / "decoded_elsewhere"
    shutil.move(decoded, elsewhere)
    os.symlink(elsewhere, decoded)
    before = sorted(os.listdir(elsewhere))
    assert helpers.run_main_in_process(args) == 2
    (line,) = _errors(capsys.readouterr().err)
    assert line.startswith(f"error: {decoded} {LINK_ERROR.format(target=elsewhere)}")
    assert sorted(os.listdir(elsewhere)) == before


# --------------------------------------------------- 2. a state file naming other models
def _foreign_state_file(trained, tmp_path, name: str) -> tuple[str, str]:
    """An experiment whose `train/checkpoint` names another experiment's checkpoint
    (a copy of this one elsewhere). Returns (experiment root, the foreign prefix)."""
    root = _copy(trained, name)
    elsewhere = tmp_path / "elsewhere" / "train"
    os.makedirs(elsewhere)
    for suffix in (".index", ".data-00000-of-00001"):  # step 7 there, to tell them apart
        shutil.copy(os.path.join(root, "train", f"model.ckpt-3{suffix}"), elsewhere)
        os.rename(elsewhere / f"model.ckpt-3{suffix}", elsewhere / f"model.ckpt-7{suffix}")
    foreign = str(elsewhere / "model.ckpt-7")
    with open(os.path.join(root, "train", "checkpoint"), "w", encoding="utf-8") as f:
        f.write(f'model_checkpoint_path: "{foreign}"\nall_model_checkpoint_paths: "{foreign}"\n')
    return root, foreign


def test_every_reader_ignores_a_state_file_naming_another_experiments_checkpoint(
    trained, tmp_path, capfd, caplog
):
    import pointer_generator as pg
    from pointer_generator.cli import entry
    from pointer_generator.runtime import checkpointing

    root, foreign = _foreign_state_file(trained, tmp_path, "foreign_readers")
    own = os.path.join(root, "train", "model.ckpt-3")
    train_dir = os.path.join(root, "train")
    assert checkpointing.latest_checkpoint(train_dir) == own
    warning = (
        f"{train_dir}/checkpoint names {foreign}, which is not a checkpoint of this folder; ignored"
    )
    article = tmp_path / "article.txt"
    article.write_text("w1 w2 w3 w4 . w5 w6 w7 .")
    caplog.set_level(logging.INFO)
    status = entry.run_subcommand(
        "summarize", [f"--log_root={trained.log_root}", "--exp_name=foreign_readers", str(article)]
    )
    assert status == 0
    assert f"Loaded checkpoint {own}" in caplog.text
    assert f"Loaded checkpoint {foreign}" not in caplog.text
    caplog.clear()
    pg.Summarizer.from_experiment(trained.log_root, "foreign_readers")
    assert f"Loaded checkpoint {own}" in caplog.text and foreign not in caplog.text.replace(
        warning, ""
    )
    # Eval and decode read train/ the same way.
    args = helpers.run_args(trained, "foreign_readers", mode="eval", max_eval_iterations=1)
    assert helpers.run_main_in_process(args) == 0
    assert "(checkpoint model.ckpt-3)" in caplog.text
    assert "bestmodel-3.index" in os.listdir(os.path.join(root, "eval"))


def test_checkpoint_files_that_are_links_are_not_this_folders(trained, tmp_path):
    """`model.ckpt-9.*` linked to another experiment's files: not loaded, never rotated."""
    from pointer_generator.runtime import checkpointing

    root, _ = _foreign_state_file(trained, tmp_path, "linked_ckpt")
    train_dir = os.path.join(root, "train")
    for suffix in (".index", ".data-00000-of-00001"):
        os.symlink(
            str(tmp_path / "elsewhere" / "train" / f"model.ckpt-7{suffix}"),
            os.path.join(train_dir, f"model.ckpt-9{suffix}"),
        )
    assert checkpointing.latest_checkpoint(train_dir) == os.path.join(train_dir, "model.ckpt-3")


def test_a_decode_shard_pin_naming_another_checkpoint_is_refused(trained, tmp_path, capsys):
    _copy(trained, "pinned")
    flags = dict(single_pass=True, decode_shards=2, min_dec_steps=1, max_dec_steps=4)
    args = helpers.run_args(trained, "pinned", mode="decode", decode_shard=0, **flags)
    assert helpers.run_main_in_process(args) == 0
    out = capsys.readouterr().out
    pin = out.split("Pinned ", 1)[1].split("(", 1)[1].split(")", 1)[0]
    elsewhere = str(tmp_path / "other" / "train" / "model.ckpt-3")
    with open(pin, "w", encoding="utf-8") as f:
        f.write(f'{{"checkpoint": "{elsewhere}"}}\n')
    args = helpers.run_args(trained, "pinned", mode="decode", decode_shard=1, **flags)
    assert helpers.run_main_in_process(args) == 2
    (line,) = _errors(capsys.readouterr().err)
    assert line.startswith(f"error: the decode shards' pin file {pin} names {elsewhere}, which")


# ------------------------------------------------------------------------- 5. the umask
def test_what_a_run_writes_follows_the_umask(trained, tmp_path):
    """With umask 027: settings.json and the vocabulary copy were 0600 (mkstemp), an
    export folder 0700 (mkdtemp); now 0640 and 0750, like TensorFlow's checkpoints."""
    from pointer_generator.cli import entry

    old = os.umask(0o027)
    try:
        assert helpers.run_main_in_process(helpers.run_args(trained, "masked", max_steps=2)) == 0
        export_dir = str(tmp_path / "exported" / "1")
        status = entry.run_subcommand(
            "export",
            [f"--log_root={trained.log_root}", "--exp_name=masked", f"--export_dir={export_dir}",
             "--beam_size=2", "--min_dec_steps=1", "--max_dec_steps=4"],
        )  # fmt: skip
        assert status == 0
    finally:
        os.umask(old)
    root = os.path.join(trained.log_root, "masked")
    files = ["settings.json", "vocab", "train/vocab_metadata.tsv", "train/checkpoint"]
    for name in files:
        assert stat.S_IMODE(os.stat(os.path.join(root, name)).st_mode) == 0o640, name
    assert stat.S_IMODE(os.stat(export_dir).st_mode) == 0o750
    for dirpath, dirnames, filenames in os.walk(export_dir):
        for d in dirnames:
            assert stat.S_IMODE(os.stat(os.path.join(dirpath, d)).st_mode) == 0o750, d
        for name in filenames:
            assert stat.S_IMODE(os.stat(os.path.join(dirpath, name)).st_mode) == 0o640, name


# ------------------------------------------------------------ 7. a killed best-model save
def test_eval_removes_a_killed_best_model_save_and_nothing_else(trained, capsys):
    """`kill -9` during eval's best-model save left `eval/bestmodel-N_temp/` (86 MB at
    the paper's size) for good: the clean-up ran for train/ only."""
    root = _copy(trained, "killed_best")
    eval_dir = os.path.join(root, "eval")
    leftover = os.path.join(eval_dir, "bestmodel-2_temp")
    os.makedirs(leftover)
    for name in ("part-00000-of-00001.index", "part-00000-of-00001.data-00000-of-00001"):
        open(os.path.join(leftover, name), "wb").close()
    state_tmp = os.path.join(eval_dir, "checkpoint_best.tmp" + "0123456789abcdef" * 2)
    open(state_tmp, "wb").close()
    users = os.path.join(eval_dir, "bestmodel-notes_temp")
    os.makedirs(users)
    open(os.path.join(users, "mine.txt"), "w").close()
    args = helpers.run_args(trained, "killed_best", mode="eval", max_eval_iterations=1)
    assert helpers.run_main_in_process(args) == 0
    names = os.listdir(eval_dir)
    assert "bestmodel-2_temp" not in names and os.path.basename(state_tmp) not in names
    assert os.path.isfile(os.path.join(users, "mine.txt"))
    assert "bestmodel-3.index" in names


def test_a_failed_best_model_state_update_leaves_no_temporary(trained, monkeypatch, capsys):
    """A full disk while `checkpoint_best` is rewritten: one error line, exit 2, and no
    0-byte `checkpoint_best.tmp<hex>` left (TensorFlow leaves its temporary)."""
    import tensorflow as tf
    from tensorflow.python.lib.io import file_io

    root = _copy(trained, "full_state")
    write = file_io.write_string_to_file

    def full_disk(filename, contents):
        if "checkpoint_best" in filename:
            open(filename, "w").close()  # created, then the disk is full
            raise tf.errors.ResourceExhaustedError(None, None, "No space left on device")
        return write(filename, contents)

    monkeypatch.setattr(file_io, "write_string_to_file", full_disk)
    args = helpers.run_args(trained, "full_state", mode="eval", max_eval_iterations=1)
    assert helpers.run_main_in_process(args) == 2
    (line,) = _errors(capsys.readouterr().err)
    assert line.endswith("checkpoint_best: No space left on device"), line
    assert not [n for n in os.listdir(os.path.join(root, "eval")) if ".tmp" in n]


def test_a_linked_shards_folder_takes_no_shard_elsewhere(trained, tmp_path, capsys):
    """`<decode folder>/shards` a link: each shard made its folder, lock and files
    wherever it pointed, and the merge moved them back (only the last folder of a path
    was checked)."""
    root = _copy(trained, "linked_shards")
    flags = dict(single_pass=True, decode_shards=2, min_dec_steps=1, max_dec_steps=4)
    args = helpers.run_args(trained, "linked_shards", mode="decode", decode_shard=0, **flags)
    assert helpers.run_main_in_process(args) == 0
    (folder,) = [d for d in os.listdir(root) if d.startswith("decode_") and "pins" not in d]
    shards = os.path.join(root, folder, "shards")
    elsewhere = tmp_path / "shards_elsewhere"
    shutil.move(shards, elsewhere)
    os.symlink(elsewhere, shards)
    before = sorted(os.listdir(elsewhere))
    capsys.readouterr()
    args = helpers.run_args(trained, "linked_shards", mode="decode", decode_shard=1, **flags)
    assert helpers.run_main_in_process(args) == 2
    (line,) = _errors(capsys.readouterr().err)
    assert line.startswith(f"error: {shards} {LINK_ERROR.format(target=elsewhere)}"), line
    assert sorted(os.listdir(elsewhere)) == before


def test_best_model_rotation_never_deletes_another_folders_checkpoints(trained, tmp_path, caplog):
    """`eval/checkpoint_best` naming three best models of another experiment: the next
    save rotated the oldest away, deleting its files there."""
    from pointer_generator.runtime import checkpointing

    root = _copy(trained, "foreign_best")
    elsewhere = tmp_path / "other_eval"
    elsewhere.mkdir()
    foreign = []
    for step in (1, 2, 3):
        for suffix in (".index", ".data-00000-of-00001"):
            shutil.copy(
                os.path.join(root, "train", f"model.ckpt-3{suffix}"),
                elsewhere / f"bestmodel-{step}{suffix}",
            )
        foreign.append(str(elsewhere / f"bestmodel-{step}"))
    eval_dir = os.path.join(root, "eval")
    os.makedirs(eval_dir)
    entries = "".join(f'all_model_checkpoint_paths: "{p}"\n' for p in foreign)
    with open(os.path.join(eval_dir, "checkpoint_best"), "w", encoding="utf-8") as f:
        f.write(f'model_checkpoint_path: "{foreign[-1]}"\n{entries}')
    before = sorted(os.listdir(elsewhere))
    args = helpers.run_args(trained, "foreign_best", mode="eval", max_eval_iterations=1)
    caplog.set_level(logging.WARNING)
    assert helpers.run_main_in_process(args) == 0
    assert sorted(os.listdir(elsewhere)) == before
    assert "not a checkpoint of this folder; dropped from its list" in caplog.text
    best = checkpointing.latest_checkpoint(eval_dir, checkpointing.BEST_STATE_FILE)
    assert best == os.path.join(eval_dir, "bestmodel-3")
    with open(os.path.join(eval_dir, "checkpoint_best"), encoding="utf-8") as f:
        assert str(elsewhere) not in f.read()
