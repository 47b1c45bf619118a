"""experiments.paper: the Table 1 recipes and their resumable runner.

The dry-run tests parse every printed command with the CLI's own absl flag definitions
(flag files expanded, later values winning), so they check the values each command really
sets. The run tests use a stand-in Python interpreter that logs each command and writes
what the real one would (checkpoint state files, best models, decode dirs), so the
runner's stage order, state file, resumption and error handling run for real in well
under a second per run.
"""

import json
import os
import shlex
import stat
import sys

import pytest

from experiments.paper import recipe as recipe_lib
from experiments.paper import run_recipe
from pointer_generator import exit_codes

RECIPES = ("baseline_50k", "baseline_150k", "pointer_generator", "pointer_generator_coverage")
PAPER = dict(
    hidden_dim=256,
    emb_dim=128,
    batch_size=16,
    lr=0.15,
    adagrad_init_acc=0.1,
    max_grad_norm=2.0,
    rand_unif_init_mag=0.02,
    trunc_norm_init_std=1e-4,
)


@pytest.fixture
def data_dir(tmp_path):
    d = tmp_path / "finished_files"
    (d / "chunked").mkdir(parents=True)
    for name in ("train_000.bin", "train_001.bin", "val_000.bin", "test_000.bin"):
        (d / "chunked" / name).write_bytes(b"")
    (d / "vocab").write_text("the 10\n")
    return str(d)


def _dry_run(capsys, *args):
    assert run_recipe.main(list(args) + ["--dry_run"]) == 0
    return capsys.readouterr().out


def _commands(out):
    """[(stage name, kind, [(module, args)])] from dry-run output."""
    stages = []
    for line in out.splitlines():
        if line.startswith("# ["):
            head = line.split("] ", 1)[1]
            name, kind = head.split(" ", 1)
            stages.append((name, kind.split(")")[0].strip("("), "skipped" in line, []))
        elif line and not line.startswith("#"):
            cmd = shlex.split(line.split(" &  #")[0])
            assert cmd[1] == "-m"
            stages[-1][3].append((cmd[2], cmd[3:]))
    return stages


def _flags(args):
    """The values the CLI would see (a run-time --max_steps placeholder left out)."""
    return recipe_lib.resolve([a for a in args if "<" not in a])


def test_shipped_recipes_load():
    assert set(RECIPES) <= set(recipe_lib.available())
    cov = recipe_lib.load("pointer_generator_coverage")
    pg = recipe_lib.load("pointer_generator")
    # the coverage recipe continues the pointer-generator experiment stage for stage
    assert cov.exp_name == pg.exp_name == "pointer_generator"
    assert [s.name for s in cov.stages[: len(pg.stages)]] == [s.name for s in pg.stages]


