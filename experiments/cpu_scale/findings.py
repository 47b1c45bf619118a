"""The paper's findings, checked on the CPU-scale results and written into the report.

Each finding is a sentence of the paper turned into a comparison of measured numbers
(`check_findings`); the report states for each whether it held here, with the numbers.
Systems are the dicts of `experiments.report.gather` (rows `baseline_50k`,
`pointer_generator`, `pointer_generator_coverage`, `lead3`).
"""

from __future__ import annotations

import os

from experiments import report
from experiments.benchmarks.common import machine_description
from experiments.paper import run_recipe

ROUGE_KEYS = (("R-1", "rouge_1_f_score"), ("R-2", "rouge_2_f_score"), ("R-L", "rouge_l_f_score"))
DUP_KEYS = report.DUP_KEYS
VOCAB_WORDS = 20000  # recipes/cpu.flags


def _by_name(systems: list[dict]) -> dict[str, dict]:
    return {s["name"]: s for s in systems}


def _rouge(s: dict, key: str) -> float:
    return 100.0 * s["rouge"][key][0]


def check_findings(systems: list[dict]) -> list[tuple[str, bool, str]]:
    """[(the paper's claim, held here?, the numbers)] for the rows that are present."""
    by = _by_name(systems)
    base, pg, cov = (
        by.get(k) for k in ("baseline_50k", "pointer_generator", "pointer_generator_coverage")
    )
    out = []
    if base and pg:
        wins = [(label, _rouge(pg, k), _rouge(base, k)) for label, k in ROUGE_KEYS]
        out.append(
            (
                "The pointer-generator scores higher ROUGE than the baseline.",
                all(a > b for _, a, b in wins),
                ", ".join(f"{label} {a:.2f} vs {b:.2f}" for label, a, b in wins),
            )
        )
        u_pg, u_base = (s["analysis"]["system"]["unk_summary_pct"] for s in (pg, base))
        # Not "none at all": P_vocab keeps an [UNK] entry, and the training targets of
        # OOV words that are not in the article are [UNK], as in the original.
        out.append(
            (
                "The pointer-generator (almost) never writes [UNK], unlike the baseline "
                "(here: in at most a tenth as many summaries).",
                u_base > 0 and u_pg <= u_base / 10,
                f"summaries with [UNK]: {u_pg:.1f}% vs baseline {u_base:.1f}%",
            )
        )
        c_pg = pg["analysis"]["system"]["copied_oov_per_summary"]
        w_pg = pg["analysis"]["system"]["summaries_with_copied_oov_pct"]
        out.append(
            (
                "The pointer-generator copies out-of-vocabulary words from the article.",
                bool(c_pg and c_pg > 0),
                f"{c_pg:.2f} article-OOV tokens per summary; {w_pg:.1f}% of summaries contain one"
                if c_pg is not None
                else "not measured",
            )
        )
    if pg and cov:
        ref = pg["analysis"]["reference"]
        d_pg = [pg["analysis"]["system"][k] for k in DUP_KEYS]
        d_cov = [cov["analysis"]["system"][k] for k in DUP_KEYS]
        d_ref = [ref[k] for k in DUP_KEYS]
        cats = report.CATEGORIES
        out.append(
            (
                "Coverage reduces repetition (duplicate n-grams and sentences).",
                all(c < p for c, p in zip(d_cov, d_pg, strict=True)),
                ", ".join(
                    f"{c}: {p:.1f}% → {v:.1f}%" for c, p, v in zip(cats, d_pg, d_cov, strict=True)
                ),
            )
        )
        out.append(
            (
                "With coverage, repetition comes close to the reference summaries' level.",
                all(abs(v - r) < abs(p - r) for p, v, r in zip(d_pg, d_cov, d_ref, strict=True)),
                ", ".join(
                    f"{c}: {v:.1f}% (reference {r:.1f}%)"
                    for c, v, r in zip(cats, d_cov, d_ref, strict=True)
                ),
            )
        )
        wins = [(label, _rouge(cov, k), _rouge(pg, k)) for label, k in ROUGE_KEYS]
        out.append(
            (
                "Coverage raises ROUGE over the pointer-generator.",
                all(a > b for _, a, b in wins),
                ", ".join(f"{label} {a:.2f} vs {b:.2f}" for label, a, b in wins),
            )
        )
    for name in ("pointer_generator", "pointer_generator_coverage"):
        s = by.get(name)
        p = s and s["analysis"].get("p_gen")
        if p and p.get("p_gen_mean_per_step") is not None:
            out.append(
                (
                    f"`{name}`: the model mostly copies (the paper's mean p_gen at test "
                    "time: 0.17).",
                    p["p_gen_mean_per_step"] < 0.5,
                    f"mean p_gen per step {p['p_gen_mean_per_step']:.3f}",
                )
            )
    return out


def findings_markdown(systems: list[dict]) -> str:
    lines = [
        "## The paper's findings on this data",
        "",
        "| finding (See et al. 2017) | held here? | measured |",
        "|---|---|---|",
    ]
    for claim, held, numbers in check_findings(systems):
        lines.append(f"| {claim} | {'yes' if held else '**no**'} | {numbers} |")
    return "\n".join(lines)


