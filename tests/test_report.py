"""experiments.report: ROUGE parsing, the Table 1 cells, event files and the PNG plots."""

import base64
import os
import struct
import zlib

import pytest

from experiments import report
from pointer_generator import exit_codes
from pointer_generator.data.binfile import write_bin
from pointer_generator.decoding.folder import write_for_rouge
from pointer_generator.evaluation.rouge import format_results

# An event file written by pointer_generator.runtime.tensorboard.ScalarWriter (TensorFlow 2.21) with
# loss 4.5 / 3.25 / 2.0 and coverage loss 0.5 / 0.25 / 0.125 at steps 1 / 2 / 3
# (tags seq2seq/loss/loss and seq2seq/loss/coverage_loss/coverage_loss).
EVENTS = (
    "eNqzY4CAm5ccnnOCGKsP3HKU4k0qSszM03MtS80rsTIKUuFSKknNK84vSsvJL9dLzi9K1SstyczRSwXJF8eXF2WW"
    "pBbdP63IZg01TUp5TQznuftqYNMEGLX0uHS4BItTC42AWD8nv7gYTDhxcTAKMSixMDBMcPDi5uLkYi9OTsxJLCpu"
    "Oyj3PwhqlOpr9u2cPd/hRrlyOXNpoBiVnF+WWpSYnhqPyUPYwGCPYkP91J9fURy7cak6xAYmgo4NQHVswLW0SyiO"
    "/b8ZbhSZjm2wQ7GBcfMmMxTH3j4EtYGZoGMZUB374Jb8exTHCpyFG0VuyKI69ppRlCoAHJevig=="
)


def _rouge_dict(r1, r2, rl):
    """pyrouge-style results: value v with CI (v - 0.002, v + 0.002) for F, R and P."""
    out = {}
    for key, v in (("1", r1), ("2", r2), ("l", rl)):
        for m in ("f_score", "recall", "precision"):
            out[f"rouge_{key}_{m}"] = v
            out[f"rouge_{key}_{m}_cb"] = v - 0.002
            out[f"rouge_{key}_{m}_ce"] = v + 0.002
    return out


def _decode_dir(root, name, decoded, rouge_values, p_gens=None):
    d = root / name
    refs = [["a b ."], ["x y .", "q ."]]
    for k, words in enumerate(decoded):
        write_for_rouge(refs[k], words.split(), k, str(d))
    (d / "ROUGE_results.txt").write_text(format_results(_rouge_dict(*rouge_values)))
    if p_gens:
        (d / "p_gens.tsv").write_text(p_gens)
    return str(d)


