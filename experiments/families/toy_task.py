"""Does each family learn, and read its input? The quick-start's toy task, every family.

    python -m experiments.families.toy_task --work_dir /tmp/families_toy \\
        [--only abs_attention_lead,ras_elman_lead] [--steps 1000] \\
        [--out experiments/results/families_toy/report.md]

The toy corpus (`data_tools.toy_data`) is made so that the article decides the summary:
each story follows one of a few templates and its summary names the story's own people,
places and numbers. A model that ignores its input can only write the template's common
words (ROUGE-1 F ~19 for ABS under Keras' initialisation, issue 29).

For each run (RUNS: every family at small sizes with the flags' default recipe, and with
NAMAS's plain SGD, 0.1 per 64 target words; RAS also with its paper's plain SGD; the
variants that show why; the first round of issue 29), the commands a user would type:

1. `pointer-generator --mode=train` for `--steps` steps of batch 16;
2. `pointer-generator --mode=eval --single_pass --input_gap` on the test split: the loss
   with the right articles and with every abstract paired with another article;
3. `pointer-generator --mode=decode --single_pass` on the test split (beam 4), scored
   with ROUGE-1.5.5; the number of distinct summaries.

Each stage is skipped when its result is in `<work_dir>/results.json`, so an interrupted
run continues; the report is rewritten after every run.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time

from experiments.families.run_proxy import _run, read_input_gap, score
from pointer_generator import exit_codes
from pointer_generator.cli import arg_types
from pointer_generator.runtime import json_files, owned_files

SIZES = ["--hidden_dim=128", "--emb_dim=64"]
# The earlier families read the first two sentences (at most 46 tokens here: the story's key
# facts), as the papers' models read a sentence (Gigaword: its first, ~31 words); the
# pointer-generator reads 200 tokens.
LEAD = ["--max_enc_steps=50"]
# NAMAS's plain SGD: rate 0.1 on the mean NLL of mini-batches of 64 target words, no
# clipping (spec abs-ras.md §2.5). Per target word that is 0.1/64 on the summed loss,
# whatever the batch holds.
NAMAS_SGD = ["--optimizer=sgd", "--loss_reduction=sum", f"--lr={0.1 / 64}",
             "--max_grad_norm=1e30", "--grad_norm=dense"]  # fmt: skip
# Before the families' own Adagrad default (SentenceFamily.DEFAULTS): the first round of
# issue 29 trained them with the pointer-generator's accumulator, on 200-token inputs.
FIRST = ["--adagrad_init_acc=0.1", "--max_enc_steps=200"]
SGD = ["--optimizer=sgd", "--lr=0.1"]
# Chopra et al.'s training (experiments/families/ras_*_paper.flags), at this batch size.
RAS_PAPER = ["--optimizer=sgd", "--loss_reduction=sum", "--max_grad_norm=10", "--grad_norm=dense"]
ABS = {
    "abs_attention": ("ABS, attention encoder", ["--model=abs", *SIZES]),
    "abs_bow": ("ABS, bag-of-words encoder", ["--model=abs", "--abs_encoder=bow", *SIZES]),
    "abs_conv": ("ABS, convolutional encoder", ["--model=abs", "--abs_encoder=conv", *SIZES]),
}
RAS = {
    "ras_elman": ("RAS-Elman", ["--model=ras_elman", "--hidden_dim=64"]),
    "ras_lstm": ("RAS-LSTM", ["--model=ras_lstm", "--hidden_dim=64"]),
}
# RAS as printed: the dot-product attention (the default before issue 29's third round,
# so every RAS row of the earlier rounds ran with it).
DOT = ["--ras_attention=dot"]
RAS_DOT = {f"{k}_dot": (f"{label} with the paper's dot-product attention", [*flags, *DOT])
           for k, (label, flags) in RAS.items()}  # fmt: skip
# name -> (what the row is, training flags; a --max_steps there overrides --steps)
RUNS = {
    "pointer_generator": (
        "pointer-generator (the quick-start's recipe, 200-token input)",
        ["--model=pointer_generator", "--hidden_dim=64", "--emb_dim=64", "--max_oovs=60",
         "--max_enc_steps=200"],
    ),
    **{f"{k}_lead": (f"{label}: default recipe", [*flags, *LEAD])
       for k, (label, flags) in {**ABS, **RAS}.items()},
    **{f"{k}_namas_sgd": (f"{label}: NAMAS's SGD (0.1 per 64 target words)",
                          [*flags, *LEAD, *NAMAS_SGD])
       for k, (label, flags) in ABS.items()},
    # RAS with the same rate, and the clipping its paper used: unclipped, RAS-LSTM's
    # loss diverged (16,174 after 1,000 steps; its cell has no tanh on m_t).
    **{f"{k}_namas_sgd": (f"{label}: NAMAS's SGD (0.1 per 64 target words), clipping at 10",
                          [*flags, *LEAD, *NAMAS_SGD, "--max_grad_norm=10"])
       for k, (label, flags) in {**RAS, **RAS_DOT}.items()},
    # NAMAS trained 15-20 epochs; 1,000 steps are 4 here. 4,000 steps are 16, 16,000 64
    # (NAMAS made ~100 times more updates than that on Gigaword).
    **{f"{k}_namas_sgd_{epochs}ep": (
        f"{label}: NAMAS's SGD{clip}, {250 * epochs:,} steps ({epochs} epochs)",
        [*flags, *LEAD, *NAMAS_SGD, *extra, f"--max_steps={250 * epochs}"])
       for epochs in (16, 64)
       for k, (label, flags), clip, extra in (
           ("abs_bow", ABS["abs_bow"], "", []),
           *((k, v, ", clipping at 10", ["--max_grad_norm=10"]) for k, v in RAS.items()))
       if epochs == 16 or k != "ras_elman"},  # RAS-Elman's 16-epoch loss: 2.93 (LSTM 1.84)
    # RAS's own paper trained with plain SGD at 0.5 (Elman) / 0.1 (LSTM) on the summed
    # loss, clipping at 10: per target word 320 / 64 times NAMAS's rate.
    **{f"{k}_paper_sgd": (f"{label}: the paper's SGD ({lr} on the summed loss, clipping at 10)",
                          [*flags, *LEAD, *RAS_PAPER, f"--lr={lr}"])
       for runs in (RAS, RAS_DOT) for k, (label, flags) in runs.items()
       for lr in [0.5 if k.startswith("ras_elman") else 0.1]},
    # NAMAS also renormalised every embedding row to norm <= 1 at each epoch's start.
    "abs_bow_namas_sgd_renorm": (
        "ABS, bag-of-words encoder: NAMAS's SGD and its per-epoch renormalisation",
        [*ABS["abs_bow"][1], *LEAD, *NAMAS_SGD, "--embedding_max_norm=1"],
    ),
    # The convolutional encoder's default rate for one round (now 0.02: at the papers'
    # sizes 0.05 saturates it, docs/families.md).
    "abs_conv_lead_lr005": (
        "ABS, convolutional encoder: Adagrad 0.05 (the default for one round)",
        [*ABS["abs_conv"][1], *LEAD, "--lr=0.05"],
    ),
    **{f"{k}_lead": (f"{label}: default recipe otherwise", [*flags, *LEAD])
       for k, (label, flags) in RAS_DOT.items()},
    **{f"{k}_lr005": (f"{label}: Adagrad 0.05 (the convolutional encoder's rate then)",
                      [*flags, *LEAD, "--lr=0.05"])
       for k, (label, flags) in RAS_DOT.items()},
    # RAS's embeddings are d wide whatever --emb_dim says (the attention is z_j · h).
    **{f"{k}_lead_d128": (f"{label}: d = 128 (ABS's hidden size)", [*flags, *LEAD, *SIZES])
       for k, (label, flags) in RAS_DOT.items()},
    **{f"{k}_lead_h0": (f"{label}: learned initial state",
                        [*flags, *LEAD, "--ras_initial_state=learned"])
       for k, (label, flags) in RAS_DOT.items()},
    "abs_attention_keras_lead": (
        "ABS, attention encoder: Keras' initialisation, accumulator 0.1 (before issue 29)",
        ["--model=abs", *SIZES, *LEAD, "--family_init=keras", "--adagrad_init_acc=0.1"],
    ),
    **{f"{k}_lead_acc01": (f"{label}: default recipe but accumulator 0.1",
                           [*flags, *LEAD, "--adagrad_init_acc=0.1"])
       for k, (label, flags) in {**ABS, **RAS_DOT}.items() if k != "abs_conv"},
    # First round (200-token inputs, accumulator 0.1): experiments/results/families_results.md.
    # Its convolutional-encoder rows are gone: their checkpoints lacked the encoder.
    "abs_attention": ("First round: ABS, attention encoder", ["--model=abs", *SIZES, *FIRST]),
    "abs_attention_sgd": ("First round: ABS, attention encoder, SGD 0.1 on the mean",
                          ["--model=abs", *SIZES, *FIRST, *SGD]),
    "abs_attention_keras": (
        "First round: ABS, attention encoder, Keras' initialisation (before issue 29)",
        ["--model=abs", *SIZES, "--family_init=keras", *FIRST],
    ),
    "abs_bow": ("First round: ABS, bag-of-words encoder", ["--model=abs", "--abs_encoder=bow",
                                                            *SIZES, *FIRST]),
    "abs_bow_sgd": ("First round: ABS, bag-of-words encoder, SGD 0.1 on the mean",
                    ["--model=abs", "--abs_encoder=bow", *SIZES, *FIRST, *SGD]),
    "ras_elman": ("First round: RAS-Elman", ["--model=ras_elman", "--hidden_dim=64", *DOT, *FIRST]),
    "ras_elman_sgd": ("First round: RAS-Elman, SGD 0.1 on the mean",
                      ["--model=ras_elman", "--hidden_dim=64", *DOT, *FIRST, *SGD]),
    "ras_elman_paper_lr": (
        "First round: RAS-Elman, SGD 0.5 on the mean loss, clipping at 10 (issue 29's failing run)",
        ["--model=ras_elman", "--hidden_dim=64", *DOT, *FIRST, "--optimizer=sgd", "--lr=0.5",
         "--max_grad_norm=10"],
    ),
    "ras_elman_paper": (
        "First round: RAS-Elman, the paper's recipe (SGD 0.5 on the summed loss, clipping at 10)",
        ["--model=ras_elman", "--hidden_dim=64", *DOT, *FIRST, *RAS_PAPER, "--lr=0.5"],
    ),
    "ras_lstm_paper_h0": (
        "First round: RAS-LSTM, the paper's recipe, learned initial state",
        ["--model=ras_lstm", "--hidden_dim=64", *DOT, *FIRST, *RAS_PAPER, "--lr=0.1",
         "--ras_initial_state=learned"],
    ),
    "ras_lstm_paper": (
        "First round: RAS-LSTM, the paper's recipe (SGD 0.1 on the summed loss, clipping at 10)",
        ["--model=ras_lstm", "--hidden_dim=64", *DOT, *FIRST, *RAS_PAPER, "--lr=0.1"],
    ),
    "ras_elman_long": (
        "First round: RAS-Elman, 3,000 steps",
        ["--model=ras_elman", "--hidden_dim=64", *DOT, *FIRST, "--max_steps=3000"],
    ),
    "ras_elman_h0": (
        "First round: RAS-Elman, learned initial state",
        ["--model=ras_elman", "--hidden_dim=64", *DOT, *FIRST, "--ras_initial_state=learned"],
    ),
    "ras_elman_wide_h0": (
        "First round: RAS-Elman, d = 128, learned initial state",
        ["--model=ras_elman", "--hidden_dim=128", *DOT, *FIRST, "--ras_initial_state=learned"],
    ),
    "ras_lstm": ("First round: RAS-LSTM", ["--model=ras_lstm", "--hidden_dim=64", *DOT, *FIRST]),
    "ras_lstm_h0": (
        "First round: RAS-LSTM, learned initial state",
        ["--model=ras_lstm", "--hidden_dim=64", *DOT, *FIRST, "--ras_initial_state=learned"],
    ),
    "ras_lstm_sgd": ("First round: RAS-LSTM, SGD 0.1 on the mean",
                     ["--model=ras_lstm", "--hidden_dim=64", *DOT, *FIRST, *SGD]),
}  # fmt: skip
COMMON = ["--batch_size=16", "--max_dec_steps=40", "--vocab_size=5000",
          "--static_shapes=1"]  # fmt: skip
DECODE = ["--beam_size=4", "--min_dec_steps=0", "--max_dec_steps=40", "--decode_batch_size=16"]
PG = [sys.executable, "-m", "pointer_generator.cli.run_summarization"]


def _user_command(cmd: list[str], work: str) -> str:
    """The command as a user types it: `pointer-generator ...`, paths under the work dir
    shortened to W."""
    text = " ".join(["pointer-generator", *cmd[len(PG) :]])
    return text.replace(work, "W")


def _flags(work: str, name: str) -> list[str]:
    data = os.path.join(work, "toy")
    return [f"--log_root={os.path.join(work, 'runs')}", f"--exp_name={name}",
            f"--vocab_path={os.path.join(data, 'vocab')}"]  # fmt: skip


def train_command(work: str, name: str, steps: int) -> list[str]:
    extra = RUNS[name][1]
    if extra[0].startswith("--model=ras"):
        extra = [*extra, "--max_positions=200"]  # RAS: a position embedding per input word
    if not any(f.startswith("--max_steps=") for f in extra):
        extra = [*extra, f"--max_steps={steps}"]
    return [*PG, "--mode=train", *COMMON, *extra, *_flags(work, name),
            f"--data_path={os.path.join(work, 'toy', 'chunked', 'train_*')}",
            "--log_every_n_steps=100"]  # fmt: skip


def train(work: str, name: str, steps: int) -> list[str]:
    cmd = train_command(work, name, steps)
    _run(cmd, os.path.join(work, "logs", f"{name}.train.log"))
    return cmd


def input_gap(work: str, name: str) -> tuple[list[str], dict]:
    cmd = [*PG, "--mode=eval", "--single_pass", "--input_gap", *_flags(work, name),
           f"--data_path={os.path.join(work, 'toy', 'chunked', 'test_*')}"]  # fmt: skip
    _run(cmd, os.path.join(work, "logs", f"{name}.eval.log"))
    return cmd, read_input_gap(os.path.join(work, "runs", name))


def decode(work: str, name: str) -> tuple[list[str], dict]:
    before = set(glob.glob(os.path.join(work, "runs", name, "decode_test_*")))
    cmd = [*PG, "--mode=decode", "--single_pass", *DECODE, *_flags(work, name),
           f"--data_path={os.path.join(work, 'toy', 'chunked', 'test_*')}"]  # fmt: skip
    _run(cmd, os.path.join(work, "logs", f"{name}.decode.log"))
    new = sorted(set(glob.glob(os.path.join(work, "runs", name, "decode_test_*"))) - before)
    folder = new[-1]
    summaries = []
    for path in sorted(glob.glob(os.path.join(folder, "decoded", "*.txt"))):
        with open(path, encoding="utf-8") as f:
            summaries.append(f.read().strip())
    out = {"decode_dir": folder, "summaries": len(summaries), "distinct": len(set(summaries))}
    out["examples"] = summaries[:3]
    out.update(score(folder))
    return cmd, out


def run(work: str, only: list[str], steps: int, out: str | None) -> dict:
    owned_files.make_dir(os.path.join(work, "logs"))
    results_path = os.path.join(work, "results.json")
    results = {}
    if os.path.exists(results_path):
        with open(results_path, encoding="utf-8") as f:
            results = json_files.load(f)
    if not os.path.exists(os.path.join(work, "toy", "vocab")):
        _run([sys.executable, "-m", "data_tools.toy_data", f"--out_dir={work}/toy",
              "--num_train=4000", "--num_test=200"],
             os.path.join(work, "logs", "data.log"))  # fmt: skip
    for name in only:
        if name in results:
            continue
        t0 = time.time()
        row = {"commands": [_user_command(train(work, name, steps), work)]}
        cmd, row["gap"] = input_gap(work, name)
        row["commands"].append(_user_command(cmd, work))
        cmd, row["decode"] = decode(work, name)
        row["commands"].append(_user_command(cmd, work))
        row["seconds"] = time.time() - t0
        results[name] = row
        owned_files.replace_file(results_path, json.dumps(results, indent=1, sort_keys=True))
        if out:
            write_report(results, out, steps)
    return results


LEARNS_ROUGE1 = 30.0
LEARNS_GAP = 0.05


def learns(row: dict) -> bool:
    """The issue's bar: ROUGE-1 far above an input-independent template, most summaries
    distinct, the input gap clearly positive."""
    d = row["decode"]
    return (
        d["gigaword"]["1"] > LEARNS_ROUGE1
        and d["distinct"] > d["summaries"] / 2
        and row["gap"]["input_gap"] > LEARNS_GAP
    )


def write_report(results: dict, out: str, steps: int) -> None:
    """The results page: one row per run, its commands and example summaries."""
    lines = [
        "# Every family on the toy task: do they learn, and do they read their input?",
        "",
        f"Made by `python -m experiments.families.toy_task --work_dir W --steps {steps} "
        f"--out {out}` on this project's 2-core CPU machine (issue 29). Corpus: "
        "`python -m data_tools.toy_data --num_train 4000 --num_test 200` (the quick-start's "
        "synthetic stories: the article decides the summary). Each model trained "
        f"{steps:,} steps of batch 16 unless its row says otherwise, vocabulary 5,000; "
        "test split 200 articles. The earlier families read the first 50 tokens (the two "
        "sentences that hold the story's facts; ABS and RAS summarize a sentence), the "
        "pointer-generator 200. *Default recipe*: the flags' defaults, which for ABS and "
        "RAS are Adagrad 0.15 with its first accumulator at 1e-4, and 0.02 for ABS's "
        "convolutional encoder; RAS attends with scaled cosine scores (`--ras_attention="
        "cosine`, not the paper's). Rows *with the paper's dot-product attention* pass "
        "`--ras_attention=dot`, as every RAS row of the earlier rounds ran (docs/families.md, "
        '"RAS: the attention locks onto one position"). Rows marked *First round* are the '
        "first round of issue 29 "
        "(200-token inputs, the pointer-generator's accumulator 0.1); its convolutional-"
        "encoder rows were dropped, as their checkpoints lacked the encoder "
        "(docs/families.md). Several processes shared the 2 cores: minutes are not speeds.",
        "",
        "*input gap*: the loss with every abstract paired with another article minus the "
        "loss with its own (`eval --single_pass --input_gap`); 0 means the model ignores its "
        "input. *ROUGE-1 F*: ROUGE-1.5.5 full-length F1 (x 100) of the beam-4 decodes. A "
        "model that writes one template for every article scores ~19 (issue 29).",
        "",
        f"*learns the task*: ROUGE-1 F above {LEARNS_ROUGE1} (far above the template's ~19), "
        f"more than half the summaries distinct, and an input gap above {LEARNS_GAP} nats "
        "(the gap under which `--input_gap` warns). What the numbers say, and what the "
        'earlier families still lack here: docs/families.md, "Initialisation, and do they '
        'read their input?".',
        "",
        "| run | loss (right articles) | loss (other articles) | input gap (nats) | "
        "ROUGE-1 F | ROUGE-2 F | ROUGE-L F | distinct summaries | learns the task | minutes |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, (label, _) in RUNS.items():
        if name not in results:
            continue
        r = results[name]
        g, d = r["gap"], r["decode"]
        rouge = d["gigaword"]
        lines.append(
            f"| {label} | {g['loss']:.3f} | {g['loss_other_articles']:.3f} | "
            f"{g['input_gap']:+.3f} | {rouge['1']:.1f} | {rouge['2']:.1f} | {rouge['l']:.1f} | "
            f"{d['distinct']} of {d['summaries']} | {'yes' if learns(r) else '**no**'} | "
            f"{r['seconds'] / 60:.1f} |"
        )
    lines += ["", "## Example summaries (the first three test articles)", ""]
    for name, (label, _) in RUNS.items():
        if name in results:
            lines.append(f"**{label}**")
            lines.append("")
            examples = results[name]["decode"]["examples"]
            lines += [f"{i + 1}. {' '.join(s.split())}" for i, s in enumerate(examples)]
            lines.append("")
    lines += ["## Commands (W: the work folder)", ""]
    for name, (label, _) in RUNS.items():
        if name in results:
            lines += [f"{label}:", "", "```", *results[name]["commands"], "```", ""]
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


@exit_codes.command
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.families.toy_task")
    p.add_argument("--work_dir", required=True, type=str)
    p.add_argument("--only", default=",".join(RUNS), help="runs, comma-separated")
    p.add_argument("--steps", type=arg_types.positive_int, default=1000)
    p.add_argument("--out", default=None, help="write the results page here (markdown)")
    args = p.parse_args(argv)
    only = [n for n in args.only.split(",") if n]
    unknown = [n for n in only if n not in RUNS]
    if unknown:
        p.error(f"unknown runs {unknown}; choose from {', '.join(RUNS)}")
    run(os.path.abspath(args.work_dir), only, args.steps, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
