"""Gigaword-style data (issue 20, items 5 and 7): NAMAS's preprocessing rules one by one,
raw Gigaword SGML into the release's files and `.bin`, and the CNN/DM lead-sentence ->
first-highlight proxy task (its count on the shared sample is spec §7.2's 6,836)."""

from __future__ import annotations

import gzip
import json

import pytest

from data_tools import gigaword_raw, gigaword_rules, proxy_task
from pointer_generator.data.binfile import read_records

ARTICLE = "the japanese company said on monday it would sell its computer unit to a rival ."


def _words(text: str) -> list[str]:
    return text.split()


@pytest.mark.parametrize(
    "article, title, reason",
    [
        (ARTICLE, "company to sell computer unit", None),
        (ARTICLE.replace(" .", ""), "company to sell computer unit", "no '.' token"),
        (ARTICLE, "update # : company to sell unit", "bad word in title"),
        (ARTICLE, "company sells unit , by reporter", "bad word in title"),
        (ARTICLE, "does company sell computer unit ?", "bad word in title"),
        ("a short one .", "company to sell computer unit", "article length"),
        (ARTICLE, "company sells", "title length"),
        (ARTICLE, "firm to shed pc arm", "no shared word"),
        # a shared word of length 3 is not enough
        (ARTICLE, "its the pc to go", "no shared word"),
    ],
)
def test_each_filter_rule_alone(article, title, reason):
    assert gigaword_rules.rejection(_words(article), _words(title)) == reason


def test_bad_words_as_tokens_or_as_namas_substrings():
    title = _words("japan to sell computer unit")  # "ap" is a bad word
    assert not gigaword_rules.has_bad_word(title)
    assert gigaword_rules.has_bad_word(title, substring=True)
    assert gigaword_rules.rejection(_words(ARTICLE), title, substring=True) == "bad word in title"


def test_digits_punctuation_and_dictionaries():
    assert gigaword_rules.mask_digits("sold 1,200 units in 1995") == "sold #,### units in ####"
    title = _words("`` nec , unk '' -- to sell -lrb- pc -rrb- unit !")
    kept = gigaword_rules.pull(title, {"nec", "to", "sell", "unit", "-lrb-", "pc"}, title=True)
    # NAMAS drops -rrb- but (its -llb- typo) keeps -lrb-; unknown words become <unk>.
    assert kept == ["nec", "<unk>", "to", "sell", "-lrb-", "pc", "unit"]
    lines = [["a"] * 5 + ["b"] * 4, ["C"]]
    assert dict(gigaword_rules.dictionary(lines, 5)) == {"a": 5}
    assert dict(gigaword_rules.dictionary(lines, 4)) == {"a": 5, "b": 4}
    assert gigaword_rules.first_sentence(_words("he said . '' then more .")) == _words(
        "he said . ''"
    )


def _sgml(documents: list[tuple[str, str]], kind: str = "story") -> str:
    return "".join(
        f'<DOC id="X_{i}" type="{kind}">\n<HEADLINE>\n{h}\n</HEADLINE>\n<TEXT>\n<P>\n{p}\n</P>\n'
        "<P>\nAnother paragraph.\n</P>\n</TEXT>\n</DOC>\n"
        for i, (h, p) in enumerate(documents)
    )


def test_raw_gigaword_into_the_release_layout_and_bin_files(tmp_path):
    story = (
        "Japan's NEC to sell computer unit",
        "NEC Corp. said on Monday it would sell its computer unit, worth 1,200 "
        "million yen, to a rival. It gave no reason.",
    )
    bad = ("UPDATE 2: NEC to sell unit", story[1])  # the filter drops it (train/valid)
    for split in ("train", "valid", "test"):
        with gzip.open(tmp_path / f"{split}.xml.gz", "wt", encoding="utf-8") as f:
            f.write(_sgml([story] * 5 + [bad]) + _sgml([story], kind="advis"))
    out = tmp_path / "out"
    args = [f"--{s}={tmp_path / (s + '.xml.gz')}" for s in ("train", "valid", "test")]
    assert gigaword_raw.main([*args, f"--out_dir={out}"]) == 0
    text = out / "sumdata"
    articles = (text / "train" / "train.article.txt").read_text().splitlines()
    titles = (text / "train" / "train.title.txt").read_text().splitlines()
    assert len(articles) == 5  # the advisory and the UPDATE headline are gone
    assert articles[0] == (
        "nec corp. said on monday it would sell its computer unit , worth #,### million "
        "yen , to a rival ."
    )
    assert titles[0] == "japan 's nec to sell computer unit"
    assert len((text / "test" / "input.txt").read_text().splitlines()) == 6  # not filtered
    records = list(read_records(str(out / "finished" / "train.bin")))
    assert records[0][1] == "<s> japan 's nec to sell computer unit </s>"
    assert (out / "finished" / "vocab").exists() and (text / "title.dict").exists()