@pytest.fixture
def dirs(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    write_bin(
        str(data / "test_000.bin"),
        [("a b c d . e f .", "<s> a b . </s>"), ("x y z w .", "<s> x y . </s> <s> q . </s>")],
    )
    return {
        "pointer_generator": _decode_dir(
            tmp_path,
            "pg",
            ["a b c . a b c .", "x y z w ."],
            (0.3953, 0.1728, 0.3638),
            "0\t0.2\t8\n1\t0.4\t2\n",
        ),
        "my_model": _decode_dir(tmp_path, "mine", ["a b .", "x y ."], (0.25, 0.1, 0.2)),
        "lead3": _decode_dir(
            tmp_path, "lead", ["a b c d . e f .", "x y z w ."], (0.40339, 0.17704, 0.36567)
        ),
    }, str(data / "test_*")


def test_parse_rouge_results_reads_the_decode_format(tmp_path):
    path = tmp_path / "ROUGE_results.txt"
    path.write_text(format_results(_rouge_dict(0.3953, 0.1728, 0.3638)))
    r = report.parse_rouge_results(str(path))
    assert r["rouge_1_f_score"] == pytest.approx((0.3953, 0.3933, 0.3973))
    assert r["rouge_l_recall"][0] == pytest.approx(0.3638)
    assert report.rouge_cell(r["rouge_2_f_score"]) == "17.28 [17.08, 17.48]"
    path.write_text("ROUGE-1:\nrouge_1_f_score: 0.1 with confidence interval (0.0, 0.2)\n")
    with pytest.raises(report.ReportError, match=r"ROUGE_results.txt: no rouge_2_f_score"):
        report.parse_rouge_results(str(path))
    with pytest.raises(report.ReportError, match="cannot read"):
        report.parse_rouge_results(str(tmp_path / "missing.txt"))


def test_event_files_are_read_without_tensorflow(tmp_path):
    train = tmp_path / "exp" / "train"
    train.mkdir(parents=True)
    (train / "events.out.tfevents.1.host.1.0.v2").write_bytes(
        zlib.decompress(base64.b64decode(EVENTS))
    )
    runs = report.read_scalars(str(tmp_path / "exp"))
    assert runs == {
        "train": {
            "loss": [(1, 4.5), (2, 3.25), (3, 2.0)],
            "coverage_loss": [(1, 0.5), (2, 0.25), (3, 0.125)],
        }
    }
    assert report.metric_name("running_avg_loss/decay=0.990000") == "running_avg_loss"
    (tmp_path / "exp" / "eval_missing").mkdir()
    with pytest.raises(report.ReportError, match="no TensorBoard event files"):
        report.read_scalars(str(tmp_path / "exp" / "eval_missing"))


def test_smoothing_is_a_debiased_moving_average():
    assert report.smooth([2.0, 2.0, 2.0]) == pytest.approx([2.0, 2.0, 2.0])
    # weight 0.5: avg 0 -> 0 / 0.5; then 0.5 * 0 + 0.5 * 1 = 0.5 -> 0.5 / 0.75
    assert report.smooth([0.0, 1.0], 0.5) == pytest.approx([0.0, 2 / 3])


def _png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def test_report_table_cells_and_plots(tmp_path, dirs):
    decode_dirs, data_path = dirs
    train = tmp_path / "exp" / "train"
    train.mkdir(parents=True)
    (train / "events.out.tfevents.1.host.1.0.v2").write_bytes(
        zlib.decompress(base64.b64decode(EVENTS))
    )
    out = tmp_path / "out" / "report.md"
    args = [
        "--decode_dirs",
        f"pointer_generator={decode_dirs['pointer_generator']}",
        f"my_model={decode_dirs['my_model']}",
        "--lead3",
        decode_dirs["lead3"],
        "--out",
        str(out),
        "--data_path",
        data_path,
        "--train_dirs",
        f"pg={tmp_path / 'exp'}",
    ]
    assert report.main(args) == 0
    md = out.read_text()
    table1 = md.split("## Repetition")[0]
    lines = {line.split(" | ")[0]: line for line in table1.splitlines() if line.startswith("| ")}
    assert lines["| pointer-generator (`pointer_generator`)"] == (
        "| pointer-generator (`pointer_generator`) | 39.53 [39.33, 39.73] | "
        "17.28 [17.08, 17.48] | 36.38 [36.18, 36.58] | 2 | 36.44 | 15.66 | 33.42 |"
    )
    assert lines["| `my_model`"] == (
        "| `my_model` | 25.00 [24.80, 25.20] | 10.00 [9.80, 10.20] "
        "| 20.00 [19.80, 20.20] | 2 | – | – | – |"
    )
    assert lines["| lead-3 baseline (ours) (`lead3`)"].endswith("| 2 | 40.34 | 17.70 | 36.57 |")
    # rows of the paper that were not given are listed with the paper's numbers only;
    # the 150k baseline's numbers carry the "not cross-checked" mark
    assert lines["| seq-to-seq + attn baseline (150k vocab) (paper only)"].endswith(
        "| 30.49† | 11.17† | 28.08† |"
    )
    assert "| abstractive model (Nallapati et al., 2016)* (paper only)" in lines
    assert "not comparable" in md  # 2 summaries, not the 11,490 of the test set
    # analysis rows: pointer_generator summaries "a b c . a b c ." + "x y z w ."
    dup = [
        line
        for line in md.split("## Repetition")[1].splitlines()
        if line.startswith("| `pointer_generator`")
    ][0]
    assert dup == "| `pointer_generator` | 30.77 | 27.27 | 22.22 | 14.29 | 33.33 |"
    ref = [
        line
        for line in md.split("## Repetition")[1].splitlines()
        if line.startswith("| reference |")
    ][0]
    assert ref == "| reference | 12.50 | 0.00 | 0.00 | 0.00 | 0.00 |"
    novel = [
        line for line in md.split("## Novelty")[1].splitlines() if line.startswith("| `lead3`")
    ][0]
    assert novel == "| `lead3` | 0.00 | 0.00 | 0.00 | 0.00 | 0.00 |"
    copying = md.split("### Copying whole sentences")[1].split("## Vocabulary")[0]
    # "x y z w ." is a whole article sentence; "a b c ." (twice) is not even a span
    assert "| `pointer_generator` | 33.33 | 33.33 |" in copying
    assert "| `lead3` | 100.00 | 100.00 |" in copying
    pgen = [
        line
        for line in md.split("## Vocabulary")[1].splitlines()
        if line.startswith("| `pointer_generator`")
    ][0]
    # p_gen per step (0.2 * 8 + 0.4 * 2) / 10 = 0.24, per summary (0.2 + 0.4) / 2 = 0.3
    assert pgen.endswith("| 0.240 | 0.300 |")
    for name in ("report_duplicates.png", "report_novel.png", "report_learning_curves.png"):
        path = out.parent / name
        assert path.stat().st_size > 5000
        assert _png_size(path) == (800, 450)
        assert f"]({name})" in md
    assert (out.parent / "report.json").stat().st_size > 0


def test_without_data_only_repetition_is_reported(tmp_path, dirs, capsys):
    decode_dirs, _ = dirs
    out = tmp_path / "r.md"
    assert report.main(["--decode_dirs", f"a={decode_dirs['my_model']}", "--out", str(out)]) == 0
    md = out.read_text()
    assert "## Novelty" not in md and not (tmp_path / "r_novel.png").exists()
    assert _png_size(tmp_path / "r_duplicates.png") == (800, 450)
    assert report.main(["--decode_dirs", "broken", "--out", str(out)]) == exit_codes.BAD_INPUT
    assert "expected NAME=DIR" in capsys.readouterr().err
    assert (
        report.main(["--decode_dirs", f"a={tmp_path / 'none'}", "--out", str(out)])
        == exit_codes.BAD_INPUT
    )
    assert "does not exist" in capsys.readouterr().err
    os.remove(os.path.join(decode_dirs["my_model"], "ROUGE_results.txt"))
    assert (
        report.main(["--decode_dirs", f"a={decode_dirs['my_model']}", "--out", str(out)])
        == exit_codes.BAD_INPUT
    )
    assert "ROUGE_results.txt: cannot read" in capsys.readouterr().err
