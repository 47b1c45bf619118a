"""The results page of the families on the proxy task (issue 20, item 7).

    python -m experiments.families.report --work_dir /tmp/families_proxy \\
        --out experiments/results/families_proxy/report.md

Reads `<work_dir>/results.json` (written by `experiments.families.run_proxy`), each run's
TensorBoard events (validation perplexity and learning rate per epoch) and the decode
folders, and writes next to `report.md`: `report_learning_curves.png` (validation
perplexity per epoch), `report_rouge.png` (ROUGE-1 in both styles) and `report.json`.
The page sets the numbers beside the papers' (which are Gigaword and DUC-2004
numbers, not comparable in size) and checks the papers' orderings one by one.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from experiments import report as base_report
from experiments.families.run_proxy import GAP, RUNS, known_results
from pointer_generator import exit_codes
from pointer_generator.errors import PointerGeneratorError

# Validation perplexity on Gigaword (Rush 2015 Table 2 via Chopra 2016 Table 1).
PAPER_PERPLEXITY = {
    "abs_bow": 43.6,
    "abs_conv": 35.9,
    "abs_attention": 27.1,
    "ras_elman": 18.9,
    "ras_lstm": 20.3,
}
# row -> (label, Gigaword F1 R-1/2/L (Chopra Table 2), DUC-2004 recall (Chopra Table 3,
# Rush Table 1 for PREFIX))
ROWS = {
    "prefix": ("PREFIX (first 75 characters)", None, (22.43, 6.49, 19.65)),
    "abs_bow": ("ABS, bag-of-words encoder (enc1)", None, None),
    "abs_conv": ("ABS, convolutional encoder (enc2)", None, None),
    "abs_attention": ("ABS (attention encoder, k=50)", (29.55, 11.32, 26.42), (26.55, 7.06, 22.05)),
    "abs_plus": ("ABS+ (k=50, MERT-tuned features)", (29.76, 11.88, 26.96), (28.18, 8.49, 23.81)),
    **{
        f"abs_{enc}_adagrad{key}": (
            f"ABS, {label} encoder, default recipe (Adagrad; k={k})",
            None,
            None,
        )
        for enc, label in (
            ("bow", "bag-of-words"),
            ("conv", "convolutional"),
            ("attention", "attention"),
        )
        for key, k in (("", 50), (" (k=1)", 1))
    },  # fmt: skip
    "ras_elman (k=10)": ("RAS-Elman (k=10)", (33.78, 15.97, 31.15), (28.97, 8.26, 24.06)),
    "ras_elman (k=1)": ("RAS-Elman (k=1)", (33.10, 14.45, 30.25), (29.13, 7.62, 23.92)),
    "ras_lstm (k=10)": ("RAS-LSTM (k=10)", (32.55, 14.70, 30.03), (27.41, 7.69, 23.06)),
    "ras_lstm (k=1)": ("RAS-LSTM (k=1)", (31.71, 13.63, 29.31), (26.90, 6.57, 22.12)),
    **{
        f"{name}_adagrad (k={k})": (
            f"{label}, default recipe (Adagrad, cosine attention; k={k})",
            None,
            None,
        )
        for name, label in (("ras_elman", "RAS-Elman"), ("ras_lstm", "RAS-LSTM"))
        for k in ("10", "1", "10, block_unk")
    },  # fmt: skip
    **{
        f"{name} (k=10, block_unk)": (f"{label} (k=10; [UNK] blocked, as ABS)", None, None)
        for name, label in (("ras_elman", "RAS-Elman"), ("ras_lstm", "RAS-LSTM"))
    },
    **{
        f"pointer_generator{run}{row}": (f"pointer-generator (k=4{note}), {inputs}", None, None)
        for run, inputs in (
            ("", "inputs with [UNK] as Gigaword's"),
            ("_words", "inputs that keep their rare words (it copies them)"),
        )
        for row, note in (("", "; not in these papers"), (" (block_unk)", "; [UNK] blocked"))
    },  # fmt: skip
}
LIMITATIONS = """\
* **Not Gigaword, not DUC, not CNN/DM results.** The proxy pairs are the first sentence and
  the first highlight of 6,836 CNN/Daily Mail *test-split* stories (spec abs-ras.md §7),
  split 80/10/10 by id (5,513 / 695 / 628). Absolute numbers are not comparable with the
  papers' columns printed beside them; only orderings can be compared, and even those may
  not hold at this scale.
* **~690 times less training data than Gigaword** (5,513 vs 3.8M pairs), ~3,800-word
  vocabulary (words seen 5 times), and a few epochs of CPU training: every model here is
  far from converged.
