"""experiments.analysis: every measure on hand-made summaries with hand-computed values."""

import pytest

import pointer_generator as pg
from experiments import analysis, lead3
from pointer_generator.data.binfile import write_bin
from pointer_generator.decoding.folder import write_for_rouge


def test_duplicate_ngrams_counts_repeats_of_earlier_occurrences():
    toks = "a b a b a".split()
    # unigrams a b a b a: the 3rd, 4th, 5th repeat earlier ones
    assert analysis.duplicate_ngrams(toks, 1) == (3, 5)
    # bigrams ab ba ab ba
    assert analysis.duplicate_ngrams(toks, 2) == (2, 4)
    # trigrams aba bab aba
    assert analysis.duplicate_ngrams(toks, 3) == (1, 3)
    # 4-grams abab baba
    assert analysis.duplicate_ngrams(toks, 4) == (0, 2)
    assert analysis.duplicate_ngrams(["a"], 2) == (0, 0)


def test_duplicate_sentences():
    assert analysis.duplicate_sentences(["x .", "y .", "x .", "x ."]) == (2, 4)
    assert analysis.duplicate_sentences([]) == (0, 0)


def test_novel_ngrams_against_the_article():
    article = "the cat sat on the mat .".split()
    summary = "the cat ate the mat .".split()
    uni = set(analysis.ngrams(article, 1))
    bi = set(analysis.ngrams(article, 2))
    assert analysis.novel_ngrams(summary, 1, uni) == (1, 6)  # "ate"
    # the-cat in, cat-ate new, ate-the new, the-mat in, mat-. in
    assert analysis.novel_ngrams(summary, 2, bi) == (2, 5)


def test_span_sentences_need_a_contiguous_whole_token_copy():
    article = "the cat sat on the mat .".split()
    sents = ["cat sat on", "cat on the", "at on", "the mat ."]
    # "cat on the" is not contiguous; "at on" only matches inside the word "sat"
    assert analysis.span_sentences(sents, article) == (2, 4)


def test_copied_whole_sentences_is_the_papers_measure_not_a_span_match():
    article = "the cat sat on the mat . it was red ! then rain . '' ok"
    art_sents = {tuple(x) for x in lead3.split_article(article)}
    # sentences of the summary: "on the mat ." (a span, not a whole sentence),
    # "it was red !" (whole), "then rain . ''" (whole, closing quote kept), "ok" (whole)
    tokens = "on the mat . it was red ! then rain . '' ok".split()
    assert analysis.copied_whole_sentences(tokens, art_sents) == (3, 4)
    assert analysis.span_sentences(["on the mat ."], article.split()) == (1, 1)
    assert analysis.copied_whole_sentences([], art_sents) == (0, 0)


def test_measure_reports_whole_sentence_copies_spans_and_their_complement():
    articles = ["the cat sat on the mat . it was red .", "a b . c d ."]
    summaries = [["the cat sat on the mat .", "on the mat ."], ["a b .", "x y ."]]
    m = analysis.measure(summaries, articles)
    # whole: "the cat sat on the mat ." and "a b ." of 4 sentences; spans: those and
    # "on the mat ."
    assert m["copied_sentence_pct"] == pytest.approx(100 * 2 / 4)
    assert m["novel_sentence_pct"] == pytest.approx(100 * 2 / 4)
    assert m["span_sentence_pct"] == pytest.approx(100 * 3 / 4)
    assert analysis.measure(summaries)["copied_sentence_pct"] is None


def test_the_unknown_token_spelling_is_configurable(tmp_path):
    vocab = _vocab(tmp_path, ["a", "b", "."])
    summaries = [["a UNK ."], ["a b ."]]
    articles = ["a UNK zz .", "a b ."]
    default = analysis.measure(summaries, articles, vocab)
    assert default["unk_summary_pct"] == 0.0
    assert default["copied_oov_tokens"] == 1  # "UNK" looks like a copied OOV
    other = analysis.measure(summaries, articles, vocab, unk_token="UNK")
    assert other["unk_summary_pct"] == 50.0
    assert other["copied_oov_tokens"] == 0


