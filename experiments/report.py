"""A Table-1-shaped report of decode dirs: ROUGE next to the paper, analysis measures, plots.

    python -m experiments.report --decode_dirs NAME=DIR [NAME=DIR ...] [--lead3 DIR] \
        --out report.md [--data_path 'D/chunked/test_*'] [--vocab_path D/vocab] \
        [--vocab_size 50000] [--train_dirs NAME=DIR ...]

Writes, next to `report.md` (say `report`):

* `report.md` — Table 1 (ROUGE-1/2/L F1 x 100 with the 95 % confidence interval, read
  from each dir's `ROUGE_results.txt`, beside the paper's numbers), the analysis measures
  of `experiments.analysis` (repetition, novelty, [UNK], copied OOVs, p_gen) and the plots;
* `report_duplicates.png` — % duplicate n-grams / sentences per model and for the
  references (paper Figure 4 style);
* `report_novel.png` — % novel n-grams / sentences (paper Figure 6 style; needs
  `--data_path`);
* `report_learning_curves.png` — with `--train_dirs`: the loss, coverage loss and eval
  running-average loss from the TensorBoard event files under each dir (an experiment
  dir, or its train/ or eval/ dir);
* `report.json` — every number above.

NAMEs `baseline_150k`, `baseline_50k`, `pointer_generator`, `pointer_generator_coverage`
(the recipe names) and `lead3` are matched with the paper's rows.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import struct
import sys
from dataclasses import dataclass

from experiments import analysis
from pointer_generator import exit_codes
from pointer_generator.cli import arg_types
from pointer_generator.data.binfile import _fields as proto_fields  # tiny protobuf reader
from pointer_generator.data.vocab import Vocab
from pointer_generator.errors import PointerGeneratorError

ROUGE_FILE = "ROUGE_results.txt"
FULL_TEST_SET = 11490


class ReportError(PointerGeneratorError):
    """An input of the report is missing or malformed."""


@dataclass(frozen=True)
class PaperRow:
    key: str
    label: str
    r1: float
    r2: float
    rl: float
    checked: bool  # cross-checked against secondary sources (spec 7.3 "✓")


# Paper Table 1 (ROUGE F1, full-length, test set). "*" rows were evaluated on the
# anonymised dataset, so they are not strictly comparable.
PAPER_TABLE1 = (
    PaperRow(
        "nallapati_abstractive",
        "abstractive model (Nallapati et al., 2016)*",
        35.46,
        13.30,
        32.65,
        True,
    ),
    PaperRow(
        "baseline_150k", "seq-to-seq + attn baseline (150k vocab)", 30.49, 11.17, 28.08, False
    ),
    PaperRow("baseline_50k", "seq-to-seq + attn baseline (50k vocab)", 31.33, 11.81, 28.83, True),
    PaperRow("pointer_generator", "pointer-generator", 36.44, 15.66, 33.42, True),
    PaperRow(
        "pointer_generator_coverage", "pointer-generator + coverage", 39.53, 17.28, 36.38, True
    ),
    PaperRow("lead3", "lead-3 baseline (ours)", 40.34, 17.70, 36.57, True),
    PaperRow(
        "nallapati_extractive", "extractive model (Nallapati et al., 2017)*", 39.6, 16.2, 35.3, True
    ),
)
PAPER_BY_KEY = {r.key: r for r in PAPER_TABLE1}


# ---------------------------------------------------------------------------------------
# ROUGE_results.txt

_ROUGE_LINE = re.compile(
    r"^(rouge_\w+):\s*([0-9.eE+-]+)\s+with confidence interval\s*"
    r"\(\s*([0-9.eE+-]+)\s*,\s*([0-9.eE+-]+)\s*\)\s*$"
)


def parse_rouge_results(path: str) -> dict[str, tuple[float, float, float]]:
    """{`rouge_1_f_score`: (value, ci low, ci high), ...} of a ROUGE_results.txt file."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ReportError(f"{path}: cannot read ROUGE results ({e.strerror})") from None
    out = {}
    for line in text.splitlines():
        m = _ROUGE_LINE.match(line.strip())
        if m:
            out[m.group(1)] = (float(m.group(2)), float(m.group(3)), float(m.group(4)))
    missing = [k for k in ("rouge_1_f_score", "rouge_2_f_score", "rouge_l_f_score") if k not in out]
    if missing:
        raise ReportError(
            f"{path}: no {', '.join(missing)} line (expected lines like "
            "'rouge_1_f_score: 0.3953 with confidence interval (0.3931, "
            "0.3975)')"
        )
    return out


