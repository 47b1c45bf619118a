"""A new user's first hour (issue 19): the experiment remembers how it was made, help
that helps, TensorBoard finds the event files, quiet honest output, readable summaries."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import types

import pytest

from pointer_generator.cli import entry, inspect_checkpoint, summarize
from pointer_generator.cli import help as help_lib
from pointer_generator.data.detokenize import detokenize
from pointer_generator.runtime import progress
from tests import helpers


def _errors(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("error: ")]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny experiment trained with explicit model flags (settings.json written)."""
    root = tmp_path_factory.mktemp("first_hour")
    data = helpers.tiny_setup(root, n_train=12, n_val=6)
    args = helpers.run_args(data, "exp", max_steps=3, hidden_dim=12, emb_dim=6)
    assert helpers.run_main_in_process(args) == 0
    data.exp_dir = os.path.join(data.log_root, "exp")
    return data


def _eval_args(trained) -> list[str]:
    """A single-pass eval of the trained experiment naming no model flag or vocabulary."""
    return [
        "--mode=eval",
        "--single_pass",
        f"--data_path={trained.val_path}",
        f"--log_root={trained.log_root}",
        "--exp_name=exp",
        "--fused_recurrence=0",
    ]


# ---------------------------------------------------------------------- remembered settings
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
    args = [
        "--mode=decode",
        "--single_pass",
        f"--data_path={trained.val_path}",
        f"--log_root={trained.log_root}",
        "--exp_name=exp",
        flag,
    ]
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


def test_summarize_needs_only_the_experiment_and_prints_readable_text(trained, capfd, tmp_path):
    article = tmp_path / "article.txt"
    article.write_text("W3 w4 (w5) w6 said . w7 w8 w9 .\n\n@highlight\n\nw3 w4\n")
    base = [f"--log_root={trained.log_root}", "--exp_name=exp", "--min_dec_steps=3"]
    assert entry.run_subcommand("summarize", [*base, str(article)]) == 0
    readable = capfd.readouterr().out.strip()
    assert entry.run_subcommand("summarize", [*base, "--tokens", str(article)]) == 0
    tokens = capfd.readouterr().out.strip()
    lines = tokens.splitlines()
    assert readable.splitlines() == [detokenize(line.split()) for line in lines]
    assert all(line == line.lower() for line in lines)  # the model's own tokens


# ------------------------------------------------------------------------------- help
def test_every_flag_is_in_exactly_one_help_group():
    from absl import flags

    from pointer_generator.cli import flags as flags_lib

    names = list(flags_lib.define_flags(flags.FlagValues()))
    grouped = [n for group in help_lib.FLAG_GROUPS.values() for n in group]
    assert sorted(grouped) == sorted(names)


