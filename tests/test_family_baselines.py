"""experiments.families.baselines: the interpolated n-gram model against the formula,
perplexity by hand, the fixed-summary search, lead-k, and the command line."""

import json
import math
import os
import re
from collections import Counter

import numpy as np
import pytest

from experiments.families import baselines as b
from pointer_generator import exit_codes

# A tiny corpus over the events a=0, b=1, c=2, [UNK]=3, </s>=4 (N = 5); <s> is id 5.
A, B, C, UNK, END, BOS = 0, 1, 2, 3, 4, 5
N = 5
CORPUS = [[A, B, END], [A, B, C, END], [B, A, END], [A, UNK, END]]
W3 = (0.4, 0.3, 0.2, 0.1)


def _seqs(corpus):
    return [np.array(s, dtype=np.int64) for s in corpus]


def _formula(corpus, history, w, weights):
    """P(w | history) from the Jelinek-Mercer formula, counted from scratch in Python:
    the orders whose history was never seen are left out and the others' weights
    renormalised (the module's convention)."""
    order = len(weights) - 1
    grams = []
    for s in corpus:
        padded = [BOS] * (order - 1) + list(s)
        grams += [tuple(padded[i : i + order]) for i in range(len(s))]
    terms = []
    for n in range(order, 1, -1):
        h = tuple(history[len(history) - (n - 1) :])
        with_h = [g for g in grams if g[order - n : order - 1] == h]
        if with_h:
            terms.append((weights[order - n], sum(g[-1] == w for g in with_h) / len(with_h)))
    terms.append((weights[-2], sum(g[-1] == w for g in grams) / len(grams)))
    terms.append((weights[-1], 1 / N))
    return sum(x * p for x, p in terms) / sum(x for x, _ in terms)


@pytest.mark.parametrize("history", [(BOS, BOS), (BOS, A), (A, B), (B, A), (C, C), (B, C)])
def test_trigram_probabilities_follow_the_formula_and_sum_to_one(history):
    model = b.NgramModel(_seqs(CORPUS), 3, N)
    dist = model.distribution(list(history), W3)
    expected = [_formula(CORPUS, history, w, W3) for w in range(N)]
    np.testing.assert_allclose(dist, expected, rtol=1e-12)
    assert dist.sum() == pytest.approx(1.0, abs=1e-12)
    assert (dist > 0).all()


def test_a_seen_history_by_hand():
    # After (<s>, a): b twice, [UNK] once; after a: b twice, </s> once, [UNK] once;
    # unigram counts a 4, b 3, c 1, [UNK] 1, </s> 4 of 13 tokens.
    model = b.NgramModel(_seqs(CORPUS), 3, N)
    p_b = 0.4 * 2 / 3 + 0.3 * 2 / 4 + 0.2 * 3 / 13 + 0.1 / 5
    assert model.distribution([BOS, A], W3)[B] == pytest.approx(p_b)
    # (c, c) never seen, c seen once as a history (followed by </s>): weights renormalised.
    p_end = (0.3 * 1 + 0.2 * 4 / 13 + 0.1 / 5) / 0.6
    assert model.distribution([C, C], W3)[END] == pytest.approx(p_end)


def test_bigram_probabilities_sum_to_one():
    model = b.NgramModel(_seqs(CORPUS), 2, N)
    for h in (BOS, A, B, C, UNK):
        dist = model.distribution([h], (0.5, 0.3, 0.2))
        assert dist.sum() == pytest.approx(1.0, abs=1e-12)
        expected = [_formula(CORPUS, (h,), w, (0.5, 0.3, 0.2)) for w in range(N)]
        np.testing.assert_allclose(dist, expected, rtol=1e-12)


def test_perplexity_by_hand():
    # Unigram weight 1 (no uniform share would be allowed by the grid, but the formula
    # takes any weights): train a a b </s>, test "a </s>": P(a) = 2/4, P(</s>) = 1/4.
    model = b.NgramModel(_seqs([[A, A, B, END]]), 1, N)
    ppl, tokens = b.perplexity(model, _seqs([[A, END]]), (1.0, 0.0))
    assert tokens == 2
    assert ppl == pytest.approx(math.exp(-(math.log(0.5) + math.log(0.25)) / 2))
    # With the bigram: history <s> -> a (1/1), a -> </s> never seen after a (a -> a, a -> b).
    model = b.NgramModel(_seqs([[A, A, B, END]]), 2, N)
    w = (0.5, 0.4, 0.1)
    p1 = 0.5 * 1 + 0.4 * 2 / 4 + 0.1 / 5
    p2 = 0.5 * 0 + 0.4 * 1 / 4 + 0.1 / 5
    ppl, _ = b.perplexity(model, _seqs([[A, END]]), w)
    assert ppl == pytest.approx(math.exp(-(math.log(p1) + math.log(p2)) / 2))


