"""Bootstrap intervals, paired comparisons and the text measures of evaluation/significance.py.

The bootstrap is checked against a loop written here from the documented definition (same
seed, same resampling indices, percentiles interpolated by hand) and against statistical
properties: identical systems, a constant shift, and the normal approximation of a mean.
"""

import math
import random

import numpy as np
import pytest

from experiments.analysis import duplicate_ngrams
from pointer_generator.evaluation.significance import (
    Interval,
    PairedResult,
    bootstrap_interval,
    distinct_share,
    holds,
    paired_bootstrap,
    repeated_trigram_share,
    repeated_trigram_stats,
)


def _by_hand(values, samples, seed, level):
    """The module doc's definition, with loops: resample means, then linearly
    interpolated percentiles of the sorted means."""
    n = len(values)
    idx = np.random.default_rng(seed).integers(0, n, size=(samples, n))
    means = sorted(sum(values[j] for j in row) / n for row in idx.tolist())

    def pct(q):
        pos = q / 100 * (samples - 1)
        lo = math.floor(pos)
        hi = min(lo + 1, samples - 1)
        return means[lo] + (means[hi] - means[lo]) * (pos - lo)

    return pct(50 * (1 - level)), pct(50 * (1 + level)), means


def test_interval_matches_the_definition_computed_by_hand():
    rng = np.random.default_rng(7)
    a = rng.uniform(0, 1, size=37).tolist()
    res = bootstrap_interval(a, samples=300, seed=11, level=0.9)
    low, high, _ = _by_hand(a, 300, 11, 0.9)
    assert isinstance(res, Interval)
    assert res.low == pytest.approx(low, abs=1e-12)
    assert res.high == pytest.approx(high, abs=1e-12)
    assert res.mean == pytest.approx(sum(a) / len(a), abs=1e-12)
    assert (res.level, res.samples, res.n) == (0.9, 300, 37)


def test_paired_matches_the_definition_computed_by_hand():
    rng = np.random.default_rng(3)
    a = rng.uniform(0, 1, size=25)
    b = np.clip(a + rng.normal(-0.05, 0.1, size=25), 0, 1)
    res = paired_bootstrap(a, b, samples=400, seed=5)
    d = (a - b).tolist()
    low, high, means = _by_hand(d, 400, 5, 0.95)
    assert isinstance(res, PairedResult)
    assert res.diff == pytest.approx(sum(d) / len(d), abs=1e-12)
    assert res.low == pytest.approx(low, abs=1e-12)
    assert res.high == pytest.approx(high, abs=1e-12)
    assert res.a_better_share == sum(m > 0 for m in means) / 400
    assert res.n == 25


def test_identical_systems_differ_by_zero():
    a = np.random.default_rng(0).uniform(size=200)
    res = paired_bootstrap(a, a.copy())
    assert (res.diff, res.low, res.high, res.a_better_share) == (0.0, 0.0, 0.0, 0.0)
    assert res.low <= 0 <= res.high
    assert holds(res) == 0


def test_a_constant_shift_gives_exactly_that_difference():
    # Quarters are exact in binary, so a - b is exactly -c for every example.
    a = np.random.default_rng(1).integers(0, 40, size=300) / 4
    c = 0.5
    res = paired_bootstrap(a, a + c, samples=500, seed=2)
    assert (res.diff, res.low, res.high) == (-c, -c, -c)
    assert res.a_better_share == 0.0
    assert holds(res) == -1
    up = paired_bootstrap(a + c, a, samples=500, seed=2)
    assert (up.diff, up.low, up.high, up.a_better_share) == (c, c, c, 1.0)
    assert holds(up) == 1


