"""experiments.cpu_scale: its recipes, the findings checks and the report they write.

The hour-long runs themselves are not part of the suite; their report is committed in
experiments/results/cpu_scale/. Here: the recipes give the documented settings, and the
findings are computed from decode dirs written by hand, where the answer is known.
"""

import json
import os

import pytest

from experiments import report
from experiments.cpu_scale import findings, run_all
from experiments.paper import recipe as recipe_lib
from experiments.paper import run_recipe
from pointer_generator.data import binfile
from tests.test_recipes import _commands, _dry_run, _flags, data_dir  # noqa: F401

RECIPES = {
    name: os.path.join(run_all.RECIPES, name + ".json")
    for name in ("baseline", "pointer_generator", "pointer_generator_coverage")
}


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_cpu_recipes_have_the_cpu_settings(name, data_dir, tmp_path, capsys):  # noqa: F811
    stages = _commands(
        _dry_run(
            capsys, "--recipe", RECIPES[name], "--data_dir", data_dir, "--log_root", str(tmp_path)
        )
    )
    names = [s[0] for s in stages]
    assert names[:5] == [
        "train_enc100_dec25",
        "train_enc200_dec50",
        "val_loss",
        "decode_test",
        "score_test",
    ]
    for stage, kind, _, cmds in stages:
        for module, args in cmds:
            if module != recipe_lib.CLI_MODULE:
                continue
            fv = _flags(args)
            assert (fv.hidden_dim, fv.emb_dim, fv.batch_size, fv.vocab_size) == (
                128,
                64,
                16,
                run_all.VOCAB_SIZE,
            )
            assert fv.lr == 0.15 and fv.adagrad_init_acc == 0.1 and fv.static_shapes
            assert fv.pointer_gen == (name != "baseline")
            assert fv.coverage == stage.endswith("coverage")
            assert fv.exp_name == ("baseline" if name == "baseline" else "pointer_generator")
            if kind == "decode":
                assert (fv.beam_size, fv.max_enc_steps, fv.max_dec_steps, fv.min_dec_steps) == (
                    4,
                    run_all.MAX_ENC_STEPS,
                    120,
                    35,
                )
    train = [_flags(s[3][0][1]) for s in stages[:2]]
    assert [(f.max_enc_steps, f.max_dec_steps, f.max_steps) for f in train] == [
        (100, 25, 1500),
        (run_all.MAX_ENC_STEPS, 50, 3500),
    ]
    if name == "pointer_generator_coverage":
        # It extends the pointer_generator recipe beside it, not the paper's.
        assert names[5:] == [
            "convert_to_coverage",
            "train_coverage",
            "val_loss_coverage",
            "decode_test_coverage",
            "score_test_coverage",
        ]
        assert "--max_steps=<global step at the start of this stage + 500>" in stages[6][3][0][1]


def _decode_dir(
    root, name, summaries, references, articles_oov=0, p_gen=None, rouge=(0.3, 0.1, 0.25)
):
    d = os.path.join(str(root), name)
    for sub in ("reference", "decoded"):
        os.makedirs(os.path.join(d, sub))
    for i, (s, r) in enumerate(zip(summaries, references, strict=True)):
        with open(os.path.join(d, "decoded", "%06d_decoded.txt" % i), "w") as f:
            f.write(s.replace(" . ", " .\n"))
        with open(os.path.join(d, "reference", "%06d_reference.txt" % i), "w") as f:
            f.write(r.replace(" . ", " .\n"))
    with open(os.path.join(d, "ROUGE_results.txt"), "w") as f:
        for key, v in zip(("1", "2", "l"), rouge, strict=True):
            f.write(
                f"rouge_{key}_f_score: {v:.4f} with confidence interval "
                f"({v - 0.01:.4f}, {v + 0.01:.4f})\n"
            )
    if p_gen is not None:
        with open(os.path.join(d, "p_gens.tsv"), "w") as f:
            for i in range(len(summaries)):
                f.write(f"{i}\t{p_gen}\t10\n")
    return d


REFS = ["alice met bob . they talked .", "carol ran home . it rained ."]


def _systems(tmp_path, coverage_repeats: bool):
    dirs = {
        "baseline_50k": _decode_dir(
            tmp_path,
            "b",
            ["[UNK] met [UNK] . [UNK] met [UNK] .", "carol ran . carol ran ."],
            REFS,
            rouge=(0.20, 0.05, 0.18),
        ),
        "pointer_generator": _decode_dir(
            tmp_path,
            "p",
            ["alice met bob . alice met bob .", "carol ran home . carol ran home ."],
            REFS,
            p_gen=0.2,
            rouge=(0.30, 0.10, 0.25),
        ),
        "pointer_generator_coverage": _decode_dir(
            tmp_path,
            "c",
            ["alice met bob . alice met bob .", "carol ran home . carol ran home ."]
            if coverage_repeats
            else ["alice met bob . they talked .", "carol ran home . it rained ."],
            REFS,
            p_gen=0.3,
            rouge=(0.35, 0.12, 0.30),
        ),
    }
    vocab = tmp_path / "vocab"
    vocab.write_text(
        "".join(f"{w} 5\n" for w in "met ran home . they talked it rained carol".split())
    )
    # The articles: "alice" and "bob" are OOVs that occur in the first one.
    with open(tmp_path / "test_000.bin", "wb") as f:
        for article, ref in zip(["alice met bob today .", "carol ran home ."], REFS, strict=True):
            abstract = " ".join(
                f"<s> {sent.strip()} . </s>" for sent in ref.split(" .") if sent.strip()
            )
            f.write(binfile.encode_record(article, abstract))
    return report.gather(dirs, str(tmp_path / "test_*"), report.Vocab(str(vocab), 100), 400)


