"""Minimum error rate training (Och 2003) of ABS+'s feature weights over n-best lists
(Rush et al. 2015 §5; spec abs-ras.md §2.7).

A hypothesis h of input i has a model score m_h (its summed log-probability, weight
fixed at 1) and feature totals f_h (uni, bi, tri, ooo, length); with weights w the
search prefers argmax_h m_h + w·f_h. Along a line w + γd each hypothesis' score is the
line (m_h + w·f_h) + γ (d·f_h), so the chosen hypothesis of each input changes only at
the breakpoints of the upper envelope of its lines. `line_search` sweeps all inputs'
breakpoints in order, keeping the corpus statistics of the chosen hypotheses, and returns
the γ in the middle of the best interval: the exact optimum of the (piecewise constant)
objective along that line. `optimise` repeats it coordinate by coordinate from the
current point and from random ones, as Z-MERT does.

Objectives (corpus-level, from per-hypothesis sufficient statistics, `statistics`):
`rouge1_recall`: Σ clipped unigram matches / Σ reference unigrams over the first
`byte_limit` bytes (75: DUC's limit, the papers' evaluation; no stemming, unlike
ROUGE-1.5.5's -m), pooled over references; `rouge1_f`: the pooled F1 of the same counts,
2 Σ matches / (Σ hypothesis unigrams + Σ reference unigrams), which a hypothesis run to
the length limit does not raise (recall over whole summaries would; set `byte_limit` 0 to
score whole summaries, as a full-length ROUGE F does); `bleu4`: corpus BLEU-4 with the closest
reference length (what NAMAS's Z-MERT set-up optimises).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

OBJECTIVES = ("rouge1_recall", "rouge1_f", "bleu4")


# ------------------------------------------------------------------ statistics
def _truncate(words: list[str], byte_limit: int) -> list[str]:
    """The words within the first `byte_limit` bytes of the space-joined text (a word
    cut by the limit is kept in part, as ROUGE's -b does); 0 = no limit."""
    if not byte_limit:
        return words
    text = " ".join(words).encode("utf-8")[:byte_limit].decode("utf-8", errors="ignore")
    return text.split()


def _ngrams(words: list[str], n: int) -> Counter:
    return Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))


def statistics(
    hypothesis: list[str], references: list[list[str]], objective: str, byte_limit: int = 75
) -> np.ndarray:
    """The additive statistics of one hypothesis (words, lower-cased by the caller)."""
    if objective in ("rouge1_recall", "rouge1_f"):
        hyp = Counter(_truncate(hypothesis, byte_limit))
        matched = total = 0
        for ref in references:
            ref = Counter(_truncate(ref, byte_limit))
            matched += sum(min(c, hyp[w]) for w, c in ref.items())
            total += sum(ref.values())
        # (the hypothesis' unigrams once per reference, as the matches are pooled)
        return np.array([matched, total, sum(hyp.values()) * len(references)], np.float64)
    if objective == "bleu4":
        out = []
        for n in range(1, 5):
            hyp = _ngrams(hypothesis, n)
            best = Counter()
            for ref in references:
                best |= _ngrams(ref, n)
            out += [sum(min(c, best[g]) for g, c in hyp.items()), sum(hyp.values())]
        closest = min((abs(len(r) - len(hypothesis)), len(r)) for r in references)[1]
        return np.array([*out, len(hypothesis), closest], np.float64)
    raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")


def corpus_score(totals: np.ndarray, objective: str) -> float:
    """The objective of summed statistics (higher is better)."""
    if objective == "rouge1_recall":
        return float(totals[0] / totals[1]) if totals[1] else 0.0
    if objective == "rouge1_f":
        return float(2 * totals[0] / (totals[1] + totals[2])) if totals[1] + totals[2] else 0.0
    logs = []
    for n in range(4):
        matched, count = totals[2 * n], totals[2 * n + 1]
        if matched <= 0 or count <= 0:
            return 0.0
        logs.append(math.log(matched / count))
    hyp_len, ref_len = totals[8], totals[9]
    brevity = 1.0 if hyp_len > ref_len else math.exp(1 - ref_len / max(hyp_len, 1e-9))
    return brevity * math.exp(sum(logs) / 4)


# ------------------------------------------------------------------ n-best lists
@dataclass
class NBest:
    """The hypotheses of one input: model scores [H], features [H, F], stats [H, S]."""

    model: np.ndarray
    features: np.ndarray
    stats: np.ndarray


def chosen(nbests: list[NBest], weights: np.ndarray) -> list[int]:
    """Each input's best hypothesis under `weights` (first index on ties)."""
    return [int(np.argmax(nb.model + nb.features @ weights)) for nb in nbests]


def evaluate(nbests: list[NBest], weights: np.ndarray, objective: str) -> float:
    picks = chosen(nbests, weights)
    return corpus_score(sum(nb.stats[h] for nb, h in zip(nbests, picks, strict=True)), objective)