@pytest.mark.parametrize("name", RECIPES)
def test_dry_run_commands_have_the_papers_settings(name, data_dir, tmp_path, capsys):
    out = _dry_run(
        capsys, "--recipe", name, "--data_dir", data_dir, "--log_root", str(tmp_path / "logs")
    )
    stages = _commands(out)
    vocab_size = 150000 if name == "baseline_150k" else 50000
    pointer = name.startswith("pointer")
    train_stages = [s for s in stages if s[1] == "train" and not s[0].endswith("coverage")]
    expected_lengths = [(100, 25), (200, 50), (300, 75), (400, 100)]
    assert [
        (_flags(s[3][-1][1]).max_enc_steps, _flags(s[3][-1][1]).max_dec_steps) for s in train_stages
    ] == expected_lengths
    final = 230000 if pointer else 600000
    assert _flags(train_stages[-1][3][-1][1]).max_steps == final
    steps = [_flags(s[3][-1][1]).max_steps for s in train_stages]
    assert steps == sorted(steps) and len(set(steps)) == 4
    for stage_name, kind, skipped, cmds in stages:
        assert not skipped
        for module, args in cmds:
            if module != recipe_lib.CLI_MODULE:
                continue
            fv = _flags(args)
            for flag, value in PAPER.items():
                assert fv[flag].value == pytest.approx(value), (stage_name, flag)
            assert fv.vocab_size == vocab_size
            assert fv.pointer_gen == pointer
            assert fv.log_root == str(tmp_path / "logs")
            assert fv.exp_name == ("pointer_generator" if pointer else name)
            split = {"train": "train", "eval": "val", "decode": "test"}[fv.mode]
            assert fv.data_path == os.path.join(data_dir, "chunked", f"{split}_*")
            assert fv.vocab_path == os.path.join(data_dir, "vocab")
            assert fv.coverage == stage_name.endswith("coverage")
            # a data position saved at one stage's lengths cannot be restored at another's
            assert not fv.checkpoint_data_position
            if kind == "decode":
                assert (
                    fv.mode,
                    fv.single_pass,
                    fv.beam_size,
                    fv.max_enc_steps,
                    fv.max_dec_steps,
                    fv.min_dec_steps,
                ) == ("decode", True, 4, 400, 120, 35)
            if kind == "eval_single_pass":
                assert (fv.mode, fv.single_pass, fv.max_enc_steps, fv.max_dec_steps) == (
                    "eval",
                    True,
                    400,
                    100,
                )
    by_name = {s[0]: s for s in stages}
    # the final stage runs the concurrent eval job at full lengths on the validation data
    eval_job, train = by_name["train_enc400_dec100"][3]
    assert _flags(eval_job[1]).mode == "eval" and not _flags(eval_job[1]).single_pass
    assert (_flags(eval_job[1]).max_enc_steps, _flags(eval_job[1]).max_dec_steps) == (400, 100)
    assert _flags(train[1]).mode == "train"
    assert _flags(by_name["restore_best_model"][3][0][1]).restore_best_model
    score = by_name["score_test"][3]
    assert [m for m, _ in score] == ["pointer_generator.cli.score_rouge", "experiments.analysis"]
    assert any("decode_test_400maxenc_4beam_35mindec_120maxdec_ckpt-" in a for a in score[0][1])
    if name == "pointer_generator_coverage":
        assert [s[0] for s in stages[8:]] == [
            "convert_to_coverage",
            "train_coverage",
            "val_loss_coverage",
            "decode_test_coverage",
            "score_test_coverage",
        ]
        convert = _flags(by_name["convert_to_coverage"][3][0][1])
        assert convert.convert_to_coverage_model and convert.coverage
        assert convert.cov_loss_wt == 1.0
        cov_train = by_name["train_coverage"][3][0][1]
        assert "--max_steps=<global step at the start of this stage + 3000>" in cov_train
        assert _flags(cov_train).coverage and len(by_name["train_coverage"][3]) == 1
    else:
        assert len(stages) == 8


def test_restart_skips_finished_stages_and_checks_their_settings(data_dir, tmp_path, capsys):
    logs = str(tmp_path / "logs")
    recipe = recipe_lib.load("pointer_generator_coverage")
    runner = run_recipe.Runner(recipe, data_dir, logs)
    os.makedirs(runner.exp_dir)
    for stage in recipe.stages[:9]:
        runner.state.update(stage.name, finished="then", fingerprint=runner.fingerprint(stage))
    runner.state.update("decode_test", decode_dir="/x/decode_test_dir")
    runner.state.update("train_coverage", start_step=229000)
    stages = _commands(
        _dry_run(
            capsys,
            "--recipe",
            "pointer_generator_coverage",
            "--data_dir",
            data_dir,
            "--log_root",
            logs,
        )
    )
    assert [s[2] for s in stages] == [True] * 9 + [False] * 4
    assert all(not s[3] for s in stages[:9])
    # the recorded start step fixes the coverage phase's end
    assert "--max_steps=232000" in stages[9][3][0][1]
    # the pointer_generator recipe shares the experiment: all of it is done
    stages = _commands(
        _dry_run(
            capsys, "--recipe", "pointer_generator", "--data_dir", data_dir, "--log_root", logs
        )
    )
    assert all(s[2] for s in stages)
    # a finished stage with other settings is an error, not silently reused
    assert (
        run_recipe.main(
            [
                "--recipe",
                "pointer_generator",
                "--data_dir",
                data_dir,
                "--log_root",
                logs,
                "--set",
                "hidden_dim=64",
                "--dry_run",
            ]
        )
        == exit_codes.BAD_INPUT
    )
    err = capsys.readouterr().err
    assert "train_enc100_dec25" in err and "hidden_dim: 256 -> 64" in err
    # --stage picks stages explicitly, finished or not
    stages = _commands(
        _dry_run(
            capsys,
            "--recipe",
            "pointer_generator",
            "--data_dir",
            data_dir,
            "--log_root",
            logs,
            "--stage",
            "val_loss",
        )
    )
    assert [s[0] for s in stages if not s[2]] == ["val_loss"]