def test_weights_are_chosen_on_the_held_out_titles():
    # A corpus where the order of words is fully predictable: the trigram gets weight.
    rng = np.random.default_rng(0)
    corpus = [[A, B, C, END] if rng.random() < 0.5 else [B, C, A, END] for _ in range(200)]
    fitted = b.fit_ngram(_seqs(corpus), 3, N)
    assert fitted.weights.sum() == pytest.approx(1.0)
    assert fitted.weights[-1] > 0
    assert fitted.weights[0] + fitted.weights[1] > 0.8
    grid = b.simplex(4, 20)
    assert len(grid) == math.comb(22, 3)  # 4 parts of 20, the last >= 1
    np.testing.assert_allclose(grid.sum(axis=1), 1.0)


def test_titles_map_to_the_models_targets(tmp_path):
    vocab = tmp_path / "vocab"
    vocab.write_text("the 5\ncat 3\n")
    events = b.Events(b.Vocab(str(vocab), 50000), max_dec_steps=3)
    assert events.words == ["the", "cat", "[UNK]", "</s>"]
    assert list(events.title("the dog")) == [0, 2, 3]
    assert list(events.title("cat <unk>")) == [1, 2, 3]
    assert list(events.title("the cat sat")) == [0, 1, 2]  # cut: no </s>


def test_rouge1_and_its_tokens():
    assert b.rouge_tokens("U.S. Troops , ### -lrb- ok") == ["u", "s", "troops", "-lrb-", "ok"]
    assert b.rouge1_f(["a", "a", "b"], ["a", "c"]) == pytest.approx(2 * 1 / 5)
    assert b.rouge1_f(["x"], ["a"]) == 0.0


def test_fixed_summary_search_finds_the_known_best():
    refs = [["a", "b", "c"], ["a", "b", "d"], ["a", "e", "f"]]
    words, score = b.best_fixed_summary(refs, ["e", "a", "b", "z"])
    # "a" first (in all three), then "b" (in two): F1 = (2*2/5 + 2*2/5 + 2*1/5) / 3.
    assert words == ["a", "b"]
    assert score == pytest.approx((0.8 + 0.8 + 0.4) / 3)
    # No other candidate string of these words scores higher.
    for cand in (["a"], ["a", "b", "e"], ["a", "a"], ["a", "e"], ["b"]):
        assert b.mean_rouge1_f([cand] * 3, refs) <= score
    # Repeats are allowed when they help.
    words, _ = b.best_fixed_summary([["a", "a"], ["a", "a"]], ["a", "b"])
    assert words == ["a", "a"]
    assert b.best_fixed_summary([["q"]], ["a"]) == ([], 0.0)


def test_lead_k_scores_and_choice():
    sources = [["a", ",", "b", "x", "y"], ["c", "d", "z"]]
    refs = [["a", "b"], ["c", "d"]]
    k, score, scores = b.best_lead_k(sources, refs, max_k=6)
    # k = 3 takes "a , b" and "c d z": ROUGE sees a b (F 1) and c d z (F 0.8); k = 2
    # ("a ," and "c d") has 2/3 and 1, k = 4 0.8 and 0.8.
    by_hand = [
        b.mean_rouge1_f([b.rouge_tokens(" ".join(s[:j])) for s in sources], refs)
        for j in range(1, 7)
    ]
    np.testing.assert_allclose(scores, by_hand)
    assert k == int(np.argmax(by_hand)) + 1
    assert k == 3 and score == pytest.approx(0.9)


def _write(path, lines):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))


def _data_dir(tmp_path):
    data = tmp_path / "hp"
    rng = np.random.default_rng(1)
    words = "police said the man was arrested in city on monday after fire".split()

    def title():
        return " ".join(rng.choice(words, size=int(rng.integers(3, 8))))

    def article(t):
        return "officials , " + t + " , they said ."

    for sub, a_name, t_name, n in (
        ("train", "train.article.txt", "train.title.txt", 60),
        ("train", "valid.article.filter.txt", "valid.title.filter.txt", 12),
        ("test", "input.txt", "task1_ref0.txt", 7),
    ):
        titles = [title() for _ in range(n)]
        _write(str(data / "sumdata" / sub / t_name), titles)
        _write(str(data / "sumdata" / sub / a_name), [article(t) for t in titles])
    counts = Counter(w for w in words[:8])
    _write(str(data / "finished" / "vocab"), [f"{w} {c}" for w, c in counts.items()])
    return data


