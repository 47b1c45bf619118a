"""Bootstrap intervals and paired comparisons of per-example scores, and two text measures.

For comparing summarization systems on the same test pairs, from per-example scores such
as ROUGE-1.5.5's own per-document F (`rouge_eval(..., per_document=True)`):

* `bootstrap_interval(a)`: one system's mean with a percentile bootstrap interval.
* `paired_bootstrap(a, b)`: the mean difference a - b over the same examples, its
  percentile bootstrap interval, and the share of resamples in which a's mean is above
  b's. Both systems are resampled with the *same* example indices (the pairing), so the
  example-to-example variation they share cancels out of the difference.
* `holds(result)`: +1 or -1 when the interval lies wholly above or below zero (the sign
  of the difference that holds at that level), 0 when it contains zero.

Resampling: `indices = numpy.random.default_rng(seed).integers(0, n, size=(samples, n))`,
one row a resample of n examples drawn with replacement; a resample's statistic is the
mean of the scores (or of the differences) at its row's indices. The interval is the
`(1 - level) / 2` and `(1 + level) / 2` percentiles of the `samples` resample means
(`numpy.percentile`, linear interpolation). `mean` / `diff` is the plain mean over all
examples, not the mean of the resample means. The same seed gives the same indices for
the same n, so intervals of several systems scored with one seed use the same resamples.
Memory: samples x n indices (8 bytes each: 24 MB for 1000 x 3,000).

Text measures of a set of summaries:

* `distinct_share(summaries)`: distinct summaries / all summaries, summaries compared
  after whitespace normalisation (tokens split on whitespace, joined by one space).
* `repeated_trigram_share(tokens)`: of one summary's trigram occurrences (over its whole
  token sequence, across sentence boundaries), the share that repeat a trigram occurring
  earlier in the same summary; None for fewer than 3 tokens. This is the definition of
  the paper's duplicate n-grams in `experiments/analysis.py` (`duplicate_ngrams(tokens,
  3)`: duplicates / occurrences; `a b c a b c a` has trigrams abc bca cab abc bca: 2 of 5
  repeat = 0.4), which the library may not import (tests/test_architecture.py); the
  tests check that both agree. Occurrences repeating an earlier one = occurrences -
  distinct trigrams.
* `repeated_trigram_stats(summaries)`: over the summaries with at least one trigram, the
  mean of their `repeated_trigram_share` (a macro average: every summary weighs the same,
  unlike analysis.py's micro-averaged %) and the share of them with any repeated trigram.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class Interval:
    """One system's mean over `n` examples with its percentile bootstrap interval."""

    mean: float
    low: float
    high: float
    level: float
    samples: int
    n: int

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class PairedResult:
    """Mean difference a - b over `n` paired examples, its percentile bootstrap interval
    and the share of resamples whose mean difference is > 0 (a above b; ties count as not
    above)."""

    diff: float
    low: float
    high: float
    a_better_share: float
    level: float
    samples: int
    n: int

    def as_dict(self) -> dict:
        return asdict(self)


def _scores(x, name: str) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array of scores, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} holds a NaN or infinite score")
    return a


def _check(samples: int, level: float) -> None:
    if int(samples) != samples or samples < 1:
        raise ValueError(f"samples must be a positive integer, got {samples!r}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")


def _resample_means(x: np.ndarray, samples: int, seed: int) -> np.ndarray:
    """The mean of `x` at each row of the module doc's resampling indices."""
    idx = np.random.default_rng(seed).integers(0, x.size, size=(int(samples), x.size))
    return x[idx].mean(axis=1)


def _percentiles(means: np.ndarray, level: float) -> tuple[float, float]:
    low, high = np.percentile(means, [50.0 * (1.0 - level), 50.0 * (1.0 + level)])
    return float(low), float(high)


def bootstrap_interval(a, samples: int = 1000, seed: int = 0, level: float = 0.95) -> Interval:
    """Mean of the per-example scores `a` with its percentile bootstrap interval."""
    _check(samples, level)
    x = _scores(a, "a")
    low, high = _percentiles(_resample_means(x, samples, seed), level)
    return Interval(float(x.mean()), low, high, float(level), int(samples), int(x.size))


def paired_bootstrap(a, b, samples: int = 1000, seed: int = 0, level: float = 0.95) -> PairedResult:
    """Paired bootstrap of a - b: `a[k]` and `b[k]` are two systems' scores of example k."""
    _check(samples, level)
    x, y = _scores(a, "a"), _scores(b, "b")
    if x.shape != y.shape:
        raise ValueError(f"a and b must score the same examples: {x.size} vs {y.size} scores")
    d = x - y
    means = _resample_means(d, samples, seed)
    low, high = _percentiles(means, level)
    return PairedResult(
        float(d.mean()),
        low,
        high,
        float(np.mean(means > 0)),
        float(level),
        int(samples),
        int(d.size),
    )


def holds(result: Interval | PairedResult) -> int:
    """+1 if the interval lies wholly above 0, -1 if wholly below, 0 if it contains 0."""
    if result.low > 0:
        return 1
    if result.high < 0:
        return -1
    return 0


# ---------------------------------------------------------------------------------------
# Text measures


def distinct_share(summaries: Sequence[str]) -> float | None:
    """Distinct summaries / all summaries (whitespace-normalised); None for none."""
    if not summaries:
        return None
    return len({" ".join(s.split()) for s in summaries}) / len(summaries)


def repeated_trigram_share(tokens: Sequence[str]) -> float | None:
    """Share of the summary's trigram occurrences that repeat an earlier trigram of the
    same summary (module doc); None if it has no trigram."""
    grams = [tuple(tokens[i : i + 3]) for i in range(len(tokens) - 2)]
    if not grams:
        return None
    return (len(grams) - len(set(grams))) / len(grams)


def repeated_trigram_stats(summaries: Iterable[Sequence[str]]) -> dict:
    """Aggregate of `repeated_trigram_share` over token lists `summaries`:
    {"summaries": all, "with_trigrams": those with >= 1 trigram, "mean_share": the mean
    of their shares, "any_repeat_share": the share of them with a share > 0}; the last
    two are None when no summary has a trigram."""
    shares, total = [], 0
    for tokens in summaries:
        total += 1
        s = repeated_trigram_share(tokens)
        if s is not None:
            shares.append(s)
    return {
        "summaries": total,
        "with_trigrams": len(shares),
        "mean_share": float(np.mean(shares)) if shares else None,
        "any_repeat_share": float(np.mean([s > 0 for s in shares])) if shares else None,
    }
