"""One search-settings object (issue 43, item 4): every command honours every search flag
it accepts, or refuses it with one `error:` line.

The search flags are the fields of `SearchSettings`, built from the flags in one place
(`cli/configs.search_settings`). Each command (decode mode, `summarize`, `export`,
`serve`, `tune_features`, and `pg.Summarizer`) is run on a tiny ABS experiment (the
family every search option applies to, ABS+'s features included) with every search flag
set away from its default, and stopped where it builds its search: the settings that
search receives must carry every value. `serve --saved_model`, whose search was fixed at
export, must refuse each flag, and so must train and eval mode, which run no search
(--max_dec_steps excepted: it is also the summary length they train and evaluate on).
And end to end: `serve` with --trigram_blocking and --length_penalty gives the summary
`summarize` gives with them (before, it ignored both).
"""

from __future__ import annotations

import os

import pytest

import pointer_generator as pg
from pointer_generator.cli import configs, entry, flag_checks, serve, stored_settings, summarize
from pointer_generator.cli import flags as flags_lib
from pointer_generator.cli import help as help_lib
from pointer_generator.errors import FlagError
from pointer_generator.runtime import experiment_settings
from pointer_generator.search.extractive_features import read_weights
from pointer_generator.search.settings import SEARCH_FLAGS
from tests import helpers

TEXT = "W3 W4 W5 W6 said . w7 W8 W9 W10 and W4 . w11 w12 w13 w3 w4 ."
EXPERIMENT = "abs"
# Every search flag away from its default (the tiny defaults: beam 2, min 2, max 8).
SEARCH = {
    "beam_size": 3,
    "min_dec_steps": 1,
    "max_dec_steps": 6,
    "trigram_blocking": True,
    "length_penalty": 0.5,
    "full_final_dist": True,
    "block_unk": True,
    "feature_weights": None,  # the fixture's weight file
    "namas_features": True,
}
# Decoding flags that are hyper-parameters (the step reads them), fixed by an export too:
# ABS reads the first; the second is the pointer-generator's, refused for ABS (below).
MODEL_DECODE = {"max_enc_steps": 15}
FIXED_AT_EXPORT = {**MODEL_DECODE, "decode_attention": "train_consistent"}
# The decoding flags of `--help` that are no setting of the search, and why.
NOT_SEARCH = {
    "decode_batch_size": "how many articles share a batch; the summaries do not depend on it",
    "max_decode_examples": "when concurrent decoding stops",
    "decode_shards": "decode mode's split over processes",
    "decode_shard": "decode mode's split over processes",
    "continuous_batching": "deprecated, no effect in any command",
    "save_search": "whether a decode saves its search as the experiment's",
}