def count_decoded(decode_dir: str) -> int:
    d = os.path.join(decode_dir, "decoded")
    return sum(1 for f in os.listdir(d) if f.endswith("_decoded.txt")) if os.path.isdir(d) else 0


def rouge_cell(result: tuple[float, float, float]) -> str:
    v, lo, hi = (100 * x for x in result)
    return f"{v:.2f} [{lo:.2f}, {hi:.2f}]"


def table1(systems: list[dict]) -> str:
    """Markdown Table 1: our rows (ROUGE F1 with CI, examples) beside the paper's."""
    lines = [
        "| model | R-1 | R-2 | R-L | examples | paper R-1 | paper R-2 | paper R-L |",
        "|---|---|---|---|---|---|---|---|",
    ]
    shown = set()
    for s in systems:
        paper = PAPER_BY_KEY.get(s["name"])
        label = f"{paper.label} (`{s['name']}`)" if paper else f"`{s['name']}`"
        cells = [rouge_cell(s["rouge"][f"rouge_{k}_f_score"]) for k in ("1", "2", "l")]
        if paper:
            mark = "" if paper.checked else "†"
            ref = [f"{x:.2f}{mark}" for x in (paper.r1, paper.r2, paper.rl)]
            shown.add(paper.key)
        else:
            ref = ["–"] * 3
        lines.append(
            f"| {label} | " + " | ".join(cells) + f" | {s['examples']} | " + " | ".join(ref) + " |"
        )
    for paper in PAPER_TABLE1:
        if paper.key not in shown:
            mark = "" if paper.checked else "†"
            lines.append(
                f"| {paper.label} (paper only) | – | – | – | – | "
                + " | ".join(f"{x:.2f}{mark}" for x in (paper.r1, paper.r2, paper.rl))
                + " |"
            )
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------
# TensorBoard event files (read without TensorFlow: TFRecord framing + Event protos)


def _records(path: str):
    """Payloads of a TFRecord file (CRCs not checked; a truncated tail is ignored, as it
    may be a record the trainer is still writing)."""
    with open(path, "rb") as f:
        data = f.read()
    pos = 0
    while pos + 12 <= len(data):
        (n,) = struct.unpack_from("<Q", data, pos)
        start = pos + 12
        if start + n + 4 > len(data):
            return
        yield data[start : start + n]
        pos = start + n + 4


def _tensor_value(buf: bytes, start: int, end: int) -> float | None:
    """The scalar of a TensorProto (float or double; tensor_content or *_val fields)."""
    dtype, content, floats = 1, None, []
    for f, w, v in proto_fields(buf, start, end):
        if f == 1 and w == 0:
            dtype = v
        elif f == 4 and w == 2:
            content = buf[v[0] : v[1]]
        elif f == 5 and w == 5:
            floats.append(struct.unpack("<f", v)[0])
        elif f == 5 and w == 2:
            floats += struct.unpack(f"<{(v[1] - v[0]) // 4}f", buf[v[0] : v[1]])
        elif f == 6 and w == 1:
            floats.append(struct.unpack("<d", v)[0])
        elif f == 6 and w == 2:
            floats += struct.unpack(f"<{(v[1] - v[0]) // 8}d", buf[v[0] : v[1]])
    if content:
        if dtype == 1 and len(content) >= 4:
            return struct.unpack_from("<f", content)[0]
        if dtype == 2 and len(content) >= 8:
            return struct.unpack_from("<d", content)[0]
        return None
    return floats[0] if floats else None