FAKE_PYTHON = r'''#!{python} -S
"""Stand-in for `python -m MODULE ARGS`: logs the command, writes what the real one would."""
import json, os, signal, sys, time

module, args = sys.argv[2], sys.argv[3:]
expanded = []
for a in args:   # flag files in place, as absl reads them
    if a.startswith("--flagfile="):
        lines = [x.strip() for x in open(a.split("=", 1)[1])]
        expanded += [x for x in lines if x and not x.startswith("#")]
    else:
        expanded.append(a)
flags = dict(a[2:].split("=", 1) for a in expanded if a.startswith("--") and "=" in a)
with open(os.environ["FAKE_LOG"], "a") as f:
    f.write(json.dumps([module, args]) + "\n")


def state(d, name=None, file="checkpoint"):
    path = os.path.join(d, file)
    if name is None:
        if not os.path.exists(path):
            return None
        return open(path).read().split('"')[1]
    os.makedirs(d, exist_ok=True)
    with open(path + ".tmp", "w") as f:
        f.write('model_checkpoint_path: "%s"\nall_model_checkpoint_paths: "%s"\n' % (name, name))
    os.replace(path + ".tmp", path)


def step(name):
    return int(name.rsplit("-", 1)[1].split("_")[0])


if module == "pointer_generator.run_summarization":
    exp = os.path.join(flags["log_root"], flags["exp_name"])
    train, evl = os.path.join(exp, "train"), os.path.join(exp, "eval")
    mode = flags["mode"]
    if flags.get("single_pass") == "True":
        mode += "_single_pass"
    if flags.get("restore_best_model") == "True":
        mode = "restore"
    if flags.get("convert_to_coverage_model") == "True":
        mode = "convert"
    if os.environ.get("FAKE_FAIL") == mode:
        sys.exit(3)
    if mode == "train":
        state(train, "model.ckpt-%s" % flags["max_steps"])
    elif mode == "restore":
        state(train, state(evl, file="checkpoint_best").replace("bestmodel", "model"))
    elif mode == "convert":
        state(train, state(train) + "_cov_init")
    elif mode == "eval_single_pass":
        with open(os.path.join(evl, "single_pass_loss.txt"), "w") as f:
            f.write("checkpoint: %s\nstep: %d\nloss: 3.5\n" % (state(train),
                                                             step(state(train))))
    elif mode == "eval":
        signal.signal(signal.SIGINT, lambda *a: sys.exit(0))
        while True:   # the best model is always 1000 steps behind the newest checkpoint
            s = step(state(train) or "model.ckpt-1000")
            state(evl, "bestmodel-%d" % max(s - 1000, 1), "checkpoint_best")
            time.sleep(0.02)
    elif mode == "decode_single_pass":
        d = os.path.join(exp, "decode_test_400maxenc_4beam_35mindec_120maxdec_ckpt-"
                         + state(train).rsplit("-", 1)[1])
        for sub, name in (("reference", "000000_reference.txt"),
                          ("decoded", "000000_decoded.txt")):
            os.makedirs(os.path.join(d, sub), exist_ok=True)
            open(os.path.join(d, sub, name), "w").close()
elif module == "pointer_generator.cli.score_rouge":
    with open(os.path.join(flags["out_dir"], "ROUGE_results.txt"), "w") as f:
        for x, v in (("1", 0.39), ("2", 0.17), ("l", 0.36)):
            f.write("rouge_%s_f_score: %.4f with confidence interval (%.4f, %.4f)\n"
                    % (x, v, v - 0.01, v + 0.01))
elif module == "experiments.analysis":
    with open(flags["out"], "w") as f:
        f.write("{{}}")
else:
    sys.exit("unexpected module " + module)
'''


@pytest.fixture
def fake(tmp_path, monkeypatch):
    path = tmp_path / "fake_python"
    path.write_text(FAKE_PYTHON.replace("{python}", sys.executable).replace("{{}}", "{}"))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    log = tmp_path / "commands.jsonl"
    monkeypatch.setenv("FAKE_LOG", str(log))

    def commands():
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text().splitlines()]

    return str(path), commands


def _run(fake_python, data_dir, logs, *extra, recipe="pointer_generator_coverage"):
    return run_recipe.main(
        [
            "--recipe",
            recipe,
            "--data_dir",
            data_dir,
            "--log_root",
            logs,
            "--python",
            fake_python,
            "--eval_grace_secs",
            "0.5",
            *extra,
        ]
    )