def validation_losses(runs_dir: str) -> list[str]:
    """Table rows `| run / stage | step | loss | coverage loss |` from the runs'
    recipe_state.json (their eval_single_pass stages)."""
    out = []
    for exp in sorted(os.listdir(runs_dir)) if os.path.isdir(runs_dir) else []:
        path = os.path.join(runs_dir, exp, "recipe_state.json")
        if not os.path.isfile(path):
            continue
        stages = run_recipe.State(path).data["stages"]  # checked as the runner checks it
        for name, record in stages.items():
            v = record.get("validation")
            if v:
                out.append(
                    f"| `{exp}` / `{name}` | {v.get('step', '?')} | "
                    f"{_num(v.get('loss'))} | {_num(v.get('coverage_loss'))} |"
                )
    return out


def _num(value) -> str:
    try:
        return f"{float(value):.4f}"
    except (TypeError, ValueError):
        return "–"


def training_minutes(train_dir: str) -> float | None:
    """Wall-clock minutes the training processes of `train_dir` ran, start-up included:
    per event file, from the creation time in its name to its last write."""
    total, found = 0.0, False
    for name in os.listdir(train_dir) if os.path.isdir(train_dir) else []:
        if ".tfevents." not in name:
            continue
        try:
            created = float(name.split(".tfevents.", 1)[1].split(".", 1)[0])
        except ValueError:
            continue
        total += max(0.0, os.path.getmtime(os.path.join(train_dir, name)) - created)
        found = True
    return total / 60 if found else None


def _times(runs_dir: str) -> str:
    parts = []
    for exp in ("baseline", "pointer_generator"):
        minutes = training_minutes(os.path.join(runs_dir, exp, "train"))
        if minutes is not None:
            parts.append(f"`{exp}` {minutes:.0f} min")
    return ", ".join(parts) or "not recorded"


def preamble(runs_dir: str, args, seconds: float) -> str:
    return "\n".join(
        [
            "# CPU-scale experiments: the paper's findings on 8,490 training pairs",
            "",
            "Rerun everything (data split, three models, lead-3, this report) with "
            "`python -m experiments.cpu_scale.run_all --work_dir /tmp/cpu_scale`; "
            "`experiments/cpu_scale/README.md` describes the set-up.",
            "",
            "* data: the shared sample `cnndm_sample.jsonl.gz` split by "
            "`experiments.cpu_scale.split_sample` (seed 0): 8,490 train / 500 val / 500 test; "
            "vocabulary = the 20,000 most frequent training-set words;",
            "* models (`experiments/cpu_scale/recipes/`): hidden 128, embedding 64, batch 16, "
            "Adagrad 0.15 as the paper; 1,500 steps at 100/25 tokens then 2,000 at 200/50 "
            "(3,500 steps ≈ 6.6 epochs); coverage: 500 more steps with `cov_loss_wt` 1; "
            "the newest checkpoint is decoded (no eval job, to keep the CPU for training);",
            "* decoding: beam 4, articles truncated to 200 tokens, summaries of 35-120 tokens; "
            "ROUGE-1.5.5 with the original's options;",
            f"* machine: {machine_description()}; "
            f"`--jobs {args.jobs}` (the two training runs share the cores); training wall-clock "
            f"time, start-ups included: {_times(runs_dir)} (the latter with its coverage "
            f"phase); this call of `run_all` took {seconds / 60:.0f} min (stages finished by "
            "an earlier call are reused).",
            "",
            "These numbers are far below the paper's (a model ~1/30 of its training on ~3 % of "
            "its data): what carries over is the *comparisons* between the models, below.",
            "",
        ]
    )


def add_to_report(path: str, systems: list[dict], runs_dir: str, args, seconds: float) -> None:
    """Put the preamble and the findings in front of `report.write_report`'s markdown."""
    with open(path, encoding="utf-8") as f:
        body = f.read()
    body = body.replace("# Table 1 reproduction report\n", "", 1)
    # Rows are matched with the paper's by name; the vocabulary here is smaller.
    body = body.replace(
        "(50k vocab) (`baseline_50k`)",
        f"(paper: 50k vocab; here {VOCAB_WORDS // 1000}k) (`baseline_50k`)",
    )
    losses = validation_losses(runs_dir)
    parts = [preamble(runs_dir, args, seconds), findings_markdown(systems), ""]
    if losses:
        parts += [
            "## Validation loss (500 pairs, single pass, the decoded checkpoint)",
            "",
            "As the original computes it: the baseline's is the mean over all target "
            "tokens, the pointer-generator's the mean of per-summary means (so the "
            "two are not directly comparable).",
            "",
            "| run / stage | step | loss | coverage loss |",
            "|---|---|---|---|",
            *losses,
            "",
        ]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(parts) + body.replace("## ROUGE", "## ROUGE on the 500 test pairs", 1))
