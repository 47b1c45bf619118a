"""The proxy task's results page (experiments/families/report.py) on a constructed work
folder: the tables, the papers' orderings checked, the pictures."""

from __future__ import annotations

import json
import os

from experiments.families import report
from pointer_generator.runtime.tensorboard import ScalarWriter


def _decode_dir(root, name, outputs, refs):
    d = root / "runs" / name / "decode_test"
    for sub, texts in (("decoded", outputs), ("reference", refs)):
        (d / sub).mkdir(parents=True)
        for i, t in enumerate(texts):
            kind = "decoded" if sub == "decoded" else "reference"
            (d / sub / f"{i:06d}_{kind}.txt").write_text(t)
    return str(d)


def test_the_page_from_a_work_folder(tmp_path):
    refs = ["police arrest a man", "storm hits the coast", "team wins the cup"]
    results = {}
    for name, outputs, scores in (
        ("abs_attention", ["the the of"] * 3, (6.0, 0.3, 6.0)),
        ("abs_plus", ["police arrest man", "storm hits coast", "team wins"], (40.0, 20.0, 39.0)),
        ("prefix", ["police say a man", "a storm hit", "the team won"], (20.0, 5.0, 18.0)),
        ("abs_attention_adagrad", ["police arrest", "the storm", "team wins"], (30.0, 9.0, 29.0)),
    ):
        run = "abs_attention" if name == "abs_plus" else name
        d = _decode_dir(tmp_path, run if name != "abs_plus" else "abs_plus_dir", outputs, refs)
        triple = dict(zip(("1", "2", "l"), scores, strict=True))
        results[name] = {"decode_dir": d, "gigaword": triple, "duc": triple}
    results["abs_plus"]["weights"] = "lm 1.0\nuni 2.0\n"
    results[report.GAP + "abs_attention"] = {"loss": 5.3, "loss_other_articles": 5.31,
                                             "input_gap": 0.006}  # fmt: skip
    results[report.GAP + "abs_attention_adagrad"] = {"loss": 4.0, "loss_other_articles": 4.5,
                                                     "input_gap": 0.5}  # fmt: skip
    (tmp_path / "results.json").write_text(json.dumps(results))
    for name, ppl in (("abs_attention", [300.0, 200.0]), ("abs_bow", [320.0, 250.0]),
                      ("abs_conv", [400.0, 350.0])):  # fmt: skip
        eval_dir = tmp_path / "runs" / name / "eval"
        writer = ScalarWriter(str(eval_dir))
        for epoch, value in enumerate(ppl, start=1):
            writer.write({"valid_perplexity": value, "learning_rate": 0.5}, epoch * 10)
        writer.close()
    out = tmp_path / "page" / "report.md"
    report.write(str(tmp_path), str(out))
    text = out.read_text()
    assert "| abs_attention | 2 | 200.00 | 27.10 | +0.006 |" in text
    # abs_bow has validation curves but no results: its training has not finished
    assert "| abs_bow (not finished) | 2 | 250.00 | 43.60 | – |" in text
    # The runner's runs without a folder yet are named, so the page says what is missing.
    assert "Not started yet: " in text and "ras_elman" in text.split("Not started yet: ")[1]
    assert "| ABS+ (k=50, MERT-tuned features) | 40.00 | 20.00 | 39.00 | 29.76" in text
    assert "| DUC-style R-1: ABS+ > ABS | yes | 40.00 vs 6.00 |" in text
    assert "| DUC-style R-1: ABS > PREFIX | **no** | 6.00 vs 20.00 |" in text
    assert "| DUC-style R-1: ABS > PREFIX, default recipe | yes | 30.00 vs 20.00 |" in text
    # abs_conv's curve is of a run without results: no ordering reads it yet
    assert "| perplexity: attention ABS < convolutional | not measured |" in text
    assert "1 of 3" in text and "Input-independent output" in text
    assert "Read the limitations first" in text and "uni 2.0" in text
    for picture in ("report_learning_curves.png", "report_rouge.png"):
        assert os.path.getsize(tmp_path / "page" / picture) > 1000
    assert json.loads((tmp_path / "page" / "report.json").read_text())["perplexity"] == {
        "abs_attention": 200.0,
        "abs_bow": 250.0,
        "abs_conv": 350.0,
    }


def test_the_toy_task_page_says_which_runs_learn(tmp_path):
    from experiments.families import toy_task

    def row(r1, distinct, gap):
        return {
            "gap": {"loss": 1.0, "loss_other_articles": 1.0 + gap, "input_gap": gap},
            "decode": {
                "gigaword": {"1": r1, "2": r1 / 2, "l": r1},
                "distinct": distinct,
                "summaries": 200,
                "examples": [f"summary {i} ." for i in range(3)],
            },
            "commands": ["pointer-generator --mode=train ...", "pointer-generator --mode=eval"],
            "seconds": 120.0,
        }

    results = {
        "abs_attention_lead": row(47.4, 170, 0.33),
        "abs_attention_keras_lead": row(18.2, 3, 0.001),  # a template for every article
        "ras_elman_lead": row(47.0, 20, 0.5),  # reads, but few distinct summaries
    }
    out = tmp_path / "page" / "report.md"
    toy_task.write_report(results, str(out), 1000)
    text = out.read_text()
    lines = {line.split(" | ")[0]: line for line in text.splitlines() if line.startswith("| ")}
    assert lines["| ABS, attention encoder: default recipe"].endswith("| 170 of 200 | yes | 2.0 |")
    keras = [v for k, v in lines.items() if "Keras' initialisation" in k][0]
    assert "| +0.001 | 18.2 |" in keras and "| **no** |" in keras
    assert "| **no** |" in lines["| RAS-Elman: default recipe"]
    assert "pointer-generator --mode=eval" in text and "1. summary 0 ." in text


def test_every_row_the_proxy_runner_writes_has_a_line_on_the_page():
    """A run's decode rows (k=50 and greedy for the default-recipe ABS runs, k=10 and 1 for
    RAS) are results keys `name + row`; a key without a label would be left off the page."""
    from experiments.families import run_proxy

    keys = {name + row for name, spec in run_proxy.RUNS.items() for row, _ in spec[3]}
    assert "abs_attention_adagrad (k=1)" in keys and "ras_lstm_adagrad (k=1)" in keys
    assert keys | {"abs_plus", "prefix"} <= set(report.ROWS)
