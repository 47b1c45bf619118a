"""An experiment remembers how it was made (issue 19): training stores its model flags and
vocabulary (settings.json), later commands take them without being told, a flag that
contradicts them is one error, another vocabulary is refused, and the search saved with
`--mode=decode --save_search` is the default of `summarize` and `pg.Summarizer`."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from pointer_generator.runtime.progress import unstamped
from tests import helpers, trained_experiment


def _errors(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("error: ")]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    return trained_experiment.build(tmp_path_factory)


def _eval_args(trained) -> list[str]:
    """A single-pass eval of the trained experiment naming no model flag or vocabulary."""
    return trained_experiment.mode_args(trained, "eval", "--fused_recurrence=0")


def test_training_stores_the_model_flags_and_the_vocabulary(trained):
    with open(os.path.join(trained.exp_dir, "settings.json"), encoding="utf-8") as f:
        stored = json.load(f)
    assert stored["flags"] == {
        "model": "pointer_generator",
        "hidden_dim": 12,
        "emb_dim": 6,
        "vocab_size": 100,
        "pointer_gen": True,
        "coverage": False,
        # (only its own family's model flags: no ABS or RAS option, issue 43)
        "optimizer": "adagrad",
        "max_enc_steps": 20,
        "max_dec_steps": 8,
        "static_shapes": None,  # the default: length buckets
        "length_buckets": 4,
        "decoder_buckets": 1,
    }
    assert stored["vocab"]["path"] == os.path.abspath(trained.vocab_path)
    assert len(stored["vocab"]["sha256"]) == 64


def test_later_commands_take_the_stored_settings(trained, capfd):
    # Only what the mode needs: no model flag, no vocabulary (the TINY sizes are not given).
    args = _eval_args(trained)
    assert helpers.run_main_in_process(args) == 0, capfd.readouterr().err[-2000:]
    assert "Single-pass eval of model.ckpt-3 (step 3)" in capfd.readouterr().out


def test_the_stored_padding_is_the_default_of_later_commands(trained, tmp_path):
    """An experiment trained with --static_shapes=0 --length_buckets=2 pads its eval and
    decode batches that way unless a command says otherwise (not an error)."""
    from absl import flags as absl_flags

    from pointer_generator.cli import configs, stored_settings
    from pointer_generator.cli.flags import define_flags

    root = tmp_path / "exp"
    root.mkdir()
    with open(os.path.join(trained.exp_dir, "settings.json"), encoding="utf-8") as f:
        stored = json.load(f)
    stored["flags"].update(static_shapes=False, length_buckets=2)
    (root / "settings.json").write_text(json.dumps(stored), encoding="utf-8")
    shutil.copy(os.path.join(trained.exp_dir, "vocab"), root / "vocab")
    for given, want in (([], (False, 2)), (["--length_buckets=3", "--static_shapes=1"], (True, 3))):
        fv = define_flags(absl_flags.FlagValues())
        fv(["prog", f"--log_root={tmp_path}", "--exp_name=exp", *given])
        stored_settings.apply(fv, "eval")
        hps = configs.hparams(fv)
        assert (hps.static_shapes, hps.length_buckets) == want


def test_an_experiment_remembers_its_ras_attention_and_older_ones_read_as_the_papers(
    trained, tmp_path
):
    """--ras_attention has no weight of its own: eval and decode take it from the stored
    settings, and settings written before the flag existed mean the paper's dot product."""
    from absl import flags as absl_flags

    from pointer_generator.cli import configs, stored_settings
    from pointer_generator.cli.flags import define_flags
    from pointer_generator.models.ras_model import RASModel

    with open(os.path.join(trained.exp_dir, "settings.json"), encoding="utf-8") as f:
        stored = json.load(f)
    stored["flags"].update(model="ras_elman", max_positions=20)
    for name, extra in (("cos", dict(ras_attention="cosine", ras_attention_scale=4.0)),
                        ("old", None)):  # fmt: skip
        flags_of = dict(stored["flags"], **(extra or {}))
        if extra is None:
            flags_of.pop("ras_attention", None), flags_of.pop("ras_attention_scale", None)
        (tmp_path / name).mkdir()
        (tmp_path / name / "settings.json").write_text(
            json.dumps(dict(stored, flags=flags_of)), encoding="utf-8"
        )
        shutil.copy(os.path.join(trained.exp_dir, "vocab"), tmp_path / name / "vocab")
    for name, want in (("cos", ("cosine", 4.0)), ("old", ("dot", 10.0))):
        fv = define_flags(absl_flags.FlagValues())
        fv(["prog", f"--log_root={tmp_path}", f"--exp_name={name}"])
        stored_settings.apply(fv, "decode")
        hps = configs.hparams(fv)
        config = RASModel.from_hparams(hps, 100).config
        assert (config.attention, config.attention_scale) == want


@pytest.mark.parametrize(
    "flag, message",
    [
        ("--hidden_dim=16", "--hidden_dim=16 contradicts this experiment's hidden_dim=12"),
        ("--pointer_gen=0", "--pointer_gen=0 contradicts this experiment's pointer_gen=1"),
        ("--coverage=1", "--coverage=1 contradicts this experiment's coverage=0"),
    ],
)
def test_a_flag_that_contradicts_the_stored_settings_is_one_error(trained, capfd, flag, message):
    args = trained_experiment.mode_args(trained, "decode", flag)
    assert helpers.run_main_in_process(args) == 2
    errors = _errors(capfd.readouterr().err)
    assert len(errors) == 1 and errors[0].startswith(f"error: {message} (stored in "), errors


