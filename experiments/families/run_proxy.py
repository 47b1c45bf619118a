"""The families on the CNN/DM lead-sentence -> first-highlight proxy task, end to end.

    python -m experiments.families.run_proxy --work_dir /tmp/families_proxy \\
        [--only abs_attention,ras_elman] [--epochs_scale 1.0]

Stages (each skipped when its output exists, so an interrupted run continues):

1. `data_tools.proxy_task` on the shared sample -> `<work_dir>/data` (6,836 pairs);
2. training each run of RUNS with the papers' recipes (`experiments/families/*.flags`:
   plain SGD, annealing on validation perplexity measured every epoch, ABS's embedding
   renormalisation, RAS's clipping) for the epochs given there, logs in `<work_dir>/logs`;
3. single-pass decoding of the test split with each run's beam sizes;
4. ABS+: MERT (`pointer-generator tune_features`) of the feature weights on the
   validation split with the attention ABS model, then decoding with them;
5. PREFIX on the test split;
6. ROUGE-1.5.5 of every output in both of the papers' styles (Gigaword full-length F1,
   DUC 75-byte recall) -> `<work_dir>/results.json`; `experiments.families.report`
   turns it into the results page.

Learning rates differ from the papers' where the proxy needs it (noted in RUNS): ~5,500
training pairs give about 87 SGD steps per epoch instead of Gigaword's ~60,000.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import time

from pointer_generator import exit_codes
from pointer_generator.cli import arg_types
from pointer_generator.errors import DataError
from pointer_generator.runtime import child_processes, json_files, owned_files
from pointer_generator.runtime.progress import unstamped

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SHARED = os.path.join(
    os.environ.get(
        "POINTER_GENERATOR_SHARED_DATA", os.path.join(os.path.dirname(REPO), "shared", "data")
    ),
    "cnndm_sample.jsonl.gz",
)

# name -> (preset, extra training flags, epochs, [(row name, decode flags)])
ABS_DECODE = [("", ["--flagfile=" + os.path.join(HERE, "abs_decode.flags")])]
# The default-recipe ABS runs also decode greedily: beam 50 favours the summary language
# model's most likely sentences over what the input says (experiments/results/families_results.md).
ABS_DECODE_GREEDY = [
    *ABS_DECODE,
    (" (k=1)", ["--flagfile=" + os.path.join(HERE, "abs_decode.flags"), "--beam_size=1"]),
]
RAS_DECODE = [
    (" (k=10)", ["--flagfile=" + os.path.join(HERE, "ras_decode.flags")]),
    (" (k=1)", ["--flagfile=" + os.path.join(HERE, "ras_decode.flags"), "--beam_size=1"]),
    # The references keep their rare words and ABS's search blocks [UNK] (NAMAS does):
    # RAS, which writes [UNK] for many of its words here, searched the same way.
    (" (k=10, block_unk)", ["--flagfile=" + os.path.join(HERE, "ras_decode.flags"), "--block_unk"]),
]
PG_FLAGS = [
    "--model=pointer_generator",
    "--hidden_dim=256",
    "--emb_dim=128",
    "--batch_size=64",
    "--lr=0.15",
    "--max_enc_steps=100",
    "--max_dec_steps=50",
]
PG_SEARCH = ["--mode=decode", "--single_pass=true", "--beam_size=4", "--min_dec_steps=0"]
# With ~3,800 words [UNK] is the likeliest single word of a briefly trained model, and
# the references never hold it: the second row blocks it, as ABS's search does.
PG_DECODE = [("", PG_SEARCH), (" (block_unk)", [*PG_SEARCH, "--block_unk"])]
# Runs whose data keep their rare words (the vocabulary stays the <unk> build's).
WORDS_KEPT = ("pointer_generator_words",)
# The flags' defaults where a paper's flagfile sets its own (the accumulator is the
# families' default, applied when the flag is not given).
ADAGRAD = ["--optimizer=adagrad", "--lr_decay=none", "--lr=0.15"]
RAS_DEFAULTS = ["--loss_reduction=mean", "--max_grad_norm=2", "--grad_norm=original",
                "--ras_attention=cosine"]  # fmt: skip
# The ABS runs use lr 0.5 instead of the paper's 0.05: with ~87 steps an epoch, 0.05
# leaves the model far from trained after the epochs this CPU affords. The convolutional
# encoder runs at 0.1: at 0.5 its tanh units saturate within 30 steps, for every input
# alike (experiments.families.conv_saturation --proxy_dir; experiments/results/families_results.md).
RUNS = {
    "abs_bow": ("abs_paper", ["--abs_encoder=bow", "--lr=0.5"], 12, ABS_DECODE),
    "abs_conv": ("abs_paper", ["--abs_encoder=conv", "--lr=0.1"], 12, ABS_DECODE),
    "abs_attention": ("abs_paper", ["--abs_encoder=attention", "--lr=0.5"], 12, ABS_DECODE),
    # The same model with the project's Adagrad: does the encoder learn at this scale
    # when the optimizer is not the papers' plain SGD?
    "abs_attention_adagrad": (
        "abs_paper",
        ["--abs_encoder=attention", *ADAGRAD],
        6,
        ABS_DECODE_GREEDY,
    ),
    # Each earlier family with its default recipe (Adagrad 0.15, first accumulator 1e-4;
    # 0.02 for the convolutional encoder, which 0.05 kills at these sizes, docs/families.md):
    # the recipe that learns the toy task
    # (experiments/results/families_toy), on the papers' sizes and data. 6 epochs: with
    # Adagrad ABS's validation perplexity was lowest after 4 (73.0) and rose after.
    "abs_bow_adagrad": ("abs_paper", ["--abs_encoder=bow", *ADAGRAD], 6, ABS_DECODE_GREEDY),
    "abs_conv_adagrad": (
        "abs_paper",
        ["--abs_encoder=conv", *ADAGRAD, "--lr=0.02"],  # the later --lr wins
        6,
        ABS_DECODE_GREEDY,
    ),
    "ras_elman_adagrad": ("ras_elman_paper", [*ADAGRAD, *RAS_DEFAULTS], 6, RAS_DECODE),
    "ras_lstm_adagrad": ("ras_lstm_paper", [*ADAGRAD, *RAS_DEFAULTS], 6, RAS_DECODE),
    "ras_elman": ("ras_elman_paper", [], 8, RAS_DECODE),
    "ras_lstm": ("ras_lstm_paper", [], 8, RAS_DECODE),
    "pointer_generator": (None, PG_FLAGS, 8, PG_DECODE),
    # The same, on inputs that keep their rare words (data_tools.proxy_task
    # --keep_rare_words) with the same vocabulary: the rare words are OOV and copied.
    "pointer_generator_words": (None, PG_FLAGS, 8, PG_DECODE),
}
GAP = "input gap: "  # results key of a run's right- vs wrong-article losses
TRAINED = "proxy_trained.txt"  # in a run folder: `train` finished it
DECODE_COMMON = ["--max_dec_steps=30", "--decode_batch_size=32", "--attention_pages=5"]


def _run(cmd: list[str], log_path: str) -> None:
    print(f"$ {' '.join(cmd)}  (log: {log_path})", flush=True)
    t0 = time.time()
    with owned_files.open_in_place(log_path, "a") as log:
        # SIGTERM / Ctrl-C of the runner stops the command too (child_processes).
        run = child_processes.run(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
    rc = run.returncode
    if rc:
        raise SystemExit(f"error: {cmd[2:4]} failed (status {rc}); see {log_path}")
    print(f"  done in {time.time() - t0:.0f} s", flush=True)


def _data(work: str, name: str) -> str:
    """The run's `finished/` folder: `data_words/` for the runs of WORDS_KEPT."""
    return os.path.join(work, "data_words" if name in WORDS_KEPT else "data", "finished")