def test_interval_of_a_normal_sample_is_mean_pm_1_96_se():
    x = np.random.default_rng(123).normal(0.3, 1.0, size=2000)
    res = bootstrap_interval(x, samples=4000, seed=0)
    se = x.std(ddof=1) / math.sqrt(x.size)  # about 0.022
    # Monte-Carlo error of a 2.5 % percentile of 4000 resamples is about 0.001 here.
    assert res.mean == pytest.approx(x.mean(), abs=1e-12)
    assert res.low == pytest.approx(x.mean() - 1.96 * se, abs=0.004)
    assert res.high == pytest.approx(x.mean() + 1.96 * se, abs=0.004)
    assert holds(res) == 1


def test_pairing_removes_the_shared_variation():
    rng = np.random.default_rng(9)
    base = rng.uniform(0, 1, size=1000)  # example difficulty, shared by both systems
    a = base + 0.01 + rng.normal(0, 0.02, size=1000)
    b = base.copy()
    paired = paired_bootstrap(a, b)
    d = a - b
    se = d.std(ddof=1) / math.sqrt(d.size)
    assert paired.low == pytest.approx(d.mean() - 1.96 * se, abs=0.0005)
    assert paired.high == pytest.approx(d.mean() + 1.96 * se, abs=0.0005)
    assert holds(paired) == 1 and paired.a_better_share == 1.0
    # Unpaired, the two systems' intervals overlap: the difference would not show.
    ia, ib = bootstrap_interval(a), bootstrap_interval(b)
    assert ia.low < ib.high


def test_same_seed_same_resamples():
    a = np.random.default_rng(4).uniform(size=50)
    one = bootstrap_interval(a, seed=3)
    diff = paired_bootstrap(a, np.zeros(50), seed=3)
    assert (one.low, one.high) == (diff.low, diff.high)
    assert bootstrap_interval(a, seed=3) == one
    assert bootstrap_interval(a, seed=4) != one
    assert set(one.as_dict()) == {"mean", "low", "high", "level", "samples", "n"}


@pytest.mark.parametrize(
    "call",
    [
        lambda: paired_bootstrap([1.0, 2.0], [1.0]),
        lambda: paired_bootstrap([], []),
        lambda: bootstrap_interval([[1.0, 2.0]]),
        lambda: bootstrap_interval([1.0, float("nan")]),
        lambda: bootstrap_interval([1.0], level=1.0),
        lambda: bootstrap_interval([1.0], samples=0),
    ],
)
def test_bad_input_is_refused(call):
    with pytest.raises(ValueError):
        call()


# ------------------------------------------------------------------ text measures
def test_distinct_share():
    assert distinct_share(["a b", "a  b\n", "c", "c", "d"]) == 3 / 5
    assert distinct_share(["x"]) == 1.0
    assert distinct_share([]) is None


def test_repeated_trigram_share_hand_cases():
    assert repeated_trigram_share("a b c a b c a".split()) == 2 / 5  # abc bca cab abc bca
    assert repeated_trigram_share("a b c d".split()) == 0.0
    assert repeated_trigram_share("x x x x".split()) == 1 / 2  # xxx xxx
    assert repeated_trigram_share("a b".split()) is None
    assert repeated_trigram_share([]) is None


def test_repeated_trigram_share_is_analysis_duplicate_3grams():
    rng = random.Random(0)
    for _ in range(300):
        tokens = [rng.choice("abc") for _ in range(rng.randint(0, 14))]
        dup, total = duplicate_ngrams(tokens, 3)
        got = repeated_trigram_share(tokens)
        assert got == (dup / total if total else None), tokens


def test_repeated_trigram_stats():
    summaries = [
        "a b c a b c a".split(),  # 0.4
        "a b c d".split(),  # 0.0
        "x x x x".split(),  # 0.5
        "too short".split(),  # no trigram: left out of both shares
    ]
    assert repeated_trigram_stats(summaries) == {
        "summaries": 4,
        "with_trigrams": 3,
        "mean_share": pytest.approx(0.3),
        "any_repeat_share": pytest.approx(2 / 3),
    }
    assert repeated_trigram_stats([["a"], []]) == {
        "summaries": 2,
        "with_trigrams": 0,
        "mean_share": None,
        "any_repeat_share": None,
    }
