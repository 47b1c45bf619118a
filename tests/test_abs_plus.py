"""ABS+ (issue 20, item 4): the extractive features against the spec's hand-made table,
the search's feature score against the NumPy totals, the batched search against an
exhaustive one on a tiny model, weight files (a weight that would overflow float32 is
refused), and MERT's line search against a brute force over the line."""

from __future__ import annotations

import itertools
import math
import os

import numpy as np
import pytest
import tensorflow as tf

from pointer_generator.data.vocab import PAD_ID, START_ID, STOP_ID, UNK_ID
from pointer_generator.errors import DataError
from pointer_generator.evaluation import mert
from pointer_generator.search import extractive_features as ef

A, B, C, D, E = 10, 11, 12, 13, 14  # the words a b c d e of spec §8.2's table
WORDS = {"a": A, "b": B, "c": C, "d": D, "e": E}
# hypothesis -> (paper uni/bi/tri/ooo, NAMAS-compatible uni/bi/tri/ooo), input "a b c d e"
TABLE = {
    "c d": ((2, 1, 0, 0), (2, 0, 0, 0)),
    "b c d": ((3, 2, 1, 0), (3, 1, 1, 0)),
    "d c": ((2, 0, 0, 1), (2, 0, 0, 1)),
    "c e": ((2, 0, 0, 0), (2, 1, 0, 0)),
    "b c e": ((3, 1, 0, 0), (3, 2, 2, 0)),
}


@pytest.mark.parametrize("hypothesis", list(TABLE))
def test_the_features_of_the_spec_table(hypothesis):
    ids = [WORDS[w] for w in hypothesis.split()]
    paper, namas = TABLE[hypothesis]
    for switch, want in ((False, paper), (True, namas)):
        got = ef.hypothesis_features([A, B, C, D, E], ids, namas=switch)
        assert tuple(got[:4]) == want and got[4] == len(ids)


def _step_totals(article, mask, hypothesis, weights, namas, vocab=20):
    """The search's per-step feature scores of `hypothesis`'s words, summed."""
    history, total = [START_ID, START_ID], 0.0
    for w in hypothesis:
        scores = ef.feature_scores(
            tf.constant([article]), tf.constant([mask]), tf.constant([history[-2:]]),
            weights, vocab, 1, namas,
        )  # fmt: skip
        total += float(scores[0, w])
        history.append(w)
    return total


@pytest.mark.parametrize("namas", [False, True])
def test_the_search_scores_add_up_to_the_weighted_feature_totals(namas):
    rng = np.random.default_rng(3)
    for _ in range(6):
        n = int(rng.integers(3, 8))
        article = list(rng.integers(4, 12, n)) + [PAD_ID] * 3  # padded like a batch
        mask = [1] * n + [0] * 3
        hypothesis = list(rng.integers(4, 12, int(rng.integers(1, 5)))) + [STOP_ID]
        weights = dict(zip(ef.FEATURES, [1.0, *rng.normal(size=5)], strict=True))
        want = np.dot([weights[k] for k in ef.INDICATORS],
                      ef.hypothesis_features(article[:n], hypothesis, namas))  # fmt: skip
        got = _step_totals(article, mask, hypothesis, weights, namas)
        assert got == pytest.approx(want, abs=1e-5)


def test_weight_files(tmp_path):
    good = tmp_path / "w.txt"
    good.write_text("# tuned\nLM 1.0\nuni 4.85\nbi 1.2 # comment\ntri -13.4\nooo -0.53\n")
    w = ef.read_weights(str(good))
    assert w == {"lm": 1.0, "uni": 4.85, "bi": 1.2, "tri": -13.4, "ooo": -0.53, "length": 0.0}
    again = tmp_path / "again.txt"
    again.write_text(ef.format_weights(w))
    assert ef.read_weights(str(again)) == w
    for text, message in (
        ("uni four\n", "w.txt:1: 'four' is not a number"),
        ("unigram 1\n", "w.txt:1: expected '<feature> <weight>'"),
        ("lm 0\n", "the lm weight must be positive"),
        ("bi nan\n", "w.txt:1: the weight nan is out of range"),
    ):
        good.write_text(text)
        with pytest.raises(DataError, match=message):
            ef.read_weights(str(good))
    with pytest.raises(DataError, match="cannot read feature weights"):
        ef.read_weights(str(tmp_path / "missing.txt"))