def _base(work: str, name: str) -> list[str]:
    data = os.path.join(work, "data", "finished")  # one vocabulary for every run
    return [
        f"--log_root={os.path.join(work, 'runs')}",
        f"--exp_name={name}",
        f"--vocab_path={os.path.join(data, 'vocab')}",
        "--vocab_size=0",
    ]


def steps_per_epoch(work: str, batch_size: int) -> int:
    from pointer_generator.training.epochs import steps_per_epoch as count

    return count(os.path.join(work, "data", "finished", "chunked", "train_*"), batch_size)


def train(work: str, name: str, scale: float) -> None:
    preset, extra, epochs, _ = RUNS[name]
    data = _data(work, name)
    flags = [f"--flagfile={os.path.join(HERE, preset + '.flags')}"] if preset else []
    batch = int(
        next(f for f in flags + extra + _preset_flags(preset) if "batch_size" in f).split("=")[1]
    )
    steps = max(1, round(epochs * scale)) * steps_per_epoch(work, batch)
    cmd = [sys.executable, "-m", "pointer_generator.cli.run_summarization", "--mode=train",
           *flags, *extra, *_base(work, name),
           f"--data_path={os.path.join(data, 'chunked', 'train_*')}",
           f"--valid_data_path={os.path.join(data, 'val.bin')}",
           f"--max_steps={steps}", "--log_every_n_steps=50",
           "--save_checkpoint_secs=600",
           "--static_shapes=1"]  # fmt: skip
    _run(cmd, os.path.join(work, "logs", f"{name}.train.log"))
    # Decode (and measure) the weights of the best validation epoch, as the original's
    # users did: the newest checkpoint of a run past its best epoch has overfitted.
    _run([sys.executable, "-m", "pointer_generator.cli.run_summarization", "--mode=train",
          "--restore_best_model", *_base(work, name)],
         os.path.join(work, "logs", f"{name}.train.log"))  # fmt: skip
    # Training again would resume from the restored best epoch and retrain its later
    # epochs: the marker says this run is done (`trained`).
    owned_files.replace_file(
        os.path.join(work, "runs", name, TRAINED),
        f"trained for {steps} steps; train/ holds the best validation epoch\n",
    )