def _vocab(tmp_path, words):
    path = tmp_path / "vocab"
    path.write_text("".join(f"{w} {100 - i}\n" for i, w in enumerate(words)))
    return pg.Vocab(str(path), 0)


def test_copied_oovs_counts_article_oovs_only(tmp_path):
    vocab = _vocab(tmp_path, ["the", "cat", "."])
    summary = ["zyx", "the", "zyx", "qqq", "[UNK]"]
    # zyx is OOV and in the article (twice in the summary); qqq is not in the article;
    # the literal [UNK] is not a copied word.
    assert analysis.copied_oovs(summary, ["zyx", "the", "[UNK]"], vocab) == 2
    assert analysis.copied_oovs(summary, ["the", "cat"], vocab) == 0


def test_measure_aggregates_over_summaries_and_truncates_article_for_oovs(tmp_path):
    vocab = _vocab(tmp_path, ["a", "b", "."])
    summaries = [["a b z"], ["a [UNK] .", "a [UNK] ."], []]
    articles = ["a b . z", "c d", "e"]
    m = analysis.measure(summaries, articles, vocab, max_enc_steps=3)
    assert m["summaries"] == 3
    assert m["mean_tokens"] == pytest.approx(9 / 3)
    # unigrams: a b z has no dups, a [UNK] . a [UNK] . 3 of 6; the empty one adds nothing
    assert m["duplicate_1gram_pct"] == pytest.approx(100 * 3 / 9)
    assert m["duplicate_sentence_pct"] == pytest.approx(100 * 1 / 3)
    assert m["unk_summary_pct"] == pytest.approx(100 / 3)
    # novel unigrams: a b z all in "a b . z"; a [UNK] . a [UNK] . all novel w.r.t. "c d"
    assert m["novel_1gram_pct"] == pytest.approx(100 * 6 / 9)
    assert m["copied_oov_tokens"] == 0  # z is OOV, but only after max_enc_steps=3 tokens
    m = analysis.measure([["z"]], ["a b . z"], vocab, max_enc_steps=0)
    assert m["copied_oov_tokens"] == 1
    assert m["summaries_with_copied_oov_pct"] == 100.0
    no_articles = analysis.measure(summaries)
    assert no_articles["novel_2gram_pct"] is None and no_articles["copied_oov_tokens"] is None
    assert analysis.measure([])["duplicate_1gram_pct"] is None


def _decode_dir(tmp_path, abstracts=None):
    """Two examples (hand-computed values in the test below) + an empty article that the
    readers must skip, in two .bin files whose names sort differently from creation."""
    data = tmp_path / "data"
    data.mkdir()
    abstracts = abstracts or ["<s> a b . </s>", "<s> x y . </s> <s> q . </s>"]
    write_bin(str(data / "test_001.bin"), [("x y z w .", abstracts[1])])
    write_bin(
        str(data / "test_000.bin"), [("a b c d . e f .", abstracts[0]), ("", "<s> empty . </s>")]
    )
    d = tmp_path / "decode"
    write_for_rouge(["a b ."], "a b c . a b c .".split(), 0, str(d))
    write_for_rouge(["x y .", "q ."], "x y z w .".split(), 1, str(d))
    (d / "p_gens.tsv").write_text("0\t0.5\t10\n1\t0.2\t5\n0\t0.3\t10\n")
    return str(d), str(data / "test_*")