def _summary_value(rec: bytes, start: int, end: int) -> tuple[str | None, float | None]:
    """(tag, value) of one Summary.Value message (simple_value or a scalar tensor)."""
    tag, value = None, None
    for f, w, v in proto_fields(rec, start, end):
        if f == 1 and w == 2:
            tag = rec[v[0] : v[1]].decode("utf-8", "replace")
        elif f == 2 and w == 5:
            value = struct.unpack("<f", v)[0]
        elif f == 8 and w == 2:
            value = _tensor_value(rec, *v)
    return tag, value


def _event_scalars(rec: bytes) -> list[tuple[str, int, float]]:
    """(tag, step, value) of the scalars of one Event record."""
    step, summaries = 0, []
    for f, w, v in proto_fields(rec, 0, len(rec)):
        if f == 2 and w == 0:
            step = v
        elif f == 5 and w == 2:
            summaries.append(v)
    out = []
    for s_start, s_end in summaries:
        for f, w, v in proto_fields(rec, s_start, s_end):
            if f == 1 and w == 2:
                tag, value = _summary_value(rec, *v)
                if tag is not None and value is not None:
                    out.append((tag, step, value))
    return out


def read_event_file(path: str) -> list[tuple[str, int, float]]:
    """(tag, step, value) of every scalar summary in one event file."""
    out = []
    for rec in _records(path):
        try:
            out += _event_scalars(rec)
        except ValueError as e:
            raise ReportError(f"{path}: malformed event record ({e})") from None
    return out


def metric_name(tag: str) -> str:
    """`seq2seq/loss/coverage_loss/coverage_loss` -> `coverage_loss`;
    `running_avg_loss/decay=0.990000` -> `running_avg_loss`."""
    if tag.startswith("running_avg_loss"):
        return "running_avg_loss"
    return tag.rstrip("/").rsplit("/", 1)[-1]


def read_scalars(directory: str) -> dict[str, dict[str, list[tuple[int, float]]]]:
    """{sub dir ("train", "eval", "." ...): {metric: [(step, value)] sorted by step}} of
    every event file under `directory` (a later file's value of a step wins)."""
    if not os.path.isdir(directory):
        raise ReportError(f"train dir {directory} does not exist")
    out: dict[str, dict[str, dict[int, float]]] = {}
    for root, _, files in sorted(os.walk(directory)):
        for name in sorted(files):
            if ".tfevents." not in name:
                continue
            sub = os.path.relpath(root, directory)
            series = out.setdefault(sub, {})
            for tag, step, value in read_event_file(os.path.join(root, name)):
                series.setdefault(metric_name(tag), {})[step] = value
    if not out:
        raise ReportError(f"no TensorBoard event files (events.out.tfevents.*) under {directory}")
    return {sub: {m: sorted(v.items()) for m, v in metrics.items()} for sub, metrics in out.items()}


# ---------------------------------------------------------------------------------------
# Plots