# ---------------------------------------------------------------- the search
def _tiny_abs(vocab_size: int):
    from pointer_generator.models.abs_model import ABSConfig, ABSModel

    keras_seed = tf.keras.utils.set_random_seed
    keras_seed(5)
    model = ABSModel(ABSConfig(window=2, emb_dim=6, hidden_dim=8), vocab_size).build_weights()
    for v in model.trainable_variables:  # larger weights: distinct probabilities
        v.assign(v * 4.0)
    return model


@pytest.mark.parametrize("with_features", [False, True])
def test_the_batched_search_equals_exhaustive_search_on_a_tiny_model(with_features):
    """Words {4, 5, 6} (the special tokens get no probability), beam 3, exactly two
    words (min = max = 2 steps): every 2-word summary reaches the last step, so the
    search must return the best of all 9 under the model (plus the features)."""
    from pointer_generator.search.beam_search import batched_beam_search

    v, k = 7, 3
    model = _tiny_abs(v)
    enc = tf.constant([[4, 5, 6, 5], [6, 6, 4, PAD_ID]], tf.int32)
    mask = tf.constant([[1, 1, 1, 1], [1, 1, 1, 0]], tf.float32)
    keep = tf.constant([0, 0, 0, 1, 1, 1, 1], tf.float32)  # PAD UNK START STOP a b c
    keep = keep * tf.one_hot(STOP_ID, v, on_value=0.0, off_value=1.0) + tf.one_hot(STOP_ID, v)
    weights = {"lm": 1.0, "uni": 0.7, "bi": 1.3, "tri": -0.4, "ooo": -0.9, "length": 0.1}
    arts = model.search_articles(enc, mask)

    def step(tokens, carry, art):
        probs, attn, p_gen, new = model.decode_step(tokens, carry["model"], art["model"], k)
        history = tf.concat([carry["history"][:, 1:], tokens[:, None]], axis=1)
        probs = probs * keep
        if with_features:
            probs = probs * tf.exp(ef.feature_scores(art["ids"], art["mask"], history,
                                                     weights, v, k))  # fmt: skip
        return probs, attn, p_gen, {"model": new, "history": history}

    out = batched_beam_search(
        step,
        {"model": model.initial_carry(2 * k), "history": tf.fill([2 * k, 2], START_ID)},
        batch_size=2, beam_size=k, vocab_size=v, max_dec_steps=2, min_dec_steps=2,
        start_id=START_ID, stop_id=STOP_ID, unk_id=UNK_ID,
        articles={"model": arts, "ids": enc, "mask": mask},
    )  # fmt: skip
    for row in range(2):
        best, best_score = None, -math.inf
        n = int(mask[row].numpy().sum())
        for w1, w2 in itertools.product((4, 5, 6), repeat=2):
            dec = tf.constant([[START_ID, w1]], tf.int32)
            lp = model.log_probs(enc[row : row + 1], mask[row : row + 1], dec).numpy()[0]
            score = lp[0, w1] + lp[1, w2]
            if with_features:
                f = ef.hypothesis_features(enc[row, :n].numpy(), [w1, w2])
                score += np.dot([weights[x] for x in ef.INDICATORS], f)
            if score > best_score:
                best, best_score = [w1, w2], score
        assert list(out["tokens"][row, :2].numpy()) == best
        assert float(out["scores"][row]) * 3 == pytest.approx(best_score, rel=1e-4)


# ---------------------------------------------------------------- MERT
def _random_nbests(seed=0, n=25, objective="rouge1_recall"):
    """Random n-best lists whose statistics are those of random word summaries."""
    rng = np.random.default_rng(seed)
    words = list("abcdef")
    out = []
    for _ in range(n):
        h = int(rng.integers(1, 7))
        ref = list(rng.choice(words, 8))
        hyps = [list(rng.choice(words, int(rng.integers(4, 9)))) for _ in range(h)]
        stats = np.stack([mert.statistics(x, [ref], objective, 0) for x in hyps])
        out.append(
            mert.NBest(rng.normal(size=h), rng.integers(0, 4, size=(h, 5)).astype(float), stats)
        )
    return out


def test_upper_envelope_is_the_pointwise_maximum():
    rng = np.random.default_rng(1)
    for _ in range(20):
        a, b = rng.normal(size=8), rng.integers(-3, 4, 8).astype(float)
        lines, breaks = mert.upper_envelope(a, b)
        for x in np.linspace(-10, 10, 401):
            j = int(np.searchsorted(breaks, x))
            assert a[lines[j]] + b[lines[j]] * x == pytest.approx(np.max(a + b * x))