def test_another_vocabulary_is_refused_and_the_original_habit_still_works(trained, capfd, tmp_path):
    other = tmp_path / "other_vocab"
    helpers.write_vocab(str(other), 120)
    with open(other, "a", encoding="utf-8") as f:
        f.write("extra 1\n")
    base = _eval_args(trained)
    assert helpers.run_main_in_process([*base, f"--vocab_path={other}"]) == 2
    errors = _errors(capfd.readouterr().err)
    assert errors[0].startswith(f"error: --vocab_path {other} is not the vocabulary this ")
    # Repeating every flag, as the original required, is fine.
    same = [*base, f"--vocab_path={trained.vocab_path}", "--hidden_dim=12", "--emb_dim=6"]
    assert helpers.run_main_in_process(same + ["--vocab_size=100"]) == 0


def test_a_saved_search_is_the_default_of_summarize_and_a_plain_decode_changes_nothing(
    trained, capfd, tmp_path
):
    """Issue 45 item 2: only `--mode=decode --save_search` sets the search of summarize,
    serve, export and pg.Summarizer; a decode with other settings (the flag defaults)
    leaves it; summarize says which search it runs and where it came from."""
    import pointer_generator as pg
    from pointer_generator.cli import configs
    from pointer_generator.runtime import experiment_settings

    root = tmp_path / "log"
    shutil.copytree(trained.exp_dir, root / "exp")
    exp = str(root / "exp")
    decode = [
        "--mode=decode",
        "--single_pass",
        f"--data_path={trained.val_path}",
        f"--log_root={root}",
        "--exp_name=exp",
    ]
    # A decode that only tries a search saves nothing.
    assert helpers.run_main_in_process([*decode, "--beam_size=3"]) == 0, capfd.readouterr().err
    assert experiment_settings.read_saved_search(exp) == ({}, None)
    assert not os.path.exists(os.path.join(exp, experiment_settings.SEARCH_FILE))
    saving = [*decode, "--beam_size=2", "--min_dec_steps=1", "--max_dec_steps=5", "--block_unk"]
    assert helpers.run_main_in_process([*saving, "--save_search"]) == 0, capfd.readouterr().err
    saved = {"beam_size": 2, "min_dec_steps": 1, "max_dec_steps": 5, "trigram_blocking": False,
             "length_penalty": 0.0, "block_unk": True}  # fmt: skip
    path = experiment_settings.search_path(exp)
    assert experiment_settings.read_saved_search(exp) == (saved, path)
    # Another decode with the defaults (beam 4, min 35, max the training length): no change.
    assert helpers.run_main_in_process(decode) == 0, capfd.readouterr().err[-2000:]
    assert experiment_settings.read_saved_search(exp) == (saved, path)
    settings = pg.Summarizer.from_experiment(str(root), "exp").decoder.settings
    assert (settings.beam_size, settings.min_dec_steps, settings.max_dec_steps) == (2, 1, 5)
    assert settings.block_unk and settings.length_penalty is None
    given = pg.Summarizer.from_experiment(str(root), "exp", beam_size=3).decoder.settings
    assert (given.beam_size, given.min_dec_steps) == (3, 1)
    # The command line: the same defaults, a flag still wins.
    from absl import flags as absl_flags

    from pointer_generator.cli.flags import define_flags

    fv = define_flags(absl_flags.FlagValues())
    fv(["prog", f"--log_root={root}", "--exp_name=exp", "--min_dec_steps=3"])
    from pointer_generator.cli import stored_settings

    stored_settings.apply_trained(fv, "summarize")
    search = configs.search_settings(fv)
    assert (search.beam_size, search.min_dec_steps, search.max_dec_steps) == (2, 3, 5)
    line = stored_settings.search_line(fv)
    assert line == (
        "search: beam_size=2, min_dec_steps=3, max_dec_steps=5, trigram_blocking=false, "
        f"length_penalty=0.0, block_unk=true from the experiment's search ({path}); "
        "given: --min_dec_steps"
    ), line
    # summarize prints that line first, on stderr (its stdout holds only summaries).
    article = tmp_path / "a.txt"
    article.write_text("the cat sat on the mat . the dog ran .\n", encoding="utf-8")
    capfd.readouterr()
    summarize = ["summarize", f"--log_root={root}", "--exp_name=exp", str(article)]
    proc = helpers.run_python(["-m", "pointer_generator.cli", *summarize], timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    first = [unstamped(ln) for ln in proc.stderr.splitlines() if " search: " in ln]
    assert first == [
        "search: beam_size=2, min_dec_steps=1, max_dec_steps=5, trigram_blocking=false, "
        f"length_penalty=0.0, block_unk=true from the experiment's search ({path})"
    ], proc.stderr
    assert "search:" not in proc.stdout
    # An older experiment's last_decode.json is read when there is no search.json.
    os.remove(path)
    legacy = os.path.join(exp, experiment_settings.LEGACY_DECODE_FILE)
    with open(legacy, "w", encoding="utf-8") as f:
        json.dump({"beam_size": 3, "min_dec_steps": 2, "max_dec_steps": 6}, f)
    older = experiment_settings.read_saved_search(exp)
    assert older == ({"beam_size": 3, "min_dec_steps": 2, "max_dec_steps": 6}, legacy)
    (root / "exp" / "last_decode.json").write_text("{}")
    with pytest.raises(pg.PointerGeneratorError, match="last_decode.json is unreadable"):
        pg.Summarizer.from_experiment(str(root), "exp")
    for bad in ('{"beam_size": true}', '{"length_penalty": Infinity}', '{"beam_size": 0}',
                '{"min_dec_steps": 9, "max_dec_steps": 5}', '{"beam": 4}', "[4]"):  # fmt: skip
        (root / "exp" / "search.json").write_text(bad)
        with pytest.raises(pg.PointerGeneratorError, match="search.json is unreadable"):
            pg.Summarizer.from_experiment(str(root), "exp")
