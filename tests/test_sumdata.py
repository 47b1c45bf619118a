"""The preprocessed Gigaword / DUC release ("sumdata") into .bin files: small files of
that format written here (the real data is licensed)."""

from __future__ import annotations

import os

import pytest

import pointer_generator as pg
from data_tools import sumdata
from pointer_generator.data.binfile import read_records

ARTICLES = [
    "japan 's nec corp. and UNK computer corp. agreed to merge their pc businesses .",
    "the dollar fell to ### yen in tokyo on <unk> , dealers said .",
    "police arrested ## people after clashes in the capital .",
]
TITLES = ["nec UNK in computer sales tie-up", "dollar falls in tokyo", "## arrested after clashes"]


def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def test_parallel_files_become_tagged_pairs_with_the_projects_unk(tmp_path):
    articles = _write(tmp_path / "train.article.txt", ARTICLES)
    titles = _write(tmp_path / "train.title.txt", TITLES)
    out = tmp_path / "out"
    assert sumdata.main(["--articles", articles, "--titles", titles, "--out_dir", str(out)]) == 0
    records = list(read_records(str(out / "train.bin")))
    assert records[0] == (
        "japan 's nec corp. and [UNK] computer corp. agreed to merge their pc businesses .",
        "<s> nec [UNK] in computer sales tie-up </s>",
    )
    assert records[1][0].endswith("on [UNK] , dealers said .")  # <unk> as well as UNK
    assert records[2] == (ARTICLES[2], "<s> ## arrested after clashes </s>")
    assert os.listdir(out / "chunked") == ["train_000.bin"]
    vocab = pg.Vocab(str(out / "vocab"), 0)  # the markers are not words of the vocabulary
    assert vocab.word2id("UNK") == vocab.word2id("<unk>") == vocab.word2id("zzz") == 0
    assert vocab.word2id("##") >= 4


def test_duc_layout_keeps_the_other_three_references(tmp_path):
    articles = _write(tmp_path / "input.txt", ARTICLES[:2])
    refs = [_write(tmp_path / f"task1_ref{k}.txt", [f"ref{k} a", f"ref{k} b"]) for k in range(4)]
    n = sumdata.convert(articles, refs, str(tmp_path / "out"), set_name="duc2004")
    assert n == 2
    assert not os.path.exists(tmp_path / "out" / "vocab")  # test data: no vocabulary
    records = list(read_records(str(tmp_path / "out" / "duc2004.bin")))
    assert [r[1] for r in records] == ["<s> ref0 a </s>", "<s> ref0 b </s>"]
    ref_dir = tmp_path / "out" / "duc2004.references"
    assert sorted(os.listdir(ref_dir)) == ["ref1.txt", "ref2.txt", "ref3.txt"]
    assert (ref_dir / "ref3.txt").read_text() == "ref3 a\nref3 b\n"


@pytest.mark.parametrize(
    "articles, titles, message",
    [
        (ARTICLES, TITLES[:2], "the files are not parallel ("),
        (ARTICLES[:1] + ["  "] + ARTICLES[2:], TITLES, "input.txt:2: empty line"),
        (ARTICLES, TITLES[:2] + [""], "ref.txt:3: empty line"),
        ([], [], "input.txt: no lines"),
    ],
    ids=["ragged", "empty_article", "empty_title", "no_lines"],
)
def test_bad_files_are_one_error_and_nothing_is_written(
    tmp_path, capsys, articles, titles, message
):
    a = _write(tmp_path / "input.txt", articles)
    t = _write(tmp_path / "ref.txt", titles)
    out = tmp_path / "out"
    assert sumdata.main(["--articles", a, "--titles", t, "--out_dir", str(out)]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and message in errors[0], err
    assert not os.path.exists(out / "train.bin")


def test_a_missing_reference_file_is_named(tmp_path, capsys):
    a = _write(tmp_path / "input.txt", ARTICLES)
    missing = str(tmp_path / "task1_ref1.txt")
    status = sumdata.main(
        ["--articles", a, "--titles", a, missing, "--out_dir", str(tmp_path / "out")]
    )
    assert status == 2
    assert f"error: {missing}: no such file" in capsys.readouterr().err