@pytest.mark.parametrize("objective", ["rouge1_recall", "rouge1_f", "bleu4"])
def test_the_line_search_finds_the_best_point_of_the_line(objective):
    nbests = _random_nbests(objective=objective)
    w = np.zeros(5)
    for axis in range(5):
        d = np.eye(5)[axis]
        gamma, value = mert.line_search(nbests, w, d, objective)
        grid = np.linspace(-15, 15, 3001)
        assert value == pytest.approx(
            max(mert.evaluate(nbests, w + x * d, objective) for x in grid)
        )
        assert mert.evaluate(nbests, w + gamma * d, objective) == pytest.approx(value)


def test_hypotheses_scored_minus_infinity_neither_hang_nor_win_the_line_search():
    """A hypothesis the model scored -inf (a blocked word) gave NaN breakpoints, and the
    sweep never advanced past them: tune_features ran forever on the families' real-text
    page. Such lines are off the envelope; the search ends with the finite lines' best."""
    nbests = _random_nbests(seed=5)
    nbests[0].model[:2] = -np.inf  # two -inf lines in one input, one in another
    nbests[1].model[0] = -np.inf
    dead = mert.NBest(np.full(3, -np.inf), np.ones((3, 5)), nbests[2].stats[:3])
    nbests.append(dead)  # an input with no finite hypothesis at all
    lines, breaks = mert.upper_envelope(nbests[0].model, nbests[0].features[:, 0])
    assert 0 not in lines and 1 not in lines and all(math.isfinite(x) for x in breaks)
    assert mert.upper_envelope(dead.model, dead.features[:, 0]) == ([0], [])
    w = np.zeros(5)
    for axis in range(5):
        d = np.eye(5)[axis]
        gamma, value = mert.line_search(nbests, w, d, "rouge1_recall")  # (ends)
        grid = np.linspace(-15, 15, 601)
        best = max(mert.evaluate(nbests, w + x * d, "rouge1_recall") for x in grid)
        assert math.isfinite(gamma) and value == pytest.approx(best)
        assert mert.evaluate(nbests, w + gamma * d, "rouge1_recall") == pytest.approx(value)


def test_mert_keeps_the_bounded_weight_below_its_bound_and_improves():
    nbests = _random_nbests(seed=4)
    start = np.zeros(5)
    w, value = mert.optimise(nbests, start, "rouge1_recall", [0, 1, 2, 3], {3: 0.0},
                             random_starts=3)  # fmt: skip
    assert w[3] <= 0.0 and w[4] == 0.0
    assert value >= mert.evaluate(nbests, start, "rouge1_recall")
    assert value == pytest.approx(mert.evaluate(nbests, w, "rouge1_recall"))


def test_the_objectives_statistics():
    # ROUGE-1 recall of the first 10 bytes, pooled over two references.
    stats = mert.statistics("the cat sat on the mat".split(),
                            [["the", "cat", "ran", "far"], ["a", "dog", "sat"]],
                            "rouge1_recall", byte_limit=10)  # fmt: skip
    # "the cat sa" -> {the, cat, sa}; refs "the cat ra" {the cat ra}, "a dog sat" {a dog sat}
    assert list(stats) == [2, 6, 6]  # matches, reference words, hypothesis words x refs
    assert mert.corpus_score(stats, "rouge1_recall") == pytest.approx(2 / 6)
    # F1 pooled: 2 * 2 / (6 + 6); a hypothesis padded to the limit does not raise it.
    assert mert.corpus_score(stats, "rouge1_f") == pytest.approx(4 / 12)
    ref = [["the", "cat", "sat"]]
    short = mert.statistics(["the", "cat"], ref, "rouge1_f", byte_limit=0)
    padded = mert.statistics(["the", "cat", "sat"] + ["the"] * 27, ref, "rouge1_f", byte_limit=0)
    assert mert.corpus_score(short, "rouge1_f") == pytest.approx(2 * 2 / (2 + 3))
    assert mert.corpus_score(padded, "rouge1_f") == pytest.approx(2 * 3 / (30 + 3))
    assert mert.corpus_score(padded, "rouge1_recall") == 1.0  # (recall rewards it)
    same = "a b c d e f".split()
    assert mert.corpus_score(mert.statistics(same, [same], "bleu4"), "bleu4") == 1.0
    assert mert.corpus_score(mert.statistics(same[:3], [same], "bleu4"), "bleu4") == 0.0
    # Four of six words: every n-gram matches, the brevity penalty is exp(1 - 6/4).
    four = mert.statistics(same[:4], [same], "bleu4")
    assert mert.corpus_score(four, "bleu4") == pytest.approx(math.exp(1 - 6 / 4))