class _Searched(FlagError):
    """Raised where a command has built its search: the test has what it needs."""


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A tiny ABS experiment, trained a few steps, and a weight file for ABS+."""
    data = helpers.tiny_setup(tmp_path_factory.mktemp("search_flags"), n_train=8, n_val=2)
    run = helpers.run_args(data, EXPERIMENT, max_steps=3, model="abs", context_window=2)
    assert helpers.run_main_in_process(run) == 0
    data.weights = os.path.join(os.path.dirname(data.log_root), "weights.txt")
    with open(data.weights, "w", encoding="utf-8") as f:
        f.write("uni 0.5\nbi 0.25\nooo -0.1\n")
    data.experiment = [f"--log_root={data.log_root}", f"--exp_name={EXPERIMENT}"]
    return data


@pytest.fixture
def searched(monkeypatch):
    """The (settings, hyper-parameters) of every search a command builds, each build
    then stopped with `_Searched` (after the decoder accepted the settings)."""
    seen = []
    real = pg.BeamSearchDecoder.__init__

    def recording(self, model, vocab, hps, settings=None, **options):
        real(self, model, vocab, hps, settings, **options)
        seen.append((self.settings, hps))
        raise _Searched("searched")

    monkeypatch.setattr(pg.BeamSearchDecoder, "__init__", recording)
    return seen


def _flags(data, names) -> list[str]:
    """`--name=value` of each flag of `names` (booleans as 0/1, the weight file's path)."""
    values = {**SEARCH, "feature_weights": data.weights, **FIXED_AT_EXPORT}
    shown = {n: int(v) if isinstance(v, bool) else v for n, v in values.items()}
    return [f"--{n}={shown[n]}" for n in names]


def _subcommand(name: str, args: list[str]) -> int:
    """`pointer-generator <name> args...` in this process, its flags reset afterwards."""
    try:
        return entry.run_subcommand(name, args)
    finally:
        flags_lib.FLAGS.unparse_flags()


def _errors(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("error:")]


def _not_carried(data, settings, hps, names) -> list[str]:
    """The flags of `names` whose value the search's settings (or its model's
    hyper-parameters) do not carry."""
    want = {**SEARCH, "feature_weights": read_weights(data.weights), **MODEL_DECODE}
    got = {n: getattr(hps if n in MODEL_DECODE else settings, n) for n in names}
    return [n for n in names if got[n] != want[n]]


# ------------------------------------------------------------------- the flags themselves
def test_the_search_flags_are_the_fields_of_search_settings():
    """Every decoding flag of `--help` is a field of SearchSettings, a hyper-parameter
    the step reads, or named here as no setting of the search: a new search flag cannot
    be left out of the one object (nor out of this test's table)."""
    decoding = set(help_lib.FLAG_GROUPS["decoding"]) | {"max_dec_steps"}
    assert decoding - set(NOT_SEARCH) == set(SEARCH_FLAGS) | {"decode_attention"}
    assert set(SEARCH) == set(SEARCH_FLAGS) == set(help_lib.SEARCH_HELP)
    fv = helpers.flag_namespace(**{**SEARCH, "feature_weights": ""})
    settings = configs.search_settings(fv)
    assert {n: getattr(settings, n) for n in SEARCH} == {**SEARCH, "feature_weights": None}


# ---------------------------------------------------------- each command x each flag
def _all(data) -> list[str]:
    return _flags(data, [*SEARCH, *MODEL_DECODE])


# Each command on the experiment with every search flag; `out` names a new file or folder.
COMMANDS = {
    "decode": lambda data, out: helpers.run_main_in_process(
        ["--mode=decode", "--single_pass", f"--data_path={data.val_path}"]
        + [*data.experiment, *_all(data)]
    ),
    "summarize": lambda data, out: _subcommand(
        "summarize", [*data.experiment, *_all(data), _article(out)]
    ),
    "export": lambda data, out: _subcommand(
        "export", [*data.experiment, *_all(data), f"--export_dir={out}"]
    ),
    "serve": lambda data, out: _subcommand("serve", [*data.experiment, *_all(data)]),
    "tune_features": lambda data, out: _subcommand(
        "tune_features",
        [*data.experiment, *_all(data), f"--data_path={data.val_path}", f"--weights_out={out}"],
    ),
}


def _article(out: str) -> str:
    path = out + ".txt"
    with open(path, "w", encoding="utf-8") as f:
        f.write(TEXT)
    return path


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_searches_with_every_search_flag(command, data, searched, tmp_path, capfd):
    status = COMMANDS[command](data, str(tmp_path / "out"))
    err = capfd.readouterr().err
    # Stopped where the search was built, and by nothing else: no flag was refused.
    assert status == 2 and _errors(err) == ["error: searched"], err[-2000:]
    (settings, hps), *_ = searched
    assert _not_carried(data, settings, hps, [*SEARCH, *MODEL_DECODE]) == []


def test_the_python_api_searches_with_every_search_setting(data, searched):
    root = data.log_root
    options = {**SEARCH, "feature_weights": data.weights}
    with pytest.raises(_Searched):
        pg.Summarizer.from_experiment(root, EXPERIMENT, max_enc_steps=15, **options)
    settings, hps = searched[-1]
    assert _not_carried(data, settings, hps, list(SEARCH)) == [] and hps.max_enc_steps == 15
    # The same as one object, the form the command line hands every search.
    whole = pg.SearchSettings(**{**SEARCH, "feature_weights": read_weights(data.weights)})
    with pytest.raises(_Searched):
        pg.Summarizer.from_experiment(root, EXPERIMENT, search=whole)
    settings, hps = searched[-1]
    assert settings == whole and hps.max_dec_steps == 6
    with pytest.raises(FlagError, match="unknown decode options"):
        pg.Summarizer.from_experiment(root, EXPERIMENT, trigram_block=True)


@pytest.mark.parametrize("flag", ["--decode_attention=train_consistent", "--nofused_recurrence"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_setting_the_family_does_not_read_is_refused(
    command, flag, data, tmp_path, capfd, monkeypatch, searched
):
    """--decode_attention and --fused_recurrence are the pointer-generator's: with the ABS
    experiment, every command that searches refuses them (before, each accepted them and
    ignored them). Were one not refused, the command would stop where it builds its
    search ("error: searched") and serve before it listens."""
    helpers.stop_serve_before_listening(monkeypatch)
    runs = {
        "decode": lambda: helpers.run_main_in_process(
            ["--mode=decode", "--single_pass", f"--data_path={data.val_path}", *args]
        ),
        "summarize": lambda: _subcommand("summarize", [*args, _article(str(tmp_path / "a"))]),
        "export": lambda: _subcommand("export", [*args, f"--export_dir={tmp_path / 'e'}"]),
        "serve": lambda: _subcommand("serve", args),
        "tune_features": lambda: _subcommand(
            "tune_features", [*args, f"--data_path={data.val_path}", f"--weights_out={tmp_path}/w"]
        ),
    }
    args = [*data.experiment, flag]
    name = flag.split("=")[0].removeprefix("--no").removeprefix("--")
    assert runs[command]() == 2
    assert _errors(capfd.readouterr().err) == [
        f"error: --{name} is no setting of --model=abs (its models do not read it): drop it"
    ]


@pytest.mark.parametrize("flag", [*SEARCH, *FIXED_AT_EXPORT])
def test_serve_of_an_exported_model_refuses_each_search_flag(flag, data, tmp_path, capfd):
    """The export fixed its search: a flag that would change it is one error line (the
    folder is not even read: the flags are checked first)."""
    status = _subcommand("serve", [f"--saved_model={tmp_path}", *_flags(data, [flag])])
    errors = _errors(capfd.readouterr().err)
    assert status == 2 and len(errors) == 1, errors
    assert errors[0] == (
        f"error: --{flag}: an exported model's search settings were fixed when it was "
        "exported; export it again with them (pointer-generator export)"
    )


# ------------------------------------------------------- the modes that run no search
# The search flags train and eval mode refuse: all but --max_dec_steps, which is also a
# hyper-parameter (the length of the summaries they train and evaluate on).
NOT_IN_TRAINING = [name for name in SEARCH if name != "max_dec_steps"]


def _refusal(flag: str, mode: str) -> str:
    return (
        f"error: --{flag} sets the search, which --mode={mode} does not run (it is for "
        "--mode=decode, summarize, export, serve, tune_features); drop it"
    )


def _mode_args(data, mode: str) -> list[str]:
    """A run of `mode` that would end soon if it ran at all: training a new experiment
    for one step; one pass of eval over the trained experiment."""
    if mode == "train":
        return helpers.run_args(data, "never_made", max_steps=1)
    return helpers.run_args(data, EXPERIMENT, "eval", single_pass=True)


@pytest.mark.parametrize("mode", ["train", "eval"])
@pytest.mark.parametrize("flag", NOT_IN_TRAINING)
def test_train_and_eval_mode_refuse_each_search_flag(flag, mode, data, capfd):
    """Before, train and eval mode took every search flag and ignored it."""
    status = helpers.run_main_in_process([*_mode_args(data, mode), *_flags(data, [flag])])
    errors = _errors(capfd.readouterr().err)
    assert status == 2 and errors == [_refusal(flag, mode)], errors
    assert not os.path.exists(os.path.join(data.log_root, "never_made"))  # nothing started


@pytest.mark.parametrize(
    "flag, mode",
    [("--save_search", "train"), ("--save_search", "eval"), ("--eval_idle_secs=5", "train"),
     ("--log_every_secs=5", "eval"), ("--decode_batch_size=4", "train"),
     ("--attention_pages=3", "eval"), ("--max_decode_examples=3", "train"),
     ("--readable_summaries", "eval"), ("--rouge_per_document", "train")],
)  # fmt: skip
def test_a_flag_of_another_mode_is_one_error(data, capfd, flag, mode):
    """A flag only one mode reads (save_search: decode; eval_idle_secs: eval;
    log_every_secs: train) given to another is refused, not silently ignored."""
    name = flag[2:].split("=")[0]
    status = helpers.run_main_in_process([*_mode_args(data, mode), flag])
    errors = _errors(capfd.readouterr().err)
    owner = flag_checks.MODE_ONLY_FLAGS[name]
    want = f"error: --{name} is for --mode={owner}; --mode={mode} ignores it: drop it"
    assert status == 2 and errors == [want], errors
    assert not os.path.exists(os.path.join(data.log_root, "never_made"))  # nothing started


def test_a_search_flag_set_off_is_refused_too(data, capfd):
    """A flag given is refused whatever its value: train mode would ignore it all the same."""
    args = [*_mode_args(data, "train"), "--notrigram_blocking", "--length_penalty=0"]
    status = helpers.run_main_in_process(args)
    errors = _errors(capfd.readouterr().err)
    assert status == 2 and errors == [_refusal("trigram_blocking", "train")], errors


def test_the_command_line_refuses_a_search_flag_of_train_mode_in_one_line(data):
    """The console command: one line and status 2, before TensorFlow is imported."""
    proc = helpers.run_cli([*_mode_args(data, "train"), "--beam_size=3"], timeout=60)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and lines == [_refusal("beam_size", "train")], proc.stderr


def test_stored_search_values_are_not_refused_and_max_dec_steps_is_a_training_flag(data, capfd):
    """The experiment's stored values (settings.json; search.json, which the commands
    that search read) are not given on the command line: eval mode runs with
    them, and with --max_dec_steps, the length it evaluates on."""
    root = os.path.join(data.log_root, EXPERIMENT)
    experiment_settings.save_search(
        root,
        {"beam_size": 3, "min_dec_steps": 1, "max_dec_steps": 5, "trigram_blocking": False,
         "length_penalty": 0.0, "block_unk": False},
    )  # fmt: skip
    try:
        fv = flags_lib.FLAGS
        fv(["prog", "--mode=eval", *data.experiment])
        try:
            stored_settings.apply(fv, "eval", saved_search=True)
            assert (fv.beam_size, fv.min_dec_steps, fv.max_dec_steps) == (3, 1, 5)
            assert [n for n in SEARCH_FLAGS if fv[n].present] == []
            flag_checks.check_no_search(fv)  # nothing refused
        finally:
            fv.unparse_flags()
        args = [*_mode_args(data, "eval"), "--max_dec_steps=6"]
        assert helpers.run_main_in_process(args) == 0, capfd.readouterr().err[-2000:]
    finally:
        os.remove(experiment_settings.search_path(root))


def test_run_args_gives_the_tiny_search_to_decode_mode_only(data):
    """The test helpers' command lines follow the rule: no search flag for train and eval
    unless a test asks for one."""
    for mode in ("train", "eval"):
        args = helpers.run_args(data, EXPERIMENT, mode)
        assert not [a for a in args if a.split("=")[0][2:] in NOT_IN_TRAINING], args
        assert "--max_dec_steps=8" in args
    assert {"--beam_size=2", "--min_dec_steps=2"} <= set(
        helpers.run_args(data, EXPERIMENT, "decode")
    )


@pytest.mark.parametrize("command", ["summarize", "serve", "export"])
def test_the_commands_that_search_list_every_search_flag_in_their_help(command):
    from pointer_generator.cli import export

    module = {"summarize": summarize, "serve": serve, "export": export}[command]
    text = module.help_text(flags_lib.FLAGS)
    missing = [n for n in [*SEARCH_FLAGS, *FIXED_AT_EXPORT] if f"--{n}:" not in text]
    assert missing == []


# ----------------------------------------------------------------------- end to end
def _served(monkeypatch, args: list[str]):
    """The summarizer `serve args...` builds (not warmed up, stopped before it listens)."""
    services = helpers.stop_serve_before_listening(monkeypatch)
    assert _subcommand("serve", args) == 0
    return services[0].summarizer


def _summarized(args: list[str], path: str, capfd) -> list[str]:
    capfd.readouterr()
    assert _subcommand("summarize", [*args, "--tokens", path]) == 0
    return capfd.readouterr().out.split()


def test_serve_gives_summarizes_summary_with_trigram_blocking_and_a_length_penalty(
    data, monkeypatch, tmp_path, capfd
):
    article = tmp_path / "article.txt"
    article.write_text(TEXT, encoding="utf-8")
    lengths = [*data.experiment, "--beam_size=3", "--min_dec_steps=6", "--max_dec_steps=8"]
    extras = ["--trigram_blocking", "--length_penalty=2.0"]
    plain = _summarized(lengths, str(article), capfd)
    want = _summarized([*lengths, *extras], str(article), capfd)
    # The flags change this summary, so a server that ignored them would differ.
    assert want != plain and want
    served = _served(monkeypatch, [*lengths, *extras])
    assert served.summarize([TEXT])[0].tokens == want
    assert (served.decoder.settings.trigram_blocking, served.decoder.settings.length_penalty) == (
        True,
        2.0,
    )


@pytest.mark.parametrize(
    "flag", ["--hidden_dim=9", "--model=abs", "--coverage=1", "--tf1_checkpoint=/x", "--lr=0.5"]
)
def test_serve_of_an_exported_model_refuses_every_other_flag(flag, tmp_path, capfd):
    """A SavedModel holds its model, vocabulary and search: any other flag would be
    ignored, so it is one error line."""
    status = _subcommand("serve", [f"--saved_model={tmp_path}", flag])
    errors = _errors(capfd.readouterr().err)
    assert status == 2 and len(errors) == 1, errors
    name = flag.split("=")[0]
    assert errors[0].startswith(f"error: {name}: an exported model is served as it was exported")


def test_an_export_records_every_setting_its_search_was_built_with(data, tmp_path):
    """export_info.json's "decode" holds every search setting and the step's fixed
    hyper-parameters (full_final_dist and namas_features were missing), and reads back."""
    import json

    from pointer_generator.cli import export
    from pointer_generator.summarizing import export_info

    settings = pg.SearchSettings(**{**SEARCH, "feature_weights": read_weights(data.weights)})
    hps = helpers.hparams(**FIXED_AT_EXPORT)
    decode = export.fixed_decode_settings(settings, hps, data.weights)
    assert decode == {**SEARCH, "feature_weights": data.weights, **FIXED_AT_EXPORT}
    path = tmp_path / "export_info.json"
    path.write_text(json.dumps({"decode": decode}))
    assert export_info.read(str(path))["decode"] == decode