@pytest.mark.parametrize(
    "command, expect",
    [
        (["-m", "pointer_generator.cli.entry", "--help"], "data flags:"),
        (["-m", "pointer_generator.cli.entry", "--helpfull"], "All flags, absl's included"),
        (["-m", "pointer_generator.run_summarization", "-h"], "decoding flags:"),
        (["-m", "pointer_generator.cli.entry", "summarize", "--help"], "--beam_size"),
        (["-m", "pointer_generator.cli.entry", "quickstart", "--help"], "--train_steps"),
        (["-m", "pointer_generator.cli.inspect_checkpoint", "--help"], "shapes imply"),
        (["-m", "data_tools.convert", "--help"], "--format"),
        (["-m", "data_tools.make_datafiles", "--help"], "--url_lists_dir"),
        (["-m", "data_tools.toy_data", "--help"], "--num_train"),
        (["-m", "pointer_generator.cli.score_rouge", "--help"], "--decoded_dir"),
        (["-m", "pointer_generator.cli", "--help"], "data flags:"),
        (["-m", "pointer_generator.cli.check_bin_files", "--help"], "FILE_OR_GLOB"),
        (["-m", "pointer_generator.cli.ptb_tokenize", "--help"], "standard input"),
        (["-m", "experiments.benchmarks.padding", "--help"], "python -m experiments.benchmarks"),
    ],
)
def test_every_command_answers_help_with_status_0(command, expect):
    proc = helpers.run_python(command, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert expect in proc.stdout


# ------------------------------------------------------------------------- TensorBoard
def test_the_suggested_tensorboard_command_finds_the_event_files(trained):
    tensorboard = shutil.which("tensorboard")
    assert tensorboard, "tensorboard is a dependency of the package (setup.py)"
    proc = subprocess.run(
        [tensorboard, "--inspect", "--logdir", trained.exp_dir],
        capture_output=True,
        text=True,
        timeout=180,
        env=helpers.subprocess_env(),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "seq2seq/loss/loss" in proc.stdout and "global_norm" in proc.stdout


# -------------------------------------------------------------------------- quiet, honest
def test_the_library_is_as_quiet_as_the_command_line():
    """`pg.<name>` starts TensorFlow with its start-up notices (CUDA drivers, cuInit, CPU
    instructions) held back, as the command line does."""
    env = helpers.subprocess_env()
    env.pop("TF_CPP_MIN_LOG_LEVEL")
    code = "import pointer_generator as pg; pg.Vocab; pg.BeamSearchDecoder; print('ok')"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=180, env=env
    )
    assert proc.returncode == 0 and proc.stdout == "ok\n", proc.stderr[-2000:]
    assert proc.stderr == ""


def test_a_training_run_prints_the_projects_lines_once_and_nothing_of_tensorflows(tmp_path):
    data = helpers.tiny_setup(tmp_path, n_train=8, n_val=4)
    args = helpers.run_args(data, "quiet", max_steps=3)
    env = helpers.subprocess_env()
    env.pop("TF_CPP_MIN_LOG_LEVEL")
    proc = subprocess.run(
        [sys.executable, "-m", "pointer_generator.run_summarization", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=helpers.REPO_ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    err = proc.stderr
    for noise in ("I0000", "E0000", "absl::InitializeLog", "oneDNN", "cuda", "Sharding callback"):
        assert noise not in err, err[-3000:]
    steps = [line for line in err.splitlines() if " step " in f" {line}" and "| loss" in line]
    assert len(steps) == 3 and len({s.split(" ", 1)[1] for s in steps}) == 3, err
    assert "compiling (a new batch shape)" in steps[0] and "ETA" not in steps[0]
    assert "Compiling the training step" in err


def test_progress_speed_and_eta_ignore_compiling_steps(monkeypatch):
    clock = iter([0.0] + [float(t) for t in (20, 20.5, 30, 30.5, 31, 41, 41.5, 42, 42.5)])
    monkeypatch.setattr(progress, "time", types.SimpleNamespace(time=lambda: next(clock)))
    p = progress.Progress(start_step=0, max_steps=1000, examples_per_step=4)
    lines = [p.line(s, {"loss": 1.0}, p.update(s, {"loss": 1.0})) for s in range(1, 10)]
    assert "compiling" in lines[0] and "measuring speed" in lines[0]
    assert "compiling" in lines[2] and "compiling" in lines[5]  # new shapes: 9.5 s, 10 s
    assert "compiling" not in lines[8]
    # Steady steps take 0.5 s: 2 steps/s whatever the compiles; 991 steps left: 495.5 s.
    assert "| 2.00 steps/s | 8.0 examples/s | ETA 08:16" in lines[8]


def test_progress_marks_compiling_by_new_batch_shape_not_by_a_slow_step(monkeypatch):
    """With shapes given (the trainer's), a step slowed by other jobs is not called a
    compile, and a compile's time stays out of the speed."""
    # Step times: 10 s (first shape), 0.5, 0.5, 4.0 (same shape, a busy machine), 9.0
    # (a new shape), 0.5, 0.5.
    clock = iter([0.0, 10.0, 10.5, 11.0, 15.0, 24.0, 24.5, 25.0])
    monkeypatch.setattr(progress, "time", types.SimpleNamespace(time=lambda: next(clock)))
    p = progress.Progress(start_step=0, max_steps=1000, examples_per_step=4)
    shapes = [(4, 10), (4, 10), (4, 10), (4, 10), (4, 12), (4, 12), (4, 10)]
    lines = [
        p.line(s, {"loss": 1.0}, p.update(s, {"loss": 1.0}, shape))
        for s, shape in enumerate(shapes, 1)
    ]
    marked = ["compiling" in line for line in lines]
    assert marked == [True, False, False, False, True, False, False]
    # The steady time is the median of 0.5, 0.5, 4.0 (kept: not a compile), 0.5, 0.5.
    assert "| 2.00 steps/s |" in lines[6]


def test_a_ctrl_c_of_the_quickstart_lets_the_running_step_finish(tmp_path):
    started, marker = tmp_path / "started", tmp_path / "saved"
    child = (
        "import signal, sys, time\n"
        "def stop(*_):\n"
        "    time.sleep(1.0)\n"  # longer than subprocess.run's 0.25 s grace
        f"    open({str(marker)!r}, 'w').write('saved')\n"
        "    sys.exit(0)\n"
        "signal.signal(signal.SIGINT, stop)\n"
        f"open({str(started)!r}, 'w').close()\n"
        "time.sleep(60)\n"
    )
    parent = (  # one step of the quick-start, under its command wrapper
        "import sys\n"
        "from pointer_generator import exit_codes\n"
        "from pointer_generator.cli import quickstart\n"
        "from pointer_generator.runtime import child_processes\n"
        "def step():\n"
        "    with child_processes.Children() as children:\n"
        f"        quickstart._run(children, [sys.executable, '-c', {child!r}])\n"
        "sys.exit(exit_codes.run_command(step))\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", parent],
        stdout=subprocess.DEVNULL,
        env=helpers.subprocess_env(),
        cwd=helpers.REPO_ROOT,
        start_new_session=True,
    )
    deadline = time.time() + 60
    while not started.exists():
        assert time.time() < deadline and proc.poll() is None
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C reaches the whole foreground group
    assert proc.wait(timeout=60) == 130
    assert marker.read_text() == "saved"


# ------------------------------------------------------------------- readable summaries
def test_the_articles_casing_is_put_back():
    from pointer_generator.data.detokenize import detokenize, text_casing

    raw = (
        "Maria Santos, 41, was arrested in Lisbon on Tuesday. Santos was charged by the "
        "LAPD. Residents said the McDonald's was closed. The police left."
    )
    casing = text_casing(raw)
    # Names keep their capitals; words seen capitalized only at a sentence's start
    # (Maria, Residents, The) are not names.
    assert casing == {
        "santos": "Santos",
        "lisbon": "Lisbon",
        "tuesday": "Tuesday",
        "lapd": "LAPD",
        "mcdonald": "McDonald",
    }
    tokens = "maria santos was charged by the lapd in lisbon . residents said the police left ."
    assert detokenize(tokens.split(), casing) == (
        "Maria Santos was charged by the LAPD in Lisbon. Residents said the police left."
    )


@pytest.mark.parametrize(
    "tokens, text",
    [
        ("the -lrb- bbc -rrb- said it was n't true .", "The (bbc) said it wasn't true."),
        ("`` it 's over , '' he said .", "\u201cIt's over,\u201d he said."),
        ("i think i 'm right -- really .", "I think I'm right \u2014 really."),
        ("he paid $ 5 and # 10 for a 50 % share .", "He paid $5 and \u00a310 for a 50% share."),
        ("one . two ! three ? four", "One. Two! Three? Four"),
        ("the parents ' car -lsb- sic -rsb- .", "The parents' car [sic]."),
        # A sentence that starts with a number keeps its next word in lower case.
        (
            "6.2 earthquake struck lima . `` it shook , '' he said .",
            "6.2 earthquake struck lima. \u201cIt shook,\u201d he said.",
        ),
        ("he the . . then .", "He the. Then."),  # no doubled period
    ],
)
def test_detokenize(tokens, text):
    assert detokenize(tokens.split()) == text


def test_decode_can_write_readable_summaries(trained, capfd):
    args = [
        "--mode=decode",
        "--single_pass",
        f"--data_path={trained.val_path}",
        f"--log_root={trained.log_root}",
        "--exp_name=exp",
        "--readable_summaries",
    ]
    assert helpers.run_main_in_process(args) == 0, capfd.readouterr().err[-2000:]
    (folder,) = [d for d in os.listdir(trained.exp_dir) if d.startswith("decode_val")]
    folder = os.path.join(trained.exp_dir, folder)
    decoded = open(os.path.join(folder, "decoded", "000000_decoded.txt"), encoding="utf-8")
    readable = open(os.path.join(folder, "readable", "000000.txt"), encoding="utf-8")
    assert readable.read().splitlines() == [
        detokenize(line.split()) for line in decoded.read().splitlines()
    ]


def test_the_last_decodes_search_is_the_default_of_summarize_and_the_summarizer(
    trained, capfd, tmp_path
):
    import pointer_generator as pg
    from pointer_generator.cli import configs
    from pointer_generator.runtime import experiment_settings

    root = tmp_path / "log"
    shutil.copytree(trained.exp_dir, root / "exp")
    args = [
        "--mode=decode",
        "--single_pass",
        f"--data_path={trained.val_path}",
        f"--log_root={root}",
        "--exp_name=exp",
        "--beam_size=2",
        "--min_dec_steps=1",
        "--max_dec_steps=5",
    ]
    assert helpers.run_main_in_process(args) == 0, capfd.readouterr().err[-2000:]
    last = {"beam_size": 2, "min_dec_steps": 1, "max_dec_steps": 5}
    assert experiment_settings.read_decode_settings(str(root / "exp")) == last
    settings = pg.Summarizer.from_experiment(str(root), "exp").decoder.settings
    assert (settings.beam_size, settings.min_dec_steps, settings.max_dec_steps) == (2, 1, 5)
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
    (root / "exp" / "last_decode.json").write_text("{}")
    with pytest.raises(pg.PointerGeneratorError, match="last_decode.json is unreadable"):
        pg.Summarizer.from_experiment(str(root), "exp")


# --------------------------------------------------------------------- inspect_checkpoint
def test_inspect_checkpoint_shows_step_sizes_implied_flags_and_shapes(trained, capfd):
    assert inspect_checkpoint.main([os.path.join(trained.exp_dir, "train")]) == 0
    out = capfd.readouterr().out
    assert "  step: 3\n" in out
    assert "  implied flags: --vocab_size=100 --emb_dim=6 --hidden_dim=12 --pointer_gen=1 " in out
    (embedding,) = [line for line in out.splitlines() if line.startswith("  model/embedding/")]
    assert embedding.endswith("  [100, 6]")


def test_summarize_help_lists_its_flags():
    from pointer_generator.cli import flags as flags_lib

    text = summarize.help_text(flags_lib.FLAGS)
    assert "pointer-generator summarize --log_root=L --exp_name=E" in text
    assert "--tokens" in text and "Example:" in text