def test_raw_gigaword_bad_input_is_one_error_line(tmp_path, capfd):
    (tmp_path / "plain.txt").write_text("no documents here\n")
    args = [f"--{s}={tmp_path / 'plain.txt'}" for s in ("train", "valid", "test")]
    assert gigaword_raw.main([*args, f"--out_dir={tmp_path / 'o'}"]) == 2
    assert "plain.txt: no <DOC> ... </DOC> document" in capfd.readouterr().err
    args[0] = f"--train={tmp_path / 'missing*'}"
    assert gigaword_raw.main([*args, f"--out_dir={tmp_path / 'o'}"]) == 2
    assert "--train" in capfd.readouterr().err and not (tmp_path / "o").exists()


def test_the_proxy_task_on_constructed_records(tmp_path):
    records = [
        {
            "id": f"{i:06d}",
            "article": "london -lrb- cnn -rrb- -- the prime minister said on monday that "
            f"taxes would rise by {i} % next year . more text follows .",
            "abstract": ["prime minister says taxes will rise next year", "second one"],
        }
        for i in range(40)
    ]
    records.append({"id": "x", "article": "too short .", "abstract": ["short title here now"]})
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    splits, dropped = proxy_task.build(str(path))
    assert sum(len(v) for v in splits.values()) == 40 and dropped == {"article length": 1}
    source, title = splits["train"][0]
    assert source[:3] == ["the", "prime", "minister"] and source[-1] == "."
    assert "#" in source[-5] or "##" in " ".join(source)  # digits masked
    assert proxy_task.split_of("000001") == proxy_task.split_of("000001")
    assert proxy_task.main([f"--input={path}", f"--out_dir={tmp_path / 'p'}", "--min_count=1"]) == 0
    assert (tmp_path / "p" / "finished" / "val.bin").exists()


def test_the_proxy_task_keeps_6836_of_the_shared_pairs(cnndm_sample_path):
    """spec abs-ras.md §7.2 (computed there independently with plain Python)."""
    splits, dropped = proxy_task.build(cnndm_sample_path)
    assert sum(len(v) for v in splits.values()) == 6836
    assert dropped == {
        "no shared word": 1352,
        "bad word in title": 890,
        "article length": 255,
        "no '.' token": 157,
    }
    sub, _ = proxy_task.build(cnndm_sample_path, substring=True)
    assert sum(len(v) for v in sub.values()) == 6142


def test_test_titles_keep_their_rare_words(tmp_path):
    """The test titles are ROUGE's references: `<unk>` there would reward writing [UNK]."""
    from data_tools.sentence_dataset import write_dataset

    article = "the minister said taxes would rise next year in the country ."
    pair = (article.split(), "minister says taxes will rise".split())
    rare = (article.split(), "minister says zanzibar taxes rise".split())
    write_dataset({"train": [pair] * 5 + [rare], "valid": [rare], "test": [rare]}, str(tmp_path))
    text = tmp_path / "sumdata"
    assert "zanzibar" not in (text / "train" / "train.title.txt").read_text()
    assert "<unk>" in (text / "train" / "valid.title.filter.txt").read_text()
    assert (text / "test" / "task1_ref0.txt").read_text() == "minister says zanzibar taxes rise\n"


def test_keep_words_keeps_the_rare_words_of_inputs_and_titles(tmp_path):
    """The pointer-generator's variant of the proxy task: nothing becomes `<unk>`."""
    from data_tools.sentence_dataset import write_dataset

    article = "the minister said taxes would rise next year in the country ."
    pair = (article.split(), "minister says taxes will rise".split())
    rare = ("the minister said zanzibar taxes would rise .".split(), "zanzibar taxes rise".split())
    splits = {"train": [pair] * 5 + [rare], "valid": [rare], "test": [rare]}
    write_dataset(splits, str(tmp_path / "unk"))
    write_dataset(splits, str(tmp_path / "kept"), keep_words=True)
    for build, has_unk in (("unk", True), ("kept", False)):
        text = tmp_path / build / "sumdata"
        train = (text / "train" / "train.article.txt").read_text()
        assert ("<unk>" in train) == has_unk and ("zanzibar" in train) != has_unk
        titles = (text / "train" / "valid.title.filter.txt").read_text()
        assert ("zanzibar" in titles) != has_unk
    # The dictionaries do not change.
    for name in ("article.dict", "title.dict"):
        unk = (tmp_path / "unk" / "sumdata" / name).read_text()
        assert unk == (tmp_path / "kept" / "sumdata" / name).read_text()