* **Highlights are not headlines**: ~13 tokens instead of ~8, full sentences, often about
  content that is not in the first sentence (only 43 % of their tokens occur there).
* **Rare words are [UNK]** (seen fewer than 5 times in the 5,513 training pairs): in the
  inputs and the training titles, as in the Gigaword release. The test references keep
  their words, so a summary earns nothing by writing [UNK]; the models that learned to
  write it (the pointer-generator copies the inputs' [UNK]s) score low (the *[UNK] %*
  column). The pointer-generator's second row reads inputs that keep their words
  (`data_tools.proxy_task --keep_rare_words`, same vocabulary): the fair setting for a
  model that copies.
* **One reference per input**: the DUC-style column truncates to 75 bytes and scores recall
  against that single reference, not DUC-2004's four.
* **ABS+ was tuned on the ~690-pair validation split** (the paper used DUC-2003's 624 with
  4 references each): high variance.
* **Two recipes per family.** The papers' recipes: plain SGD, the ABS runs at 0.5 instead
  of the paper's 0.05 (87 steps per epoch here instead of ~60,000; the convolutional
  encoder at 0.1, as 0.5 saturates it), the RAS runs at the paper's 0.5 / 0.1 on the
  summed loss, clipped at 10 (and the paper's dot-product attention). And this project's
  default recipe for every family (Adagrad 0.15 with its first accumulator at 1e-4; 0.02
  for the convolutional encoder; RAS's cosine attention), the one that learns the toy task
  (`experiments/results/families_toy/report.md`); the rows marked *default recipe* keep
  the papers' sizes, batches and length limits. The pointer-generator uses its own recipe
  (Adagrad 0.15), validated the same way.
* **Does a model read its input?** The *input gap* column is the test loss with every
  highlight paired with another story's sentence minus the loss with its own
  (`pointer-generator --mode=eval --single_pass --input_gap`), in nats per word: near 0,
  the model writes the same summary whatever it reads.
"""


def _epoch_curve(run_dir: str) -> dict:
    try:
        scalars = base_report.read_scalars(os.path.join(run_dir, "eval"))
    except base_report.ReportError:
        return {}
    series = scalars.get(".", {})
    return {k: series[k] for k in ("perplexity", "learning_rate") if k in series}


def _first_lines(decode_dir: str, kind: str, n: int) -> list[str]:
    sub = os.path.join(decode_dir, kind)
    names = sorted(os.listdir(sub))[:n] if os.path.isdir(sub) else []
    return [open(os.path.join(sub, x), encoding="utf-8").read().strip() for x in names]


def unk_share(decode_dir: str) -> float:
    """Share of [UNK] among the summary tokens of a decode folder (x 100)."""
    tokens = " ".join(_first_lines(decode_dir, "decoded", 10**9)).replace("][", "] [").split()
    return 100.0 * sum(t == "[UNK]" for t in tokens) / max(len(tokens), 1)


def distinct_outputs(decode_dir: str) -> tuple[int, int]:
    """(distinct summaries, summaries) of a decode folder."""
    texts = _first_lines(decode_dir, "decoded", 10**9)
    return len(set(texts)), len(texts)


def _cell(v) -> str:
    return "–" if v is None else f"{v:.2f}"


def _triple(scores: dict | None) -> str:
    if not scores:
        return "– | – | –"
    return " | ".join(f"{scores[k]:.2f}" for k in ("1", "2", "l"))


def _paper(t) -> str:
    return "– | – | –" if t is None else " | ".join(f"{x:.2f}" for x in t)


def orderings(results: dict, ppl: dict) -> list[tuple[str, bool | None, str]]:
    """The papers' findings, each with whether it held here: with the papers' recipes
    (plain SGD), then with the default recipe (the `_adagrad` runs) where it applies."""

    def r1(row, style):
        return results.get(row, {}).get(style, {}).get("1")

    checks = []

    def check(text, left, right, lower_is_better=False):
        if left is None or right is None:
            checks.append((text, None, "not measured"))
            return
        held = left < right if lower_is_better else left > right
        checks.append((text, held, f"{left:.2f} vs {right:.2f}"))

    for suffix, recipe in (("", ""), ("_adagrad", ", default recipe")):
        abs_att, abs_conv, abs_bow = (f"abs_{e}{suffix}" for e in ("attention", "conv", "bow"))
        elman, lstm = f"ras_elman{suffix}", f"ras_lstm{suffix}"
        check(f"perplexity: attention ABS < convolutional{recipe}", ppl.get(abs_att),
              ppl.get(abs_conv), True)  # fmt: skip
        check(f"perplexity: convolutional < bag-of-words{recipe}", ppl.get(abs_conv),
              ppl.get(abs_bow), True)  # fmt: skip
        check(f"perplexity: RAS-Elman < ABS{recipe}", ppl.get(elman), ppl.get(abs_att), True)
        check(f"perplexity: RAS-Elman < RAS-LSTM{recipe}", ppl.get(elman), ppl.get(lstm), True)
        check(f"DUC-style R-1: ABS > PREFIX{recipe}", r1(abs_att, "duc"), r1("prefix", "duc"))
        if not suffix:  # ABS+ is tuned on the SGD attention model only
            check("DUC-style R-1: ABS+ > ABS", r1("abs_plus", "duc"), r1(abs_att, "duc"))
            check("Gigaword-style R-1: ABS+ > ABS", r1("abs_plus", "gigaword"),
                  r1(abs_att, "gigaword"))  # fmt: skip
        check(f"Gigaword-style R-1: RAS-Elman (k=10) > ABS{recipe}",
              r1(f"{elman} (k=10)", "gigaword"), r1(abs_att, "gigaword"))  # fmt: skip
        # The same with RAS's search blocking [UNK] as ABS's does (the references keep
        # their words: an [UNK] never matches).
        check(f"Gigaword-style R-1: RAS-Elman (k=10, [UNK] blocked) > ABS{recipe}",
              r1(f"{elman} (k=10, block_unk)", "gigaword"),
              r1(abs_att, "gigaword"))  # fmt: skip
        check(f"Gigaword-style R-1: RAS-Elman beam 10 > greedy{recipe}",
              r1(f"{elman} (k=10)", "gigaword"), r1(f"{elman} (k=1)", "gigaword"))  # fmt: skip
        check(f"Gigaword-style R-1: RAS-Elman > RAS-LSTM (k=10){recipe}",
              r1(f"{elman} (k=10)", "gigaword"), r1(f"{lstm} (k=10)", "gigaword"))  # fmt: skip
    return checks


def write(work: str, out: str) -> str:
    results = known_results(work)
    runs = os.path.join(work, "runs")
    curves = {name: _epoch_curve(os.path.join(runs, name)) for name in sorted(os.listdir(runs))}
    ppl = {n: min(v for _, v in c["perplexity"]) for n, c in curves.items() if c.get("perplexity")}
    stem = os.path.splitext(out)[0]
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    pictures = []
    plt = base_report._pyplot()
    fig, ax = plt.subplots(figsize=base_report.FIGSIZE, dpi=base_report.DPI)
    for name, c in curves.items():
        if c.get("perplexity"):
            steps = [s for s, _ in c["perplexity"]]
            ax.plot(range(1, len(steps) + 1), [v for _, v in c["perplexity"]], marker="o",
                    label=name)  # fmt: skip
    ax.set_yscale("log")
    ax.set_xlabel("epoch")
    ax.set_ylabel("validation perplexity (log scale)")
    ax.set_title("Proxy task: validation perplexity per epoch")
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(stem + "_learning_curves.png")
    plt.close(fig)
    pictures.append(stem + "_learning_curves.png")
    rows = [r for r in ROWS if r in results]
    base_report.bar_chart(
        {
            "Gigaword-style F1": [results[r]["gigaword"]["1"] for r in rows],
            "DUC-style 75-byte recall": [results[r]["duc"]["1"] for r in rows],
        },
        [r.replace("pointer_generator", "PG").replace(" ", "\n", 1) for r in rows],
        "Proxy task: ROUGE-1 (x100) by system",
        "ROUGE-1",
        stem + "_rouge.png",
    )
    pictures.append(stem + "_rouge.png")
    lines = [
        "# ABS, ABS+, RAS and the pointer-generator on the CNN/DM lead-sentence proxy task",
        "",
        "Made by `python -m experiments.families.run_proxy --work_dir W` (data, training, "
        "decoding, ABS+ tuning, ROUGE) and `python -m experiments.families.report "
        "--work_dir W --out <this file>` on this project's 2-core CPU machine. "
        "**Read the limitations first: these are proxy numbers, not Gigaword, DUC or "
        "CNN/DM results.**",
        "",
        "## Limitations",
        "",
        LIMITATIONS,
        "## Validation perplexity (best epoch) and input gap",
        "",
        "| model | epochs | proxy validation perplexity | paper (Gigaword validation) "
        "| input gap on the test split (nats) |",
        "|---|---|---|---|---|",
    ]
    for name in curves:
        c = curves[name]
        n = len(c.get("perplexity", []))
        paper = _cell(PAPER_PERPLEXITY.get(name))
        gap = results.get(GAP + name, {}).get("input_gap")
        gap = "–" if gap is None else f"{gap:+.3f}"
        # A run without its input gap (measured once it is trained) is still training.
        name_cell = name if GAP + name in results else f"{name} (not finished)"
        lines.append(f"| {name_cell} | {n or '–'} | {_cell(ppl.get(name))} | {paper} | {gap} |")
    waiting = [name for name in RUNS if name not in curves and GAP + name not in results]
    if waiting:
        lines += ["", f"Not started yet: {', '.join(waiting)}."]
    lines += [
        "",
        f"![validation perplexity per epoch]({os.path.basename(pictures[0])})",
        "",
        "## ROUGE on the proxy test split (628 pairs), both papers' styles",
        "",
        "Gigaword style: full-length ROUGE-1/2/L F1 (`-m -n 2 -w 1.2 -a`), as Chopra et al. "
        "report Gigaword. DUC style: recall of the first 75 bytes (`-m -b 75 -n 2 -w 1.2 -a`), "
        "as both papers report DUC-2004, here against the single reference. Paper columns: "
        "Chopra et al. 2016 Tables 2 and 3 (PREFIX: Rush et al. 2015 Table 1).",
        "",
        "| system | proxy F1 R-1 | R-2 | R-L | paper Gigaword F1 R-1 | R-2 | R-L "
        "| proxy 75-byte R R-1 | R-2 | R-L | paper DUC-2004 R R-1 | R-2 | R-L "
        "| distinct summaries | [UNK] % of tokens |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    distinct = {r: distinct_outputs(results[r]["decode_dir"]) for r in rows}
    for row in rows:
        label, giga, duc = ROWS[row]
        res = results[row]
        lines.append(
            f"| {label} | {_triple(res.get('gigaword'))} | {_paper(giga)} | "
            f"{_triple(res.get('duc'))} | {_paper(duc)} | "
            f"{distinct[row][0]:,} of {distinct[row][1]:,} | "
            f"{unk_share(results[row]['decode_dir']):.0f} |"
        )
    lines += ["", f"![ROUGE-1 by system]({os.path.basename(pictures[1])})", ""]
    same = [
        ROWS[r][0]
        for r in rows
        if r != "prefix" and distinct[r][0] <= max(1, 0.05 * distinct[r][1])
    ]
    if same:
        lines += [
            "**Input-independent output.** " + ", ".join(same) + " wrote only a handful "
            "of distinct summaries for all the inputs (the *distinct summaries* column): at "
            "this scale their language model learned the highlights' common words, and the "
            "encoder does not yet steer the output. Their ROUGE is that of a few fixed "
            "sentences.",
            "",
        ]
    if "abs_plus" in results:
        lines += ["ABS+ weights (MERT, ROUGE-1 recall at 75 bytes, on the validation split):",
                  "", "```", results["abs_plus"]["weights"].strip(), "```", ""]  # fmt: skip
    lines += ["## The papers' orderings, checked here", "", "| finding | held here? | values |",
              "|---|---|---|"]  # fmt: skip
    # Only finished runs (each has its input gap): a run still training has a partial curve.
    checks = orderings(results, {n: v for n, v in ppl.items() if GAP + n in results})
    for text, held, values in checks:
        mark = "not measured" if held is None else ("yes" if held else "**no**")
        lines.append(f"| {text} | {mark} | {values} |")
    lines += ["", "## Example outputs (first three test pairs)", ""]
    any_dir = results[rows[0]]["decode_dir"]
    refs = _first_lines(any_dir, "reference", 3)
    outputs = {r: _first_lines(results[r]["decode_dir"], "decoded", 3) for r in rows}
    for i, ref in enumerate(refs):
        lines += [f"**Example {i + 1}.** Reference: _{ref}_", ""]
        lines += [f"* {ROWS[r][0]}: {outputs[r][i] if i < len(outputs[r]) else '–'}" for r in rows]
        lines.append("")
    text = "\n".join(lines) + "\n"
    with open(out, "w", encoding="utf-8") as f:
        f.write(text)
    found = [{"finding": t, "held": h, "values": v} for t, h, v in checks]
    summary = {"results": results, "perplexity": ppl, "curves": curves, "orderings": found}
    with open(stem + ".json", "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1, sort_keys=True, default=str)
    return out


@exit_codes.command
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.families.report")
    p.add_argument("--work_dir", required=True)
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    if not os.path.exists(os.path.join(args.work_dir, "results.json")):
        raise PointerGeneratorError(
            f"{args.work_dir}/results.json does not exist: run experiments.families.run_proxy"
        )
    print(f"wrote {write(args.work_dir, args.out)}")
    return exit_codes.OK


if __name__ == "__main__":
    sys.exit(main())
