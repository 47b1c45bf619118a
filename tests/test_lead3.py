"""experiments.lead3: sentence splitting, the decode-dir layout, and official ROUGE on it."""

import os

import pytest

from experiments import lead3
from experiments.benchmarks.common import shared_data_dir
from pointer_generator import exit_codes
from pointer_generator.data.binfile import write_bin
from pointer_generator.evaluation import rouge


def test_split_keeps_closing_quotes_and_brackets_with_their_sentence():
    article = "he said `` stop . '' then he left ! ! what ? -rrb- ok"
    assert lead3.split_article(article) == [
        ["he", "said", "``", "stop", ".", "''"],
        ["then", "he", "left", "!", "!"],
        ["what", "?", "-rrb-"],
        ["ok"],
    ]


def test_literal_closing_brackets_end_with_their_sentence_too():
    article = "( he left . ) then -lrb- it rained ! -rrb- [ so ? ] ok . }"
    assert lead3.split_article(article) == [
        ["(", "he", "left", ".", ")"],
        ["then", "-lrb-", "it", "rained", "!", "-rrb-"],
        ["[", "so", "?", "]"],
        ["ok", ".", "}"],
    ]


def test_ellipsis_does_not_end_a_sentence_and_whitespace_is_ascii_only():
    assert lead3.split_article("wait ... then go . next") == [
        ["wait", "...", "then", "go", "."],
        ["next"],
    ]
    # U+00A0 is not a separator (the data's tokens are split on ASCII whitespace only)
    assert lead3.split_article("a\u00a0b .") == [["a\u00a0b", "."]]
    assert lead3.split_article("") == []


def test_lead_takes_the_first_three_sentences():
    article = "one . two ! three ? four . five ."
    assert lead3.lead(article) == ["one .", "two !", "three ?"]
    assert lead3.lead("only one .") == ["only one ."]


def _data(tmp_path):
    """Examples in two files (created in reverse name order) and an empty article."""
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    write_bin(
        str(data / "test_001.bin"),
        [("the cat sat . a dog ran ? it was red . more text .", "<s> the cat sat . </s>")],
    )
    write_bin(
        str(data / "test_000.bin"),
        [
            ("x y . z w . v u . t s .", "<s> x y . </s> <s> z w . </s> <s> v u . </s>"),
            ("", "<s> skipped . </s>"),
        ],
    )
    return str(data / "test_*")


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def test_files_in_decode_layout_and_order(tmp_path):
    out = tmp_path / "lead"
    assert lead3.write_lead(_data(tmp_path), str(out)) == 2
    assert sorted(os.listdir(out / "decoded")) == ["000000_decoded.txt", "000001_decoded.txt"]
    assert _read(out / "reference" / "000000_reference.txt") == "x y .\nz w .\nv u ."
    assert _read(out / "decoded" / "000000_decoded.txt") == "x y .\nz w .\nv u ."
    # like decode output, lines are split after "." only, so "?" shares a line
    assert (
        _read(out / "decoded" / "000001_decoded.txt") == "the cat sat .\na dog ran ? it was red ."
    )
    assert _read(out / "reference" / "000001_reference.txt") == "the cat sat ."

    out2 = tmp_path / "lead_sent"
    lead3.write_lead(_data(tmp_path), str(out2), lines="sentence", max_examples=2)
    assert (
        _read(out2 / "decoded" / "000001_decoded.txt") == "the cat sat .\na dog ran ?\nit was red ."
    )
    out3 = tmp_path / "lead_one"
    assert lead3.write_lead(_data(tmp_path), str(out3), max_examples=1) == 1


def test_refuses_to_mix_with_an_earlier_run(tmp_path, capsys):
    data = _data(tmp_path)
    out = tmp_path / "lead"
    assert lead3.main(["--data_path", data, "--out_dir", str(out), "--no_rouge"]) == 0
    assert (
        lead3.main(["--data_path", data, "--out_dir", str(out), "--no_rouge"])
        == exit_codes.BAD_INPUT
    )
    assert "already holds files" in capsys.readouterr().err
    (out / "decoded" / "000007_decoded.txt").write_text("stale")
    assert (
        lead3.main(
            [
                "--data_path",
                data,
                "--out_dir",
                str(out),
                "--no_rouge",
                "--max_examples",
                "1",
                "--overwrite",
            ]
        )
        == 0
    )
    assert os.listdir(out / "decoded") == ["000000_decoded.txt"]


def test_official_rouge_on_hand_checkable_leads(tmp_path):
    try:
        rouge.check_perl(rouge.wheel_rouge_dir())
    except rouge.RougeError as e:
        pytest.skip(f"official ROUGE-1.5.5 cannot run here: {e}")
    out = tmp_path / "lead"
    assert lead3.main(["--data_path", _data(tmp_path), "--out_dir", str(out)]) == 0
    results = _read(out / "ROUGE_results.txt")
    # Example 0: the lead equals the reference, F1 = 1. Example 1: reference "the cat sat"
    # (3 words; ROUGE drops the punctuation), lead "the cat sat a dog ran it was red"
    # (9 words): R = 1, P = 1/3, F1 = 0.5. Macro average: 0.75.
    assert "rouge_1_f_score: 0.7500" in results
    assert "rouge_1_recall: 1.0000" in results


def test_shared_sample_subset_runs_end_to_end(tmp_path):
    """The real data path: 20 sample examples through .bin files into the layout."""
    shared = shared_data_dir()
    if not shared:
        pytest.skip("../shared/data is absent")
    from experiments.cpu_scale.split_sample import read_sample

    examples = read_sample(os.path.join(shared, "cnndm_sample.jsonl.gz"))[:20]
    data = tmp_path / "test_000.bin"
    write_bin(str(data), [(a, b) for _, a, b in examples])
    out = tmp_path / "lead"
    assert lead3.write_lead(str(data), str(out)) == 20
    first = _read(out / "decoded" / "000000_decoded.txt").split("\n")
    assert first[0].startswith("washington -lrb- cnn -rrb- president barack obama")
    assert len(first) == 3 and all(line.endswith(".") for line in first)