def _mode(cmd):
    module, args = cmd
    if module != recipe_lib.CLI_MODULE:
        return module
    flags = dict(a[2:].split("=", 1) for a in args if "=" in a)
    extra = [
        k
        for k in ("single_pass", "restore_best_model", "convert_to_coverage_model")
        if flags.get(k) == "True"
    ]
    return "+".join([flags["mode"]] + extra)


def test_full_run_then_nothing_left(fake, data_dir, tmp_path, capsys, monkeypatch):
    fake_python, commands = fake
    logs = str(tmp_path / "logs")
    assert _run(fake_python, data_dir, logs) == 0, capsys.readouterr().err
    modes = [_mode(c) for c in commands()]
    # the eval job and the last pointer-generator stage start together: either logs first
    assert sorted(modes[3:5]) == ["eval", "train"]
    assert modes[:3] + modes[5:] == ["train"] * 3 + [
        "train+restore_best_model",
        "eval+single_pass",
        "decode",
        "pointer_generator.cli.score_rouge",
        "experiments.analysis",
        "train+convert_to_coverage_model",
        "train",
        "eval+single_pass",
        "decode",
        "pointer_generator.cli.score_rouge",
        "experiments.analysis",
    ]
    with open(os.path.join(logs, "pointer_generator", run_recipe.STATE_FILE)) as f:
        st = json.load(f)["stages"]
    assert all(
        st[s.name].get("finished") for s in recipe_lib.load("pointer_generator_coverage").stages
    )
    best = st["restore_best_model"]["checkpoint"]  # model-<step of the best model>
    assert best.startswith("model-")
    start = run_recipe.step_of(best)
    assert st["train_coverage"]["start_step"] == start
    assert f"--max_steps={start + 3000}" in commands()[11][1]
    assert st["convert_to_coverage"]["checkpoint"] == best + "_cov_init"
    assert st["val_loss"]["validation"]["loss"] == 3.5
    exp = os.path.join(logs, "pointer_generator")
    assert st["decode_test"]["decode_dir"] == os.path.join(
        exp, f"decode_test_400maxenc_4beam_35mindec_120maxdec_ckpt-{start}"
    )
    assert st["decode_test_coverage"]["decode_dir"].endswith(f"ckpt-{start + 3000}")
    assert st["score_test_coverage"]["rouge_f1"] == {"1": 0.39, "2": 0.17, "l": 0.36}
    n = len(commands())
    assert _run(fake_python, data_dir, logs) == 0
    assert len(commands()) == n  # everything finished: nothing runs again
    assert (
        run_recipe.main(
            [
                "--recipe",
                "pointer_generator_coverage",
                "--data_dir",
                data_dir,
                "--log_root",
                logs,
                "--list",
            ]
        )
        == 0
    )
    assert "ROUGE F1 39.00/17.00/36.00" in capsys.readouterr().out


def test_failure_stops_and_a_rerun_resumes_at_the_failed_stage(
    fake, data_dir, tmp_path, capsys, monkeypatch
):
    fake_python, commands = fake
    logs = str(tmp_path / "logs")
    monkeypatch.setenv("FAKE_FAIL", "decode_single_pass")
    assert _run(fake_python, data_dir, logs, recipe="pointer_generator") == exit_codes.BAD_INPUT
    assert "stage decode_test: command exited with status 3" in capsys.readouterr().err
    n = len(commands())
    assert _mode(commands()[-1]) == "decode"
    monkeypatch.delenv("FAKE_FAIL")
    assert _run(fake_python, data_dir, logs, recipe="pointer_generator") == 0
    assert [_mode(c) for c in commands()[n:]] == [
        "decode",
        "pointer_generator.cli.score_rouge",
        "experiments.analysis",
    ]


def test_eval_job_failure_is_reported(fake, data_dir, tmp_path, capsys, monkeypatch):
    fake_python, _ = fake
    logs = str(tmp_path / "logs")
    monkeypatch.setenv("FAKE_FAIL", "eval")
    assert _run(fake_python, data_dir, logs) == exit_codes.BAD_INPUT
    err = capsys.readouterr().err
    assert "the eval job exited with status 3" in err
    assert "recipe_logs/train_enc400_dec100.eval.log" in err
    with open(os.path.join(logs, "pointer_generator", run_recipe.STATE_FILE)) as f:
        st = json.load(f)["stages"]
    assert st["train_enc300_dec75"]["finished"] and "train_enc400_dec100" not in st