def trained(work: str, name: str) -> bool:
    """Whether `train` finished the run (its marker exists)."""
    return os.path.exists(os.path.join(work, "runs", name, TRAINED))


def known_results(work: str) -> dict:
    """The results of every runner of `work` (its results*.json), merged."""
    out = {}
    for path in sorted(glob.glob(os.path.join(work, "results*.json"))):
        try:
            with open(path, encoding="utf-8") as f:
                out.update(_results_object(json_files.load(f), path))
        except ValueError as e:  # not JSON, nested too deeply, not an object
            raise DataError(f"{path}: unreadable results ({e}); fix or remove it") from None
    return out


def _results_object(value, path: str) -> dict:
    """A runner's results file must hold an object (its rows by name)."""
    if not isinstance(value, dict):
        raise ValueError("not an object of rows by name")
    return value


def _preset_flags(preset: str | None) -> list[str]:
    if not preset:
        return []
    with open(os.path.join(HERE, preset + ".flags"), encoding="utf-8") as f:
        return [line.strip() for line in f if line.startswith("--")]


def decode(work: str, name: str, row: str, flags: list[str], extra: list[str] = ()) -> str:
    """Decode the test split; returns the decode folder (named by the decoder's own
    "Decoding <data> into <folder>" line: a resumed decode adds no new folder)."""
    data = _data(work, name)
    cmd = [sys.executable, "-m", "pointer_generator.cli.run_summarization",
           *flags, *DECODE_COMMON, *extra, *_base(work, name),
           f"--data_path={os.path.join(data, 'test.bin')}"]  # fmt: skip
    log = os.path.join(work, "logs", f"{name}{row.strip().replace(' ', '')}.decode.log")
    start = os.path.getsize(log) if os.path.exists(log) else 0
    _run(cmd, log)
    with open(log, encoding="utf-8", errors="replace") as f:
        f.seek(start)
        lines = [unstamped(line.rstrip("\n")) for line in f]
        folders = [line.rsplit(" into ", 1)[1] for line in lines
                   if line.startswith("Decoding ") and " into " in line]  # fmt: skip
    if not folders:
        raise SystemExit(f"error: the decoder named no output folder; see {log}")
    return folders[-1]


def input_gap(work: str, name: str) -> dict:
    """Single-pass eval of the test split with right and with wrong articles: does the
    trained model read its input? (`--input_gap`, issue 29)."""
    cmd = [sys.executable, "-m", "pointer_generator.cli.run_summarization", "--mode=eval",
           "--single_pass", "--input_gap", *_base(work, name),
           f"--data_path={os.path.join(_data(work, name), 'test.bin')}"]  # fmt: skip
    _run(cmd, os.path.join(work, "logs", f"{name}.gap.log"))
    return read_input_gap(os.path.join(work, "runs", name))


def read_input_gap(run_dir: str) -> dict:
    """The losses `--mode=eval --single_pass --input_gap` wrote for the run in `run_dir`:
    {loss, loss_other_articles, input_gap} in nats per target word."""
    with open(os.path.join(run_dir, "eval", "single_pass_loss.txt"), encoding="utf-8") as f:
        values = dict(line.split(": ", 1) for line in f.read().splitlines())
    return {k: float(values[k]) for k in ("loss", "loss_other_articles", "input_gap")}


def score(decode_dir: str) -> dict:
    """ROUGE-1/2/L of a decode folder in the two styles of the papers (x 100)."""
    from pointer_generator.evaluation import rouge

    out = {}
    for style, measure in (("gigaword", "f_score"), ("duc", "recall")):
        results = rouge.rouge_eval(
            os.path.join(decode_dir, "reference"), os.path.join(decode_dir, "decoded"), style=style
        )
        out[style] = {k: 100 * results[f"rouge_{k}_{measure}"] for k in ("1", "2", "l")}
    return out


