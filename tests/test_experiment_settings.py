"""A trained experiment's own vocabulary and settings (docs/reliability.md): the
experiment keeps a copy of its vocabulary and checks it (and any --vocab_path) against
the SHA-256 in settings.json, so a data folder made again or an experiment moved gives
the same summaries or one error; a hand-edited settings.json and a --min_dec_steps above
the stored --max_dec_steps are one error line from the command line and from
`pg.Summarizer.from_experiment`, never wrong results.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest

import pointer_generator as pg
from pointer_generator.errors import FlagError
from tests import helpers


def _errors(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("error: ")]


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


def test_the_experiment_keeps_and_checks_its_own_vocabulary(trained, tmp_path, capfd):
    """Re-making the data folder rewrote `vocab`, and decode used the new file silently
    (ROUGE-1 0.955 -> 0.501); a moved experiment lost a relative vocabulary path."""
    root = _copy(trained, "vocab_exp")
    settings = json.load(open(os.path.join(root, "settings.json")))
    assert settings["vocab"]["copy"] == "vocab"
    with open(os.path.join(root, "vocab"), "rb") as a, open(trained.vocab_path, "rb") as b:
        assert a.read() == b.read()
    decode = helpers.run_args(trained, "vocab_exp", mode="decode", single_pass=True,
                              beam_size=2, max_dec_steps=4, vocab_path="")  # fmt: skip
    decode = [a for a in decode if not a.startswith("--vocab_path")]
    assert helpers.run_main_in_process(decode) == 0
    folder = os.path.join(root, [d for d in os.listdir(root) if d.startswith("decode_")][0])
    first = _decoded(folder)
    os.rename(folder, folder + ".first")
    capfd.readouterr()
    # The data folder is made again: its vocabulary changes; the experiment's does not.
    moved_vocab = str(tmp_path / "vocab.orig")
    shutil.move(trained.vocab_path, moved_vocab)
    try:
        with open(trained.vocab_path, "w") as f:
            f.write("".join(f"other{i} {100 - i}\n" for i in range(60)))
        assert helpers.run_main_in_process(decode) == 0
        assert _errors(capfd.readouterr().err) == []
        assert _decoded(folder) == first and len(first) == 5  # the same summaries
        # --vocab_path naming the changed file is refused.
        given = [*decode, f"--vocab_path={trained.vocab_path}"]
        assert helpers.run_main_in_process(given) == 2
        errors = _errors(capfd.readouterr().err)
        assert len(errors) == 1 and "is not the vocabulary this experiment was trained" in errors[0]
        assert os.path.join(root, "vocab") in errors[0]
        # The experiment's own copy, edited: one error naming it.
        with open(os.path.join(root, "vocab"), "a") as f:
            f.write("extra 1\n")
        assert helpers.run_main_in_process(decode) == 2
        errors = _errors(capfd.readouterr().err)
        assert len(errors) == 1 and errors[0].startswith(
            f"error: {os.path.join(root, 'vocab')} is not"
        )
    finally:
        os.replace(moved_vocab, trained.vocab_path)


def _decoded(folder: str) -> dict:
    sub = os.path.join(folder, "decoded")
    return {n: open(os.path.join(sub, n)).read() for n in sorted(os.listdir(sub))}


def test_a_moved_experiment_still_works(trained, tmp_path, capfd):
    src = _copy(trained, "to_move")
    new_root = tmp_path / "elsewhere" / "logs"
    new_root.mkdir(parents=True)
    shutil.move(src, new_root / "moved")
    saved = trained.vocab_path + ".away"
    os.replace(trained.vocab_path, saved)  # the data folder is gone too
    try:
        summarizer = pg.Summarizer.from_experiment(str(new_root), "moved", beam_size=2)
        assert summarizer.summarize(["w3 w4 w5 said . w6 w7 ."])[0].tokens
    finally:
        os.replace(saved, trained.vocab_path)


def test_an_older_experiment_without_a_copy_checks_the_vocabulary_it_names(trained, capfd):
    root = _copy(trained, "old_style")
    path = os.path.join(root, "settings.json")
    settings = json.load(open(path))
    del settings["vocab"]["copy"]
    json.dump(settings, open(path, "w"))
    os.remove(os.path.join(root, "vocab"))
    decode = [a for a in helpers.run_args(trained, "old_style", mode="decode", single_pass=True)
              if not a.startswith("--vocab_path")]  # fmt: skip
    saved = open(trained.vocab_path, "rb").read()
    try:
        with open(trained.vocab_path, "ab") as f:
            f.write(b"zzz 1\n")
        assert helpers.run_main_in_process(decode) == 2
        errors = _errors(capfd.readouterr().err)
        assert len(errors) == 1 and "changed since this experiment was trained" in errors[0]
    finally:
        open(trained.vocab_path, "wb").write(saved)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda s: s.update(flags=[1, 2]), '"flags" must be an object'),
        (lambda s: s.update(vocab="x"), '"vocab" must be an object'),
        (
            lambda s: s["flags"].update(hidden_dim="abc"),
            '"hidden_dim" must be an integer, got "abc"',
        ),
        (lambda s: s["flags"].update(hidden_dim=None), '"hidden_dim" must be an integer, got null'),
        (lambda s: s["flags"].update(hidden_dim=24.7), '"hidden_dim" must be an integer, got 24.7'),
        (lambda s: s["flags"].update(pointer_gen=1), '"pointer_gen" must be true or false'),
        (lambda s: s["flags"].update(secret=1), "'secret', which is not a model setting"),
        (lambda s: s["flags"].update(hidden_dim=-8), "--hidden_dim must be positive, got -8"),
        (lambda s: s.clear(), '"flags" must be an object'),
    ],
    ids=[
        "flags_list",
        "vocab_str",
        "str",
        "null",
        "float",
        "int_bool",
        "unknown",
        "negative",
        "empty",
    ],  # fmt: skip
)
def test_a_hand_edited_settings_file_is_one_error_line(trained, capfd, edit, message):
    name = f"settings_{len(os.listdir(trained.log_root))}"
    root = _copy(trained, name)
    path = os.path.join(root, "settings.json")
    settings = json.load(open(path))
    edit(settings)
    json.dump(settings, open(path, "w"))
    decode = [a for a in helpers.run_args(trained, name, mode="decode", single_pass=True)
              if not a.startswith(("--vocab_path", "--hidden_dim"))]  # fmt: skip
    assert helpers.run_main_in_process(decode) == 2
    errors = _errors(capfd.readouterr().err)
    assert len(errors) == 1 and message in errors[0], errors
    if "--hidden_dim" not in message:
        assert path in errors[0]
    with pytest.raises(FlagError, match=message.replace("(", r"\(").replace("[", r"\[")):
        pg.Summarizer.from_experiment(trained.log_root, name)


def test_min_dec_steps_above_the_experiments_max_is_refused(trained, capfd):
    decode = helpers.run_args(trained, "exp", mode="decode", single_pass=True, min_dec_steps=9)
    decode = [a for a in decode if not a.startswith("--max_dec_steps")]  # stored: 8
    assert helpers.run_main_in_process(decode) == 2
    errors = _errors(capfd.readouterr().err)
    assert len(errors) == 1 and "--min_dec_steps=9 is above --max_dec_steps=8" in errors[0]
    with pytest.raises(FlagError, match="min_dec_steps=9 is above max_dec_steps=8"):
        pg.Summarizer.from_experiment(trained.log_root, "exp", min_dec_steps=9)