def test_findings_hold_where_the_numbers_say_so(tmp_path):
    got = {
        claim: (held, numbers)
        for claim, held, numbers in findings.check_findings(
            _systems(tmp_path, coverage_repeats=False)
        )
    }
    assert got["The pointer-generator scores higher ROUGE than the baseline."] == (
        True,
        "R-1 30.00 vs 20.00, R-2 10.00 vs 5.00, R-L 25.00 vs 18.00",
    )
    held, numbers = got[
        "The pointer-generator (almost) never writes [UNK], unlike the "
        "baseline (here: in at most a tenth as many summaries)."
    ]
    assert held and numbers == "summaries with [UNK]: 0.0% vs baseline 50.0%"
    # "alice" and "bob" (twice each in summary 0) are article OOVs: 4 tokens, 2 summaries.
    held, numbers = got["The pointer-generator copies out-of-vocabulary words from the article."]
    assert held and numbers.startswith("2.00 article-OOV tokens per summary; 50.0%")
    assert got["Coverage reduces repetition (duplicate n-grams and sentences)."][0]
    assert got["With coverage, repetition comes close to the reference summaries' level."][0]
    assert got["Coverage raises ROUGE over the pointer-generator."][0]
    p = got[
        "`pointer_generator`: the model mostly copies (the paper's mean p_gen at test time: 0.17)."
    ]
    assert p == (True, "mean p_gen per step 0.200")


def test_findings_that_do_not_hold_are_marked(tmp_path):
    got = {
        claim: held
        for claim, held, _ in findings.check_findings(_systems(tmp_path, coverage_repeats=True))
    }
    assert got["Coverage reduces repetition (duplicate n-grams and sentences)."] is False
    md = findings.findings_markdown(_systems(tmp_path / "again", coverage_repeats=True))
    assert "| Coverage reduces repetition (duplicate n-grams and sentences). | **no** |" in md


def test_report_gets_the_preamble_findings_and_validation_losses(tmp_path):
    systems = _systems(tmp_path, coverage_repeats=False)
    runs = tmp_path / "runs"
    (runs / "baseline").mkdir(parents=True)
    (runs / "baseline" / run_recipe.STATE_FILE).write_text(
        json.dumps(
            {
                "stages": {
                    "val_loss": {"finished": "x", "validation": {"loss": "4.25", "step": "3500"}},
                    "decode_test": {"decode_dir": systems[0]["dir"]},
                }
            }
        )
    )
    out = str(tmp_path / "rep" / "report.md")
    report.write_report(systems, out)
    findings.add_to_report(out, systems, str(runs), type("A", (), {"jobs": 2}), 3600.0)
    text = open(out, encoding="utf-8").read()
    assert text.startswith("# CPU-scale experiments")
    assert "Table 1 reproduction report" not in text
    assert text.index("## The paper's findings") < text.index("## ROUGE on the 500 test")
    assert "| `baseline` / `val_loss` | 3500 | 4.2500 | – |" in text
    with pytest.raises(run_all.RunError, match="has no decode dir yet"):
        run_all.decode_dirs(str(runs))  # the pointer_generator run has no state yet


def test_decode_dirs_come_from_the_recipe_state_files(tmp_path):
    runs = tmp_path / "runs"
    for exp, stages in (
        ("baseline", {"decode_test": "/d/b"}),
        ("pointer_generator", {"decode_test": "/d/p", "decode_test_coverage": "/d/c"}),
    ):
        (runs / exp).mkdir(parents=True)
        (runs / exp / run_recipe.STATE_FILE).write_text(
            json.dumps({"stages": {k: {"decode_dir": v} for k, v in stages.items()}})
        )
    assert run_all.decode_dirs(str(runs)) == {
        "baseline_50k": "/d/b",
        "pointer_generator": "/d/p",
        "pointer_generator_coverage": "/d/c",
    }
    (runs / "pointer_generator" / run_recipe.STATE_FILE).write_text(
        json.dumps({"stages": {"decode_test": {"decode_dir": "/d/p"}}})
    )
    with pytest.raises(run_all.RunError, match="decode_test_coverage has no decode dir"):
        run_all.decode_dirs(str(runs))