def test_command_line_writes_the_reports_and_decode_folders(tmp_path, capsys):
    data = _data_dir(tmp_path)
    out = tmp_path / "out"
    assert b.main(["--data_dir", str(data), "--out_dir", str(out)]) == exit_codes.OK
    ngram = json.loads((out / "ngram.json").read_text())
    for label in ("trigram", "bigram"):
        assert ngram[label]["valid_perplexity"] > 1
        assert sum(ngram[label]["weights"].values()) == pytest.approx(1.0)
    titles = (data / "sumdata" / "test" / "task1_ref0.txt").read_text().splitlines()
    assert ngram["tokens"]["test"]["tokens"] == sum(len(t.split()) + 1 for t in titles)
    assert ngram["event_space"]["with_unk_and_end"] == 10
    fixed = json.loads((out / "fixed.json").read_text())
    lead = json.loads((out / "lead.json").read_text())
    assert fixed["summary"] and 0 < fixed["valid_rouge1_f"] <= 1
    assert lead["k"] >= 1
    for name in ("fixed", "lead"):
        decoded = sorted(os.listdir(out / name / "decoded"))
        assert decoded == ["%06d_decoded.txt" % k for k in range(7)]
        assert (out / name / "reference" / "000006_reference.txt").read_text() == titles[6]
    assert (out / "fixed" / "decoded" / "000003_decoded.txt").read_text() == fixed["summary"]
    source = (data / "sumdata" / "test" / "input.txt").read_text().splitlines()[0].split()
    lead_text = (out / "lead" / "decoded" / "000000_decoded.txt").read_text()
    assert lead_text.split() == source[: lead["k"]]
    assert "trigram: perplexity" in capsys.readouterr().out
    # A second run refuses to mix with the first one's files unless told to replace them.
    assert b.main(["--data_dir", str(data), "--out_dir", str(out)]) == exit_codes.BAD_INPUT
    assert "already holds files" in capsys.readouterr().err
    argv = ["--data_dir", str(data), "--out_dir", str(out), "--overwrite"]
    assert b.main(argv) == exit_codes.OK


def _without_info(err: str) -> list[str]:
    """The lines of `err` less the info lines ("HH:MM:SS message") the vocabulary logs
    where an earlier test of the session set logging up; warnings are kept."""
    info = re.compile(r"^\d\d:\d\d:\d\d (?!WARNING|ERROR)")
    return [line for line in err.strip().splitlines() if not info.match(line)]


def test_bad_input_is_one_error_line_naming_the_file(tmp_path, capsys):
    data = _data_dir(tmp_path)
    valid = data / "sumdata" / "train" / "valid.title.filter.txt"
    lines = valid.read_text().splitlines()
    valid.write_text("\n".join(lines[:3] + [""] + lines[4:]) + "\n")
    out = tmp_path / "out"
    assert b.main(["--data_dir", str(data), "--out_dir", str(out)]) == exit_codes.BAD_INPUT
    err = _without_info(capsys.readouterr().err)
    assert err == [f"error: {valid}:4: empty line (an example with no text)"]
    valid.write_text("\n".join(lines[:-1]) + "\n")
    assert b.main(["--data_dir", str(data), "--out_dir", str(out)]) == exit_codes.BAD_INPUT
    err = _without_info(capsys.readouterr().err)
    assert len(err) == 1 and err[0].startswith(f"error: {valid}: ")
    valid.write_text("\n".join(lines) + "\n")
    (data / "sumdata" / "test" / "input.txt").unlink()
    assert b.main(["--data_dir", str(data), "--out_dir", str(out)]) == exit_codes.BAD_INPUT
    assert "input.txt: no such file" in capsys.readouterr().err
    assert not out.exists()


def test_a_planted_link_is_refused(tmp_path, capsys):
    data = _data_dir(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, out / "fixed")
    assert b.main(["--data_dir", str(data), "--out_dir", str(out)]) == exit_codes.BAD_INPUT
    assert "symbolic link" in capsys.readouterr().err
    assert os.listdir(elsewhere) == []


def test_also_score_gives_the_perplexity_of_a_bin_files_abstracts(tmp_path, capsys):
    """--also_score NAME=FILE.bin: the same models' perplexity on the abstracts of a
    `.bin` file (the real-text page's training sample), equal to scoring those titles as
    a split: here the validation titles written as a .bin."""
    from pointer_generator.data.binfile import write_bin

    data = _data_dir(tmp_path)
    titles = (data / "sumdata" / "train" / "valid.title.filter.txt").read_text().splitlines()
    sample = tmp_path / "sample.bin"
    write_bin(str(sample), [("an article .", f"<s> {t} </s>") for t in titles])
    out = tmp_path / "out"
    argv = ["--data_dir", str(data), "--out_dir", str(out), f"--also_score=again={sample}"]
    assert b.main(argv) == exit_codes.OK
    ngram = json.loads((out / "ngram.json").read_text())
    for label in ("trigram", "bigram"):
        assert ngram[label]["again_perplexity"] == pytest.approx(ngram[label]["valid_perplexity"])
        assert ngram[label]["again_tokens"] == ngram[label]["valid_tokens"]
    assert ngram["tokens"]["again"] == ngram["tokens"]["valid"]
    for bad in ("again", f"valid={sample}", f"x={tmp_path / 'missing.bin'}"):
        argv = ["--data_dir", str(data), "--out_dir", str(tmp_path / "o2"), f"--also_score={bad}"]
        assert b.main(argv) == exit_codes.BAD_INPUT
        err = _without_info(capsys.readouterr().err)
        assert len(err) == 1 and err[0].startswith(f"error: --also_score={bad}: give NAME=")