def test_missing_data_and_bad_recipes_are_clear_errors(tmp_path, data_dir, capsys):
    assert (
        run_recipe.main(
            [
                "--recipe",
                "pointer_generator",
                "--data_dir",
                str(tmp_path / "nowhere"),
                "--log_root",
                str(tmp_path),
            ]
        )
        == exit_codes.BAD_INPUT
    )
    assert "chunked/train_* matches no files" in capsys.readouterr().err
    assert (
        run_recipe.main(["--recipe", "nope", "--data_dir", data_dir, "--log_root", str(tmp_path)])
        == exit_codes.BAD_INPUT
    )
    assert "no recipe 'nope'" in capsys.readouterr().err

    def bad(content, match):
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(content))
        with pytest.raises(recipe_lib.RecipeError, match=match):
            recipe_lib.load(str(path))

    ok_stage = {"name": "t", "kind": "train", "flags": {"max_steps": 10}}
    bad({"exp_name": "e", "stages": [ok_stage], "colour": 1}, r"bad.json: unknown keys")
    bad({"exp_name": "e", "stages": [{"name": "t", "kind": "train"}]}, "exactly one of")
    bad({"exp_name": "e", "stages": [{**ok_stage, "flags": {"mode": "eval"}}]}, "set by the runner")
    bad(
        {
            "exp_name": "e",
            "stages": [ok_stage, {"name": "s", "kind": "score", "decode_stage": "t"}],
        },
        "earlier decode",
    )
    bad({"exp_name": "e", "stages": [ok_stage, ok_stage]}, "unique")
    bad(
        {"exp_name": "e", "flagfiles": ["missing.flags"], "stages": [ok_stage]},
        "missing.flags does not exist",
    )
    # a flag the CLI does not know is caught from the recipe, before anything runs
    path = tmp_path / "typo.json"
    path.write_text(
        json.dumps(
            {
                "exp_name": "e",
                "stages": [
                    {"name": "t", "kind": "train", "flags": {"max_steps": 10, "hiden_dim": 3}}
                ],
            }
        )
    )
    assert (
        run_recipe.main(
            [
                "--recipe",
                str(path),
                "--data_dir",
                data_dir,
                "--log_root",
                str(tmp_path),
                "--dry_run",
            ]
        )
        == exit_codes.BAD_INPUT
    )
    assert "hiden_dim" in capsys.readouterr().err


def test_cpu_scale_split_is_fixed_by_the_hash_rule(tmp_path):
    """The data the CPU-scale recipes train on: sizes, rule, order, train-only vocab."""
    import gzip
    import hashlib

    from experiments.cpu_scale import split_sample
    from pointer_generator.data.binfile import read_records

    src = tmp_path / "sample.jsonl.gz"
    with gzip.open(src, "wt", encoding="utf-8") as f:
        for i in range(10):
            f.write(
                json.dumps(
                    {"id": "%06d" % i, "article": f"word{i} common .", "abstract": [f"sum{i} ."]}
                )
                + "\n"
            )
        f.write(json.dumps({"id": "000010", "article": "", "abstract": ["empty ."]}) + "\n")
    out = tmp_path / "split"
    m = split_sample.split_sample(str(src), str(out), seed=0, val_size=2, test_size=3)
    ranked = sorted(
        ("%06d" % i for i in range(10)), key=lambda i: hashlib.sha256(f"0:{i}".encode()).hexdigest()
    )
    assert m["sizes"] == {"train": 5, "val": 2, "test": 3}  # the empty article is dropped
    assert m["ids"]["test"] == sorted(ranked[:3]) and m["ids"]["val"] == sorted(ranked[3:5])
    records = list(read_records(str(out / "chunked" / "test_000.bin")))
    assert records == [
        (f"word{int(i)} common .", f"<s> sum{int(i)} . </s>") for i in m["ids"]["test"]
    ]
    vocab = dict(line.split() for line in (out / "vocab").read_text().splitlines())
    assert vocab["common"] == "5" and vocab["."] == "10"  # 5 articles + 5 abstracts
    assert {f"word{int(i)}" for i in m["ids"]["train"]} <= set(vocab)
    assert not {f"word{int(i)}" for i in m["ids"]["test"] + m["ids"]["val"]} & set(vocab)
    assert json.loads((out / "split.json").read_text())["ids"] == m["ids"]
    other = split_sample.split_sample(
        str(src), str(tmp_path / "s1"), seed=1, val_size=2, test_size=3
    )
    assert other["ids"] != m["ids"]
    with pytest.raises(split_sample.DataError, match="keep any for training"):
        split_sample.split_sample(str(src), str(tmp_path / "s2"), val_size=5, test_size=5)
