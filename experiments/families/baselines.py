"""Input-blind baselines of the families' real-text task (issue 44): what a model scores
without reading its input, measured the way the models are measured.

    python -m experiments.families.baselines --data_dir pairs --out_dir OUT [--overwrite]

`--data_dir` is what `python -m data_tools.highlight_pairs` writes (`sumdata/` text files,
`finished/vocab`). Three baselines:

1. **N-gram language models of the training titles** (`OUT/ngram.json`): an interpolated
   trigram and, for comparison, bigram model, with their perplexity on the validation and
   test titles (and of any `--also_score NAME=FILE.bin`'s abstracts: the real-text page
   scores its training sample, titles the model was counted on, beside the runs').
2. **The best fixed summary** (`OUT/fixed.json`, `OUT/fixed/`): one string, the same for
   every input, chosen on the validation titles.
3. **Lead-k** (`OUT/lead.json`, `OUT/lead/`): the first k tokens of the source, k chosen on
   validation. (PREFIX, the first 75 characters, is `experiments.prefix`.)

`OUT/fixed/` and `OUT/lead/` are decode folders (`reference/NNNNNN_reference.txt`,
`decoded/NNNNNN_decoded.txt`, written with the decoder's own `folder.write_for_rouge`) of
the test set, so ROUGE-1.5.5 scores them as it scores a model's decode folder
(`python -m pointer_generator.cli.score_rouge`).

**Tokens the perplexity counts: those the models' validation perplexity counts.** The
models' perplexity (`training/epochs.py` `after_step`, `evaluation/evaluate.py`
`dataset_sums`, `perplexity`) is exp(sum of the target NLL / the tokens of
`dec_padding_mask`). The input pipeline (`data/example_ops.py` `build_examples`) makes
the targets from the `.bin` abstract `<s> title </s>` (`data_tools.sumdata`, which turns
the release's `UNK`/`<unk>` into `[UNK]`): the `<s>`/`</s>` tags are stripped, the words
split on ASCII whitespace and looked up in the vocabulary (`Vocab`: the first
`vocab_size` entries of `finished/vocab`; any other word is `[UNK]`), then
`decoder_sequences` appends one `[STOP]` and cuts the target to `max_dec_steps`; the mask
covers min(words + 1, max_dec_steps) positions. No start token is predicted. So here each
title's tokens (the `.txt` title lines, already lower-cased and without the punctuation
NAMAS drops) are mapped to the vocabulary's words, every other word to one `[UNK]` class,
one `</s>` (the `[STOP]`) is appended and the sequence is cut to `max_dec_steps` (default
50, the families' flag files; no title of the highlight-pairs task is that long), and
every one of those tokens is predicted and counted, in the training counts as in the
scored sets. The event space is the vocabulary's words + `[UNK]` + `</s>`; the models'
softmax also holds `[PAD]` and `[START]`, which are never targets. The match is exact for
the ABS and RAS families and for the pointer-generator without its pointer; the
pointer-generator's targets give a rare word that its source holds its own copy id, so its
perplexity scores such a word as itself, not as `[UNK]`: not the same events.

**The n-gram model** (Jelinek-Mercer): P(w | u v) = l3 f(w | u v) + l2 f(w | v) +
l1 f(w) + l0 / N, f the relative frequencies in the training titles (each title starts
with two history-only `<s>`), N the event space. Where a history was never seen its
order's term is undefined: the weights of the orders that are defined are renormalised
(divided by their sum), so the probabilities always sum to 1. The weights are chosen by
**grid search** (step 0.05 over the simplex, then step 0.01 within 0.05 of the best,
the uniform's weight never 0) to minimise the perplexity of a held-out tenth of the
TRAINING titles (every tenth block of 50 consecutive titles, so that one story's
highlights, which are consecutive lines, seldom fall on both sides) under counts from the
other nine tenths; the model is then counted on all the training titles with those
weights. The bigram is the same with (l2, l1, l0).

**ROUGE-1 in Python** (for the choices on validation): ROUGE-1.5.5's tokens (every
character other than A-Z, a-z, 0-9 and `-` becomes a space, then lower-case), clipped
unigram counts, F1 = 2 * overlap / (candidate tokens + reference tokens) per example,
averaged over the examples (ROUGE-1.5.5's `-a` average of per-example F). ROUGE-1.5.5's
Porter stemming (`-m`) is not applied during the search, and nothing is cut to a length
(`-b 75`, the DUC style, would cut a fixed summary longer than 75 bytes).

**The fixed summary**: greedy. Starting from the empty string, add the word (one of the
`--candidates` most frequent ROUGE tokens of the training titles, a word may repeat) that
most increases the mean ROUGE-1 F1 over the validation references; stop when no word
increases it. **Lead-k**: k from 1 to `--max_k`, the one with the highest mean ROUGE-1 F1
on validation (the smallest of equals); a source shorter than k is taken whole.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import re
import sys
from collections import Counter
from dataclasses import dataclass

import numpy as np

from data_tools.sentence_dataset import LAYOUT
from data_tools.sumdata import normalize
from experiments.lead3 import prepare_out_dir
from pointer_generator import exit_codes
from pointer_generator.cli import arg_types
from pointer_generator.data.text_files import read_lines
from pointer_generator.data.vocab import SPECIAL_TOKENS, UNK_TOKEN, Vocab, ascii_split
from pointer_generator.decoding import folder
from pointer_generator.errors import DataError
from pointer_generator.runtime import owned_files

END = "</s>"  # the models' [STOP]
MAX_DEC_STEPS = 50  # the families' flag files (experiments/families/*.flags)
VOCAB_SIZE = 0  # every word of the file, as the real-text runs read it (--vocab_size=0)
GRID_STEP, FINE_STEP = 0.05, 0.01
HELD_OUT_BLOCK, HELD_OUT_EVERY = 50, 10
CANDIDATES = 300
MAX_K = 100
HOW_CHOSEN = (
    "grid search: step 0.05 over the simplex of weights, then step 0.01 within 0.05 of "
    "the best, the uniform's weight > 0; minimising the perplexity of the held-out tenth "
    "of the training titles (every tenth block of 50 consecutive titles) under counts "
    "from the other nine tenths; the model is then counted on all the training titles"
)


# -- tokens the models are scored on ---------------------------------------------------


class Events:
    """The event space: the vocabulary's words, [UNK], </s> (ids 0 .. size-1)."""

    def __init__(self, vocab: Vocab, max_dec_steps: int = MAX_DEC_STEPS):
        words = vocab.words[len(SPECIAL_TOKENS) :]
        self.words = [*words, UNK_TOKEN, END]
        self.index = {w: i for i, w in enumerate(words)}
        self.unk, self.end = len(words), len(words) + 1
        self.size = len(self.words)
        self.max_dec_steps = max_dec_steps

    def title(self, line: str) -> np.ndarray:
        """A title line's target ids: its words (the release's rare-word markers and any
        word outside the vocabulary as [UNK]), then </s>, cut to max_dec_steps."""
        ids = [self.index.get(w, self.unk) for w in ascii_split(normalize(line))]
        return np.array([*ids, self.end][: self.max_dec_steps], dtype=np.int64)