def build_data(work: str, only: list[str], source: str) -> None:
    """The proxy pairs (and, for the runs of WORDS_KEPT, the rare-words-kept copy)."""
    if not os.path.exists(os.path.join(work, "data", "finished", "vocab")):
        _run([sys.executable, "-m", "data_tools.proxy_task", f"--input={source}",
              f"--out_dir={os.path.join(work, 'data')}"],
             os.path.join(work, "logs", "data.log"))  # fmt: skip
    words = os.path.join(work, "data_words")
    if any(n in WORDS_KEPT for n in only) and not os.path.exists(f"{words}/finished/vocab"):
        _run([sys.executable, "-m", "data_tools.proxy_task", f"--input={source}",
              f"--out_dir={words}", "--keep_rare_words"],
             os.path.join(work, "logs", "data_words.log"))  # fmt: skip


def main_stages(
    work: str, only: list[str], scale: float, source: str = SHARED, results_name: str = ""
) -> dict:
    owned_files.make_dir(os.path.join(work, "logs"))
    results_path = os.path.join(work, results_name or "results.json")
    results = {}
    if os.path.exists(results_path):
        with open(results_path, encoding="utf-8") as f:
            results = json_files.load(f)

    def save():
        # Replaced whole: a Ctrl-C mid-write must not break the next run's resume.
        owned_files.replace_file(results_path, json.dumps(results, indent=1, sort_keys=True))

    build_data(work, only, source)
    for name in only:
        if name == "abs_plus":
            continue
        # What any runner of this work folder has measured (a second runner writes its own
        # results file): a run is trained once, each of its rows decoded once.
        known = {**known_results(work), **results}
        keys = [GAP + name] + [name + row for row, _ in RUNS[name][3]]
        # Runs measured before the marker existed count as trained by their results.
        if not trained(work, name) and not any(k in known for k in keys):
            train(work, name, scale)
        if GAP + name not in known:
            results[GAP + name] = input_gap(work, name)
            save()
        missing = [(row, flags) for row, flags in RUNS[name][3] if name + row not in known]
        for row, flags in missing:
            results[name + row] = {"decode_dir": decode(work, name, row, flags)}
            results[name + row].update(score(results[name + row]["decode_dir"]))
            save()
    if "abs_plus" in only and "abs_plus" not in known_results(work) | results:
        results["abs_plus"] = abs_plus(work)
        save()
    if "prefix" not in results and not results_name:
        out = os.path.join(work, "prefix")
        _run([sys.executable, "-m", "experiments.prefix",
              f"--data_path={os.path.join(work, 'data', 'finished', 'test.bin')}",
              f"--out_dir={out}", "--no_rouge", "--overwrite"],
             os.path.join(work, "logs", "prefix.log"))  # fmt: skip
        results["prefix"] = {"decode_dir": out, **score(out)}
        save()
    return results


def abs_plus(work: str) -> dict:
    """MERT on the validation split with the attention ABS model, then a test decode."""
    name = "abs_attention"
    data = os.path.join(work, "data", "finished")
    weights = os.path.join(work, "abs_plus_weights.txt")
    if not os.path.exists(weights):
        cmd = [sys.executable, "-m", "pointer_generator.cli.entry", "tune_features",
               f"--flagfile={os.path.join(HERE, 'abs_decode.flags')}", *DECODE_COMMON,
               *_base(work, name), f"--data_path={os.path.join(data, 'val.bin')}",
               f"--weights_out={weights}", "--objective=rouge1_recall"]  # fmt: skip
        _run(cmd, os.path.join(work, "logs", "abs_plus.tune.log"))
    if not os.path.exists(weights):
        raise SystemExit(f"error: tune_features wrote no {weights}; see {work}/logs/")
    flags = ["--flagfile=" + os.path.join(HERE, "abs_decode.flags")]
    with open(weights, encoding="utf-8") as f:
        out = {"weights": f.read()}
    out["decode_dir"] = decode(work, name, "plus", flags, [f"--feature_weights={weights}"])
    out.update(score(out["decode_dir"]))
    return out


@exit_codes.command(interrupted="interrupted; run the same command again to continue")
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.families.run_proxy")
    p.add_argument("--work_dir", required=True)
    p.add_argument("--only", default=",".join([*RUNS, "abs_plus"]))
    p.add_argument("--epochs_scale", type=arg_types.positive_float, default=1.0)
    p.add_argument("--input", default=SHARED, help="the tokenized CNN/DM sample")
    p.add_argument(
        "--results_name",
        default="",
        help="write the scores to this file of --work_dir instead of results.json (a "
        "second runner alongside the first; the report reads results*.json)",
    )
    args = p.parse_args(argv)
    results = main_stages(
        args.work_dir, args.only.split(","), args.epochs_scale, args.input, args.results_name
    )
    print(json.dumps({k: {s: v[s] for s in ("gigaword", "duc") if s in v}
                      for k, v in results.items()}, indent=1))  # fmt: skip
    return exit_codes.OK


if __name__ == "__main__":
    sys.exit(main())