FIGSIZE = (8.0, 4.5)
DPI = 100
CURVE_METRICS = ("loss", "coverage_loss", "running_avg_loss")


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def bar_chart(
    series: dict[str, list[float | None]], categories: list[str], title: str, ylabel: str, path: str
) -> str:
    """Grouped bars: one group per category, one bar per series (None drawn as 0)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=FIGSIZE, dpi=DPI)
    width = 0.8 / max(1, len(series))
    for i, (name, values) in enumerate(series.items()):
        xs = [c + (i - (len(series) - 1) / 2) * width for c in range(len(categories))]
        ax.bar(xs, [v or 0.0 for v in values], width, label=name)
    ax.set_xticks(range(len(categories)))
    ax.set_xticklabels(categories)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def smooth(values: list[float], weight: float = 0.9) -> list[float]:
    """TensorBoard-style exponential moving average (debiased)."""
    out, avg = [], 0.0
    for i, v in enumerate(values, start=1):
        avg = weight * avg + (1 - weight) * v
        out.append(avg / (1 - weight**i))
    return out


def learning_curves(runs: dict[str, dict], path: str) -> str | None:
    """One panel per metric of CURVE_METRICS present; one line per (run, sub dir)."""
    panels = [
        m
        for m in CURVE_METRICS
        if any(m in metrics for subs in runs.values() for metrics in subs.values())
    ]
    if not panels:
        return None
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=FIGSIZE, dpi=DPI, squeeze=False)
    for ax, metric in zip(axes[0], panels, strict=True):
        for name, subs in runs.items():
            for sub, metrics in subs.items():
                points = metrics.get(metric)
                if not points:
                    continue
                steps = [p[0] for p in points]
                values = [p[1] for p in points]
                label = name if sub == "." else f"{name} ({sub})"
                # Markers keep short runs (a few points, e.g. the coverage phase) visible.
                marker = "." if len(points) < 50 else None
                (line,) = ax.plot(steps, values, alpha=0.25, linewidth=0.8)
                ax.plot(steps, smooth(values), color=line.get_color(), label=label, marker=marker)
        ax.set_title(metric)
        ax.set_xlabel("global step")
        ax.legend(fontsize="x-small")
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


# ---------------------------------------------------------------------------------------
# Assembling the report

DUP_KEYS = [f"duplicate_{n}gram_pct" for n in analysis.NGRAM_ORDERS] + ["duplicate_sentence_pct"]
NOVEL_KEYS = [f"novel_{n}gram_pct" for n in analysis.NGRAM_ORDERS] + ["novel_sentence_pct"]
CATEGORIES = [f"{n}-grams" for n in analysis.NGRAM_ORDERS] + ["sentences"]
COPY_KEYS = ["copied_sentence_pct", "span_sentence_pct"]
COPY_HEADERS = [
    "% copied whole article sentences (paper: 35 % pointer-gen. + coverage, 1.3 % reference)",
    "% sentences found as an article span (not the paper's measure)",
]


def parse_named(items: list[str], what: str) -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise ReportError(f"{what} {item!r}: expected NAME=DIR")
        if name in out:
            raise ReportError(f"{what}: the name {name!r} is given twice")
        out[name] = path
    return out


def gather(
    decode_dirs: dict[str, str],
    data_path: str | None,
    vocab: Vocab | None,
    max_enc_steps: int,
    check_references: bool = True,
) -> list[dict]:
    """ROUGE and analysis of every decode dir."""
    systems = []
    for name, d in decode_dirs.items():
        if not os.path.isdir(d):
            raise ReportError(f"decode dir {d} ({name}) does not exist")
        result = analysis.analyse_decode_dir(
            d,
            data_path=data_path,
            vocab=vocab,
            max_enc_steps=max_enc_steps,
            check_references=check_references,
        )
        systems.append(
            {
                "name": name,
                "dir": os.path.abspath(d),
                "rouge": parse_rouge_results(os.path.join(d, ROUGE_FILE)),
                "examples": count_decoded(d),
                "analysis": result,
            }
        )
    return systems


def reference_rows(systems: list[dict]) -> list[tuple[str, dict]]:
    """One "reference" row, or one per distinct reference set if the dirs differ."""
    rows, seen = [], []
    for s in systems:
        ref = s["analysis"]["reference"]
        if ref not in seen:
            seen.append(ref)
            rows.append((s["name"], ref))
    if len(rows) == 1:
        return [("reference", rows[0][1])]
    return [(f"reference ({name})", ref) for name, ref in rows]


def measure_table(systems: list[dict], keys: list[str], headers: list[str]) -> str:
    lines = ["| summaries | " + " | ".join(headers) + " |", "|---|" + "---|" * len(headers)]
    rows = [(f"`{s['name']}`", s["analysis"]["system"]) for s in systems]
    rows += reference_rows(systems)
    for label, m in rows:
        lines.append(f"| {label} | " + " | ".join(analysis.fmt(m[k]) for k in keys) + " |")
    return "\n".join(lines)


def other_table(systems: list[dict]) -> str:
    keys = [
        "mean_tokens",
        "unk_summary_pct",
        "copied_oov_per_summary",
        "summaries_with_copied_oov_pct",
    ]
    lines = [
        "| summaries | mean tokens | % with [UNK] | copied article-OOVs per summary | "
        "% copying an OOV | mean p_gen per step | mean p_gen per summary |",
        "|---|---|---|---|---|---|---|",
    ]
    rows = [
        (f"`{s['name']}`", s["analysis"]["system"], s["analysis"].get("p_gen")) for s in systems
    ]
    rows += [(label, ref, None) for label, ref in reference_rows(systems)]
    for label, m, p in rows:
        cells = [analysis.fmt(m[k]) for k in keys]
        cells += [
            f"{p['p_gen_mean_per_step']:.3f}"
            if p and p["p_gen_mean_per_step"] is not None
            else "–",
            f"{p['p_gen_mean_per_summary']:.3f}"
            if p and p["p_gen_mean_per_summary"] is not None
            else "–",
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_report(
    systems: list[dict],
    out: str,
    train_runs: dict | None = None,
    data_path: str | None = None,
    vocab_path: str | None = None,
) -> dict:
    """Write the markdown, the PNGs and the JSON; returns {"markdown", "plots", "json"}."""
    stem = out[:-3] if out.endswith(".md") else out
    out_dir = os.path.dirname(os.path.abspath(out))
    os.makedirs(out_dir, exist_ok=True)
    plots = {}
    series = {s["name"]: [s["analysis"]["system"][k] for k in DUP_KEYS] for s in systems}
    series.update({label: [ref[k] for k in DUP_KEYS] for label, ref in reference_rows(systems)})
    plots["duplicates"] = bar_chart(
        series,
        CATEGORIES,
        "Duplicates within a summary (Figure 4 style)",
        "% that are duplicates",
        stem + "_duplicates.png",
    )
    if systems and systems[0]["analysis"]["system"]["novel_1gram_pct"] is not None:
        series = {s["name"]: [s["analysis"]["system"][k] for k in NOVEL_KEYS] for s in systems}
        series.update(
            {label: [ref[k] for k in NOVEL_KEYS] for label, ref in reference_rows(systems)}
        )
        plots["novel"] = bar_chart(
            series,
            CATEGORIES,
            "Novel with respect to the article (Figure 6 style)",
            "% that are novel",
            stem + "_novel.png",
        )
    if train_runs:
        path = learning_curves(train_runs, stem + "_learning_curves.png")
        if path:
            plots["learning_curves"] = path

    md = ["# Table 1 reproduction report", ""]
    sizes = sorted({s["examples"] for s in systems})
    if sizes and sizes != [FULL_TEST_SET]:
        md += [
            f"Summaries per row: {', '.join(map(str, sizes))}. The paper's figures are on "
            f"the full CNN/DM test set ({FULL_TEST_SET:,} pairs); rows on other data are "
            "not comparable with them.",
            "",
        ]
    md += [
        "## ROUGE (F1 × 100, [95 % confidence interval])",
        "",
        "Official ROUGE-1.5.5 via pyrouge, default options (as the original release).",
        "",
        table1(systems),
        "",
        "† not cross-checked against secondary sources (spec §7.3). * evaluated on the "
        "anonymised dataset.",
        "",
    ]
    md += [
        "## Repetition (paper Figure 4)",
        "",
        "% of n-grams (sentences) of a summary that repeat an earlier one of the same "
        "summary, over all summaries.",
        "",
        measure_table(systems, DUP_KEYS, [f"dup. {c}" for c in CATEGORIES]),
        "",
    ]
    if "novel" in plots:
        md += [
            "## Novelty (paper Figure 6)",
            "",
            f"% of n-grams (sentences) not found in the article (data: `{data_path}`).",
            "A sentence is novel unless it equals a whole article sentence (the paper's "
            "measure; sentences of summary and article cut by the lead-3 splitter, "
            "`experiments.sentences`).",
            "",
            measure_table(systems, NOVEL_KEYS, [f"novel {c}" for c in CATEGORIES]),
            "",
            "### Copying whole sentences (paper Section 7.2)",
            "",
            "The paper's measure is the first column; the second counts any summary "
            "sentence that occurs in the article as a run of words, even inside a longer "
            "sentence, and is always at least as high.",
            "",
            measure_table(systems, COPY_KEYS, COPY_HEADERS),
            "",
        ]
    vocab_note = (
        f"the vocabulary `{vocab_path}`"
        if vocab_path
        else "the vocabulary (not computed: no --vocab_path)"
    )
    md += [
        "## Vocabulary and p_gen",
        "",
        f"Copied article-OOVs: summary tokens outside {vocab_note} that occur in the "
        "article's first max_enc_steps tokens; p_gen from each decode dir's p_gens.tsv.",
        "",
        other_table(systems),
        "",
    ]
    md += ["## Plots", ""]
    for key, path in plots.items():
        md += [f"![{key}]({os.path.relpath(path, out_dir)})", ""]
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(md))
    json_path = stem + ".json"
    with open(json_path, "w", encoding="utf-8") as f:
        json.dump(
            {"systems": systems, "paper": [r.__dict__ for r in PAPER_TABLE1], "plots": plots},
            f,
            indent=2,
            default=_json_default,
        )
    return {"markdown": out, "plots": plots, "json": json_path}


def _json_default(o):
    if isinstance(o, float) and math.isnan(o):
        return None
    raise TypeError(type(o).__name__)


@exit_codes.command
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m experiments.report", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--decode_dirs", nargs="*", default=[], metavar="NAME=DIR")
    parser.add_argument("--lead3", default=None, help="the lead-3 dir of experiments.lead3")
    parser.add_argument("--out", required=True, help="markdown file to write")
    parser.add_argument(
        "--data_path",
        default=None,
        help="glob of the decoded .bin files (for novelty and OOV measures)",
    )
    parser.add_argument("--vocab_path", default=None)
    parser.add_argument("--vocab_size", type=arg_types.non_negative_int, default=50000)
    parser.add_argument(
        "--max_enc_steps", type=arg_types.non_negative_int, default=analysis.DEFAULT_MAX_ENC_STEPS
    )
    parser.add_argument("--train_dirs", nargs="*", default=[], metavar="NAME=DIR")
    parser.add_argument("--no_check_references", action="store_true")
    args = parser.parse_args(argv)
    dirs = parse_named(args.decode_dirs, "--decode_dirs")
    if args.lead3:
        if "lead3" in dirs:
            raise ReportError("--lead3 and a --decode_dirs entry named lead3 clash")
        dirs["lead3"] = args.lead3
    if not dirs:
        raise ReportError("give at least one --decode_dirs NAME=DIR or --lead3 DIR")
    vocab = Vocab(args.vocab_path, args.vocab_size) if args.vocab_path else None
    systems = gather(dirs, args.data_path, vocab, args.max_enc_steps, not args.no_check_references)
    runs = {
        name: read_scalars(d) for name, d in parse_named(args.train_dirs, "--train_dirs").items()
    }
    written = write_report(systems, args.out, runs, args.data_path, args.vocab_path)
    print(
        f"Wrote {written['markdown']}, {written['json']} and {', '.join(written['plots'].values())}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