class _ScriptedTuner:
    """A Tuner whose decode of weights w scores DECODED[w["uni"]] (the search's own
    output) and whose MERT moves uni to the next value of PATH (its optimum on the
    n-best lists, which can decode worse)."""

    PATH = [1.0, 2.0, 3.0, 4.0, 5.0]
    DECODED = {0.0: 0.11, 1.0: 0.14, 2.0: 0.30, 3.0: 0.20, 4.0: 0.20, 5.0: 0.19}

    def __init__(self, trained, settings, config, weights):
        self.weights, self.decodes = weights, []

    def collect(self):
        self.decodes.append(self.weights["uni"])
        return 10

    def size(self):
        return 10 * len(self.decodes)

    def objective(self, weights):
        assert weights["uni"] == self.decodes[-1]  # scored after its own decode
        return self.DECODED[weights["uni"]]

    def optimise(self, weights):
        uni = self.PATH[self.PATH.index(weights["uni"]) + 1] if weights["uni"] else 1.0
        return {**weights, "uni": uni}, 0.31


@pytest.mark.parametrize("keep, uni, value", [("best_decoded", 2.0, 0.30), ("last", 5.0, 0.31)])
def test_mert_keeps_the_weights_whose_own_decode_scored_best(monkeypatch, keep, uni, value):
    """The real-text page's second ABS seed: MERT's last weights were optimal on the
    n-best lists (0.31) and decoded far worse; the weights of the round whose decode
    scored best are kept, the last round's weights decoded once more to be scored
    (`--mert_keep=last`: Z-MERT's last weights, unscored)."""
    from pointer_generator.decoding import feature_tuning as ft
    from pointer_generator.search.settings import SearchSettings

    monkeypatch.setattr(ft, "Tuner", _ScriptedTuner)
    config = ft.TuningConfig(data_path="unused", iterations=5, keep=keep)
    weights, got = ft.tune(None, SearchSettings(), config)
    assert weights["uni"] == uni and got == pytest.approx(value)


def test_tune_features_writes_weights_that_decode_reads(tmp_path, capfd):
    from pointer_generator.cli import entry
    from tests import helpers

    data = helpers.tiny_setup(tmp_path, n_train=8, n_val=4)
    flags = dict(model="abs", context_window=2, max_steps=3)
    assert helpers.run_main_in_process(helpers.run_args(data, "abs", **flags)) == 0
    out = tmp_path / "weights.txt"
    common = [f"--log_root={data.log_root}", "--exp_name=abs", f"--data_path={data.val_path}"]
    status = entry.run_subcommand(
        "tune_features",
        [*common, f"--weights_out={out}", "--beam_size=3", "--max_dec_steps=6",
         "--min_dec_steps=0", "--mert_iterations=2", "--random_starts=2", "--block_unk"],
    )  # fmt: skip
    assert status == 0, capfd.readouterr().err
    weights = ef.read_weights(str(out))
    assert weights["lm"] == 1.0 and weights["length"] == 0.0 and weights["ooo"] <= 0.0
    args = [*common, "--mode=decode", "--single_pass", "--beam_size=3", "--max_dec_steps=6",
            "--min_dec_steps=0", f"--feature_weights={out}"]  # fmt: skip
    assert helpers.run_main_in_process(args) == 0
    folders = [d for d in os.listdir(os.path.join(data.log_root, "abs")) if "_absplus-" in d]
    assert len(folders) == 1
    decoded = os.path.join(data.log_root, "abs", folders[0], "decoded")
    assert len(os.listdir(decoded)) == 4
    bad = tmp_path / "bad.txt"
    bad.write_text("uni x\n")
    assert helpers.run_main_in_process([*args[:-1], f"--feature_weights={bad}"]) == 2
    assert "bad.txt:1: 'x' is not a number" in capfd.readouterr().err


@pytest.mark.parametrize("value", ["1e39", "1e308", "-1e7", "nan", "inf"])
def test_feature_weights_that_overflow_float32_are_refused(tmp_path, value):
    from pointer_generator.search.extractive_features import read_weights

    path = tmp_path / "w.txt"
    path.write_text(f"uni {value}\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"w.txt:1: the weight .* is out of range"):
        read_weights(str(path))
    path.write_text("uni 1e6\nlm 1\n", encoding="utf-8")
    assert read_weights(str(path))["uni"] == 1e6