# -- the interpolated n-gram model -------------------------------------------------------


def _lookup(keys: np.ndarray, counts: np.ndarray, query: np.ndarray) -> np.ndarray:
    """counts[keys == q] for each q of `query` (0 where absent); `keys` sorted."""
    if not len(keys):
        return np.zeros(len(query))
    at = np.minimum(np.searchsorted(keys, query), len(keys) - 1)
    return np.where(keys[at] == query, counts[at], 0).astype(np.float64)


def _counted(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.unique(keys, return_counts=True)


class NgramModel:
    """Counts of an order-`order` model over `events` ids; `components` gives each
    token's relative frequencies, highest order first, then the uniform."""

    def __init__(self, sequences: list[np.ndarray], order: int, events: int):
        if order < 1:
            raise ValueError(f"order must be >= 1, got {order}")
        self.order, self.events = order, events
        self.base = events + 1  # id `events` is the history-only <s>
        grams = self.grams(sequences)
        if not len(grams):
            raise DataError("no training title to count")
        self.tokens = len(grams)
        # n-gram counts and history counts for n = 2 .. order; the unigram below.
        self.ngrams, self.histories = {}, {}
        for n in range(2, order + 1):
            self.ngrams[n] = _counted(self._key(grams[:, order - n :]))
            self.histories[n] = _counted(self._key(grams[:, order - n : order - 1]))
        self.unigram = np.bincount(grams[:, -1], minlength=events).astype(np.float64)

    def grams(self, sequences: list[np.ndarray]) -> np.ndarray:
        """[tokens, order] int64: each predicted token's history (padded with <s>) and it."""
        pad = np.full(self.order - 1, self.events, dtype=np.int64)
        rows = []
        for seq in sequences:
            padded = np.concatenate([pad, seq])
            idx = np.arange(len(seq))[:, None] + np.arange(self.order)[None, :]
            rows.append(padded[idx])
        return np.concatenate(rows) if rows else np.zeros((0, self.order), np.int64)

    def _key(self, columns: np.ndarray) -> np.ndarray:
        key = np.zeros(len(columns), dtype=np.int64)
        for j in range(columns.shape[1]):
            key = key * self.base + columns[:, j]
        return key

    def components(self, grams: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(P, D), both [tokens, order + 1]: column j is order `order - j`'s relative
        frequency of the token given its history (the last column: the uniform 1/N), and
        D says where it is defined (its history was seen)."""
        cols, defined = [], []
        for n in range(self.order, 1, -1):
            keys, counts = self.ngrams[n]
            hkeys, hcounts = self.histories[n]
            num = _lookup(keys, counts, self._key(grams[:, self.order - n :]))
            den = _lookup(hkeys, hcounts, self._key(grams[:, self.order - n : self.order - 1]))
            cols.append(np.divide(num, den, out=np.zeros_like(num), where=den > 0))
            defined.append(den > 0)
        cols.append(self.unigram[grams[:, -1]] / self.tokens)
        cols.append(np.full(len(grams), 1.0 / self.events))
        defined += [np.ones(len(grams), bool)] * 2
        return np.stack(cols, axis=1), np.stack(defined, axis=1).astype(np.float64)

    def distribution(self, history: list[int], weights) -> np.ndarray:
        """P(w | history) for every event w (`history`: the last order-1 ids, oldest
        first, `self.events` for <s>)."""
        words = np.arange(self.events, dtype=np.int64)
        hist = np.broadcast_to(np.array(history, np.int64), (self.events, self.order - 1))
        probs, _ = token_probs(self, np.concatenate([hist, words[:, None]], axis=1), weights)
        return probs


def token_probs(model: NgramModel, grams: np.ndarray, weights) -> tuple[np.ndarray, np.ndarray]:
    """(P(token | history) for each row of `grams`, the components' D)."""
    p, d = model.components(grams)
    w = np.asarray(weights, dtype=np.float64)
    return (p @ w) / (d @ w), d


def log_likelihoods(p: np.ndarray, d: np.ndarray, grid: np.ndarray, chunk: int = 256):
    """Summed log-probability of the tokens under each weight vector (row) of `grid`."""
    out = []
    with np.errstate(divide="ignore"):
        for start in range(0, len(grid), chunk):
            g = grid[start : start + chunk].T
            out.append(np.log((p @ g) / (d @ g)).sum(axis=0))
    return np.concatenate(out)


def simplex(k: int, steps: int) -> np.ndarray:
    """Every weight vector of length k whose entries are multiples of 1/steps summing
    to 1, with the last (the uniform's) > 0."""
    rows = []
    for bars in itertools.combinations(range(steps + k - 1), k - 1):
        edges = (-1, *bars, steps + k - 1)
        parts = [edges[i + 1] - edges[i] - 1 for i in range(k)]
        if parts[-1] > 0:
            rows.append(parts)
    return np.array(rows, dtype=np.float64) / steps


def around(best: np.ndarray, radius: float, step: float) -> np.ndarray:
    """Weight vectors on the `step` grid within `radius` of `best` in every entry."""
    r = int(round(radius / step))
    base = np.round(best / step).astype(int)
    total = int(round(1 / step))
    rows = []
    for offsets in itertools.product(range(-r, r + 1), repeat=len(best) - 1):
        head = base[:-1] + np.array(offsets)
        last = total - head.sum()
        if (head >= 0).all() and last > 0 and abs(last - base[-1]) <= r:
            rows.append([*head, last])
    return np.array(rows, dtype=np.float64) / total


def choose_weights(model: NgramModel, held_out: list[np.ndarray]) -> np.ndarray:
    """The grid weights (highest order first, the uniform last) that maximise the
    held-out likelihood (module doc)."""
    p, d = model.components(model.grams(held_out))
    coarse = simplex(model.order + 1, int(round(1 / GRID_STEP)))
    best = coarse[int(np.argmax(log_likelihoods(p, d, coarse)))]
    fine = around(best, GRID_STEP, FINE_STEP)
    return fine[int(np.argmax(log_likelihoods(p, d, fine)))]


def perplexity(model: NgramModel, sequences: list[np.ndarray], weights) -> tuple[float, int]:
    """(exp(mean NLL per token), tokens) of `sequences`."""
    grams = model.grams(sequences)
    probs, _ = token_probs(model, grams, weights)
    return math.exp(-np.log(probs).mean()), len(grams)


def held_out_split(items: list) -> tuple[list, list]:
    """(the nine tenths, the held-out tenth): item i is held out when its block of
    HELD_OUT_BLOCK consecutive items is every HELD_OUT_EVERY-th one; with fewer than
    HELD_OUT_EVERY blocks, every HELD_OUT_EVERY-th item."""
    block = HELD_OUT_BLOCK if len(items) >= HELD_OUT_BLOCK * HELD_OUT_EVERY else 1
    out = [(i // block) % HELD_OUT_EVERY == HELD_OUT_EVERY - 1 for i in range(len(items))]
    keep = [x for x, o in zip(items, out, strict=True) if not o]
    held = [x for x, o in zip(items, out, strict=True) if o]
    if not keep or not held:
        raise DataError(f"{len(items)} training titles: too few to hold a tenth out")
    return keep, held


@dataclass
class FittedNgram:
    model: NgramModel
    weights: np.ndarray
    held_out_perplexity: float


def fit_ngram(train: list[np.ndarray], order: int, events: int) -> FittedNgram:
    """Weights chosen on the held-out tenth, then the model counted on all of `train`."""
    keep, held = held_out_split(train)
    partial = NgramModel(keep, order, events)
    weights = choose_weights(partial, held)
    held_ppl, _ = perplexity(partial, held, weights)
    return FittedNgram(NgramModel(train, order, events), weights, held_ppl)


# -- ROUGE-1 in Python -------------------------------------------------------------------

_NOT_ROUGE = re.compile(r"[^A-Za-z0-9\-]")


def rouge_tokens(text: str) -> list[str]:
    """ROUGE-1.5.5's tokens of `text` (no stemming)."""
    return _NOT_ROUGE.sub(" ", text).lower().split()


def rouge1_f(candidate: list[str], reference: list[str]) -> float:
    """ROUGE-1 F1 of two token lists (clipped unigram counts)."""
    overlap = sum((Counter(candidate) & Counter(reference)).values())
    return 2.0 * overlap / (len(candidate) + len(reference)) if overlap else 0.0


def mean_rouge1_f(candidates: list[list[str]], references: list[list[str]]) -> float:
    scores = [rouge1_f(c, r) for c, r in zip(candidates, references, strict=True)]
    return float(np.mean(scores)) if scores else 0.0


def frequent_words(lines: list[str], n: int = CANDIDATES) -> list[str]:
    """The `n` most frequent ROUGE tokens of `lines` (ties in order of first sight)."""
    counts = Counter(t for line in lines for t in rouge_tokens(line))
    return [w for w, _ in counts.most_common(n)]


def best_fixed_summary(
    references: list[list[str]], candidates: list[str], max_words: int = 100
) -> tuple[list[str], float]:
    """(words, mean ROUGE-1 F1): greedy, one word of `candidates` at a time (module doc)."""
    index = {w: i for i, w in enumerate(candidates)}
    counts = np.zeros((len(references), len(candidates)), dtype=np.int32)
    for r, ref in enumerate(references):
        for w in ref:
            if w in index:
                counts[r, index[w]] += 1
    ref_len = np.array([len(ref) for ref in references], dtype=np.float64)[:, None]
    chosen = np.zeros(len(candidates), dtype=np.int32)
    overlap = np.zeros((len(references), 1))
    words, score = [], 0.0
    while len(words) < max_words and candidates:
        gain = counts > chosen[None, :]  # the word would match one more reference token
        f1 = 2.0 * (overlap + gain) / (len(words) + 1 + ref_len)
        mean = f1.mean(axis=0)
        best = int(np.argmax(mean))
        if not mean[best] > score + 1e-12:
            break
        words.append(candidates[best])
        chosen[best] += 1
        overlap += gain[:, best : best + 1]
        score = float(mean[best])
    return words, score


def lead_scores(
    sources: list[list[str]], references: list[list[str]], max_k: int = MAX_K
) -> np.ndarray:
    """[max_k] mean ROUGE-1 F1 of the first k source tokens, k = 1 .. max_k."""
    total = np.zeros(max_k)
    for source, reference in zip(sources, references, strict=True):
        left = Counter(reference)
        overlap = np.zeros(max_k)
        length = np.zeros(max_k)
        matched = seen = 0
        for k in range(max_k):
            if k < len(source):
                for t in rouge_tokens(source[k]):
                    seen += 1
                    if left[t] > 0:
                        left[t] -= 1
                        matched += 1
            overlap[k], length[k] = matched, seen
        denominator = length + len(reference)
        total += np.divide(2.0 * overlap, denominator, out=np.zeros(max_k), where=overlap > 0)
    return total / max(len(sources), 1)


def best_lead_k(
    sources: list[list[str]], references: list[list[str]], max_k: int = MAX_K
) -> tuple[int, float, np.ndarray]:
    """(k, its mean ROUGE-1 F1, the scores of every k)."""
    scores = lead_scores(sources, references, max_k)
    k = int(np.argmax(scores)) + 1
    return k, float(scores[k - 1]), scores


# -- the data and the output -------------------------------------------------------------


@dataclass
class Split:
    articles: list[str]
    titles: list[str]
    title_path: str


def read_split(data_dir: str, split: str) -> Split:
    """The article and title lines of `split` ("train", "valid", "test"); DataError
    naming the file for a missing one, different lengths, or an empty title."""
    sub, article_file, title_file, _ = LAYOUT[split]
    a_path = os.path.join(data_dir, "sumdata", sub, article_file)
    t_path = os.path.join(data_dir, "sumdata", sub, title_file)
    articles, titles = read_lines(a_path), read_lines(t_path)
    if len(articles) != len(titles):
        raise DataError(
            f"{t_path}: {len(titles)} lines but {a_path} has {len(articles)}: each line of "
            "one must be the same example as that line of the other"
        )
    if not titles:
        raise DataError(f"{t_path}: no lines")
    for number, (article, title) in enumerate(zip(articles, titles, strict=True), start=1):
        for path, line in ((a_path, article), (t_path, title)):
            if not ascii_split(line):
                raise DataError(f"{path}:{number}: empty line (an example with no text)")
    return Split(articles, titles, t_path)


def write_decode_folder(out_dir: str, summaries: list[list[str]], titles: list[str]) -> None:
    """Example k's reference (the test title, as the `.bin` abstract gives it to the
    decoder) and decoded words, in the decoder's layout."""
    for k, (words, title) in enumerate(zip(summaries, titles, strict=True)):
        folder.write_for_rouge([normalize(title)], words, k, out_dir)


def bin_titles(path: str) -> list[str]:
    """The abstracts of a `.bin` file (`<s> title </s>`) as title lines."""
    from pointer_generator.data.binfile import read_records

    titles = []
    for _, abstract in read_records(path):
        words = [w for w in ascii_split(abstract) if w not in ("<s>", "</s>")]
        if not words:
            raise DataError(f"{path}: an example with an empty abstract")
        titles.append(" ".join(words))
    return titles


def ngram_report(data: dict, events: Events, also: dict | None = None) -> dict:
    """`data`'s splits (train, valid, test: `Split`s) and `also`'s ({name: title lines},
    scored only)."""
    titles = {name: split.titles for name, split in data.items()} | dict(also or {})
    seqs = {name: [events.title(t) for t in lines] for name, lines in titles.items()}
    report = {
        "how_chosen": HOW_CHOSEN,
        "max_dec_steps": events.max_dec_steps,
        "event_space": {"vocabulary_words": events.size - 2, "with_unk_and_end": events.size},
        "tokens": {},
    }
    for name, s in seqs.items():
        flat = np.concatenate(s)
        report["tokens"][name] = {
            "titles": len(s),
            "tokens": int(len(flat)),
            "unk_tokens": int((flat == events.unk).sum()),
            "cut_by_max_dec_steps": int(sum(seq[-1] != events.end for seq in s)),
        }
    for label, order in (("trigram", 3), ("bigram", 2)):
        fitted = fit_ngram(seqs["train"], order, events.size)
        names = [f"p{n}" for n in range(order, 0, -1)] + ["uniform"]
        report[label] = {
            "weights": {n: round(float(w), 4) for n, w in zip(names, fitted.weights, strict=True)},
            "held_out_perplexity": fitted.held_out_perplexity,
        }
        for name in ("valid", "test", *(also or {})):
            ppl, tokens = perplexity(fitted.model, seqs[name], fitted.weights)
            report[label][f"{name}_perplexity"] = ppl
            report[label][f"{name}_tokens"] = tokens
    return report


def fixed_report(data: dict, candidates: int) -> tuple[dict, list[str]]:
    words = frequent_words(data["train"].titles, candidates)
    refs = [rouge_tokens(t) for t in data["valid"].titles]
    summary, score = best_fixed_summary(refs, words)
    test_score = mean_rouge1_f([summary] * len(data["test"].titles), _refs(data["test"]))
    return {
        "summary": " ".join(summary),
        "words": len(summary),
        "valid_rouge1_f": score,
        "test_rouge1_f_python": test_score,
        "candidates": len(words),
        "rouge": "Python ROUGE-1 F1 (ROUGE-1.5.5 tokens, no stemming)",
    }, summary


def _refs(split: Split) -> list[list[str]]:
    return [rouge_tokens(t) for t in split.titles]


def lead_report(data: dict, max_k: int) -> tuple[dict, int]:
    valid_sources = [ascii_split(a) for a in data["valid"].articles]
    k, score, scores = best_lead_k(valid_sources, _refs(data["valid"]), max_k)
    test = [ascii_split(a)[:k] for a in data["test"].articles]
    test_score = mean_rouge1_f([rouge_tokens(" ".join(s)) for s in test], _refs(data["test"]))
    return {
        "k": k,
        "valid_rouge1_f": score,
        "test_rouge1_f_python": test_score,
        "valid_rouge1_f_by_k": [round(float(s), 5) for s in scores],
        "rouge": "Python ROUGE-1 F1 (ROUGE-1.5.5 tokens, no stemming)",
    }, k


def build_arg_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m experiments.families.baselines",
        description="Input-blind baselines of the highlight-pairs task: n-gram perplexity "
        "of the titles, the best fixed summary, lead-k.",
    )
    p.add_argument("--data_dir", required=True, help="what data_tools.highlight_pairs wrote")
    p.add_argument("--out_dir", required=True)
    p.add_argument("--vocab_path", default=None, help="default: DATA_DIR/finished/vocab")
    p.add_argument(
        "--vocab_size",
        type=arg_types.non_negative_int,
        default=VOCAB_SIZE,
        help="the models' --vocab_size (0: every word of the file, the default)",
    )
    p.add_argument("--max_dec_steps", type=arg_types.positive_int, default=MAX_DEC_STEPS)
    p.add_argument(
        "--also_score",
        action="append",
        default=[],
        metavar="NAME=FILE.bin",
        help="also give the n-gram models' perplexity on FILE.bin's abstracts, as NAME",
    )
    p.add_argument("--candidates", type=arg_types.positive_int, default=CANDIDATES)
    p.add_argument("--max_k", type=arg_types.positive_int, default=MAX_K)
    p.add_argument(
        "--overwrite", action="store_true", help="replace fixed/ and lead/ of an earlier run"
    )
    return p


def _write_json(path: str, obj: dict) -> None:
    owned_files.replace_file(path, json.dumps(obj, indent=1, sort_keys=True) + "\n")


@exit_codes.command
def main(argv: list[str] | None = None) -> int:
    args = build_arg_parser().parse_args(argv)
    vocab_path = args.vocab_path or os.path.join(args.data_dir, "finished", "vocab")
    events = Events(Vocab(vocab_path, args.vocab_size), args.max_dec_steps)
    data = {name: read_split(args.data_dir, name) for name in ("train", "valid", "test")}
    also = {}
    for item in args.also_score:
        name, sep, path = item.partition("=")
        if not sep or not name or name in data or not os.path.isfile(path):
            raise DataError(
                f"--also_score={item}: give NAME=FILE.bin, NAME not train/valid/test, "
                "FILE.bin an existing file"
            )
        also[name] = bin_titles(path)
    owned_files.make_dir(args.out_dir)
    dirs = {}
    for name in ("fixed", "lead"):
        dirs[name] = owned_files.make_dir(os.path.join(args.out_dir, name), root=args.out_dir)
        prepare_out_dir(dirs[name], args.overwrite)

    ngram = ngram_report(data, events, also)
    _write_json(os.path.join(args.out_dir, "ngram.json"), ngram)
    fixed, summary = fixed_report(data, args.candidates)
    write_decode_folder(dirs["fixed"], [summary] * len(data["test"].titles), data["test"].titles)
    _write_json(os.path.join(args.out_dir, "fixed.json"), fixed)
    lead, k = lead_report(data, args.max_k)
    sources = [ascii_split(a)[:k] for a in data["test"].articles]
    write_decode_folder(dirs["lead"], sources, data["test"].titles)
    _write_json(os.path.join(args.out_dir, "lead.json"), lead)

    for label in ("trigram", "bigram"):
        r = ngram[label]
        print(
            f"{label}: perplexity {r['valid_perplexity']:.2f} (valid, {r['valid_tokens']:,} "
            f"tokens), {r['test_perplexity']:.2f} (test, {r['test_tokens']:,}); weights "
            f"{r['weights']}"
        )
    print(f"fixed summary: {fixed['summary']!r}, valid ROUGE-1 F {fixed['valid_rouge1_f']:.4f}")
    print(f"lead-{k}: valid ROUGE-1 F {lead['valid_rouge1_f']:.4f}")
    print(f"written to {args.out_dir} (fixed/ and lead/ are decode folders of the test set)")
    return exit_codes.OK


if __name__ == "__main__":
    sys.exit(main())