def test_analyse_decode_dir_by_hand(tmp_path):
    decode_dir, data_path = _decode_dir(tmp_path)
    vocab = _vocab(tmp_path, ["a", "b", "c", "d", ".", "e", "f", "x", "y", "z"])
    r = analysis.analyse_decode_dir(decode_dir, data_path=data_path, vocab=vocab)
    assert r["examples"] == 2
    s = r["system"]  # "a b c . a b c ." and "x y z w ."
    assert s["mean_tokens"] == pytest.approx(6.5)
    assert s["duplicate_1gram_pct"] == pytest.approx(100 * 4 / 13)
    assert s["duplicate_2gram_pct"] == pytest.approx(100 * 3 / 11)
    assert s["duplicate_3gram_pct"] == pytest.approx(100 * 2 / 9)
    assert s["duplicate_4gram_pct"] == pytest.approx(100 * 1 / 7)
    assert s["duplicate_sentence_pct"] == pytest.approx(100 * 1 / 3)
    assert s["novel_1gram_pct"] == 0.0
    # "c .", ". a", "c ." are not in "a b c d . e f ."
    assert s["novel_2gram_pct"] == pytest.approx(100 * 3 / 11)
    # whole-sentence copies: "x y z w ." only (1 of 3); "a b c ." is no article span
    assert s["novel_sentence_pct"] == pytest.approx(100 * 2 / 3)
    assert s["copied_sentence_pct"] == pytest.approx(100 * 1 / 3)
    assert s["span_sentence_pct"] == pytest.approx(100 * 1 / 3)
    assert s["copied_oov_tokens"] == 1  # "w"
    assert s["copied_oov_per_summary"] == 0.5
    assert s["summaries_with_copied_oov_pct"] == 50.0
    ref = r["reference"]  # "a b ." and "x y . q ."
    assert ref["duplicate_1gram_pct"] == pytest.approx(100 * 1 / 8)
    assert ref["novel_1gram_pct"] == pytest.approx(100 * 1 / 8)  # "q"
    assert ref["novel_sentence_pct"] == 100.0
    assert ref["copied_sentence_pct"] == 0.0
    assert ref["copied_oov_tokens"] == 0  # "q" is OOV but not in the article
    # p_gens.tsv: index 0 written twice, the last line (0.3 over 10 steps) counts
    assert r["p_gen"]["p_gen_mean_per_summary"] == pytest.approx((0.3 + 0.2) / 2)
    assert r["p_gen"]["p_gen_mean_per_step"] == pytest.approx((0.3 * 10 + 0.2 * 5) / 15)


def test_wrong_data_is_detected_by_the_reference_check(tmp_path):
    decode_dir, data_path = _decode_dir(
        tmp_path, abstracts=["<s> other . </s>", "<s> x y . </s> <s> q . </s>"]
    )
    with pytest.raises(analysis.AnalysisError, match="reference of example 0"):
        analysis.analyse_decode_dir(decode_dir, data_path=data_path)
    r = analysis.analyse_decode_dir(decode_dir, data_path=data_path, check_references=False)
    assert r["system"]["novel_1gram_pct"] == 0.0


def test_errors_name_the_file(tmp_path):
    bad = tmp_path / "p_gens.tsv"
    bad.write_text("0\t0.5\t10\nnot a line\n")
    with pytest.raises(analysis.AnalysisError, match=r"p_gens.tsv:2"):
        analysis.read_p_gens(str(bad))
    with pytest.raises(analysis.AnalysisError, match="no NNNNNN_decoded.txt"):
        (tmp_path / "decoded").mkdir()
        (tmp_path / "reference").mkdir()
        analysis.analyse(str(tmp_path / "reference"), str(tmp_path / "decoded"))
    decode_dir, _ = _decode_dir(tmp_path)
    with pytest.raises(analysis.AnalysisError, match="matches no files"):
        analysis.analyse_decode_dir(decode_dir, data_path=str(tmp_path / "nothing_*"))


def test_command_line_writes_json(tmp_path, capsys):
    decode_dir, data_path = _decode_dir(tmp_path)
    out = tmp_path / "a.json"
    assert (
        analysis.main(["--decode_dir", decode_dir, "--data_path", data_path, "--out", str(out)])
        == 0
    )
    import json

    assert json.loads(out.read_text())["system"]["duplicate_sentence_pct"] == pytest.approx(100 / 3)
    printed = capsys.readouterr().out
    assert "% duplicate sentences" in printed and "% copied whole article sentences" in printed
    assert (
        analysis.main(
            [
                "--decode_dir",
                decode_dir,
                "--data_path",
                data_path,
                "--unk_token",
                "w",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert json.loads(out.read_text())["system"]["unk_summary_pct"] == 50.0