def upper_envelope(intercepts: np.ndarray, slopes: np.ndarray) -> tuple[list[int], list[float]]:
    """The lines on the upper envelope of y = a + b γ, left to right, and the γ where
    each next one takes over: (lines [L], breakpoints [L - 1]).

    A line with a non-finite intercept or slope (a hypothesis the model scored -inf, as
    one holding a blocked word) is never on the envelope of finite ones: it is left out,
    as its -inf - -inf breakpoints would be NaN (before, a NaN breakpoint stopped the line
    search's sweep from advancing: tune_features ran forever). With no finite line the
    first hypothesis stands for the input, with no breakpoint."""
    finite = [h for h in range(len(slopes)) if math.isfinite(intercepts[h] + slopes[h])]
    if not finite:
        return [0], []
    order = sorted(finite, key=lambda h: (slopes[h], intercepts[h]))
    lines: list[int] = []
    starts: list[float] = []  # where each envelope line starts being the maximum
    for h in order:
        if lines and slopes[lines[-1]] == slopes[h]:
            lines.pop()  # same slope: the later one (higher intercept, or a tie) wins
            starts.pop()
        while lines:
            top = lines[-1]
            x = (intercepts[top] - intercepts[h]) / (slopes[h] - slopes[top])
            if x <= starts[-1]:
                lines.pop()
                starts.pop()
            else:
                break
        starts.append(-math.inf if not lines else x)
        lines.append(h)
    return lines, starts[1:]


def line_search(
    nbests: list[NBest],
    weights: np.ndarray,
    direction: np.ndarray,
    objective: str,
    bounds: tuple[float, float] = (-math.inf, math.inf),
) -> tuple[float, float]:
    """(γ, objective at w + γ d): the middle of the best interval within `bounds`."""
    events = []  # (γ, input, old line, new line)
    current = []
    for i, nb in enumerate(nbests):
        lines, breaks = upper_envelope(nb.model + nb.features @ weights, nb.features @ direction)
        current.append(lines[0])
        events += [(x, i, lines[j], lines[j + 1]) for j, x in enumerate(breaks)]
    events.sort(key=lambda e: e[0])
    totals = sum(nb.stats[h] for nb, h in zip(nbests, current, strict=True))
    lo_bound, hi_bound = bounds
    best = (-math.inf, 0.0)
    left = -math.inf
    k = 0
    while True:
        right = events[k][0] if k < len(events) else math.inf
        lo, hi = max(left, lo_bound), min(right, hi_bound)
        if lo <= hi:
            gamma = _inside(lo, hi)
            value = corpus_score(totals, objective)
            # Prefer the smaller move on ties: the objective is flat there.
            if value > best[0] + 1e-12 or (
                abs(value - best[0]) <= 1e-12 and abs(gamma) < abs(best[1])
            ):
                best = (value, gamma)
        if k >= len(events):
            break
        # Apply every event at this breakpoint.
        x = events[k][0]
        while k < len(events) and events[k][0] == x:
            _, i, old, new = events[k]
            totals = totals - nbests[i].stats[old] + nbests[i].stats[new]
            k += 1
        left = x
    return best[1], best[0]


def _inside(lo: float, hi: float) -> float:
    """A point of the interval [lo, hi]: its middle, or 1 past a finite end; 0 if all."""
    if math.isinf(lo) and math.isinf(hi):
        return 0.0
    if math.isinf(lo):
        return min(hi - 1.0, 0.0) if hi > 0 else hi - 1.0
    if math.isinf(hi):
        return max(lo + 1.0, 0.0) if lo < 0 else lo + 1.0
    return (lo + hi) / 2


def optimise(
    nbests: list[NBest],
    start: np.ndarray,
    objective: str,
    free: list[int],
    upper: dict | None = None,
    random_starts: int = 5,
    seed: int = 12341234,
    rounds: int = 10,
) -> tuple[np.ndarray, float]:
    """Coordinate-wise MERT over the `free` feature indices from `start` and from
    `random_starts` random points; `upper` = {index: largest value} (NAMAS constrains
    ooo to <= 0). Returns the best weights and their objective."""
    rng = np.random.default_rng(seed)
    upper = upper or {}
    starts = [np.array(start, np.float64)]
    for _ in range(random_starts):
        w = np.array(start, np.float64)
        w[free] = rng.uniform(-5, 5, len(free))
        for i, top in upper.items():
            w[i] = min(w[i], top)
        starts.append(w)
    best_w, best_value = starts[0], evaluate(nbests, starts[0], objective)
    for w in starts:
        value = evaluate(nbests, w, objective)
        for _ in range(rounds):
            improved = False
            for i in free:
                d = np.zeros_like(w)
                d[i] = 1.0
                high = upper.get(i, math.inf) - w[i]
                gamma, v = line_search(nbests, w, d, objective, (-math.inf, high))
                if v > value + 1e-12:
                    w = w + gamma * d
                    value, improved = v, True
            if not improved:
                break
        if value > best_value + 1e-12:
            best_w, best_value = w, value
    return best_w, best_value
