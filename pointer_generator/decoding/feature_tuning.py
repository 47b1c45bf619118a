"""ABS+'s feature weights by MERT on a development set (`pointer-generator
tune_features`; the command line builds the inputs in `cli/tune_features.py`).

Each round decodes every example of the development data with the current weights and
keeps each example's final beam (its n-best list, merged with the earlier rounds'); then
MERT (`evaluation/mert.py`) moves the unigram, bigram, trigram and out-of-order weights,
one coordinate at a time from the current and from random points, to the best corpus
objective the n-best lists allow. The model's weight stays 1 and length's 0, and the
out-of-order weight stays <= 0 (NAMAS's tuning/params.txt). It stops after
`iterations` rounds, or earlier when a round finds no new hypothesis, and keeps the
weights whose own decode scored best (`tune`).
"""

from __future__ import annotations

import dataclasses
import logging
import time

import numpy as np

from pointer_generator.data.input_pipeline import batch_strings, data_errors, make_dataset
from pointer_generator.data.vocab import STOP_ID
from pointer_generator.evaluation import mert
from pointer_generator.search.extractive_features import (
    FEATURES,
    INDICATORS,
    hypothesis_features,
)
from pointer_generator.search.settings import SearchSettings

log = logging.getLogger(__name__)

FREE = ("uni", "bi", "tri", "ooo")  # the weights MERT moves


@dataclasses.dataclass(frozen=True)
class TuningConfig:
    """What MERT tunes on and for.

    data_path: the development .bin files (their abstracts are the references).
    objective: "rouge1_recall", "rouge1_f" or "bleu4"; objective_bytes: the ROUGE ones
      read the first N bytes of each summary and reference (0 = all). iterations:
      decode-and-optimise rounds at most; random_starts: random starting points of each
      optimisation besides the current weights. decode_batch_size: articles decoded
      together. keep: "best_decoded" (the weights whose own decode scored best) or
      "last" (the last round's weights, as Z-MERT writes them).
    """

    data_path: str
    objective: str = "rouge1_recall"
    objective_bytes: int = 75
    iterations: int = 5
    random_starts: int = 10
    decode_batch_size: int = 32
    keep: str = "best_decoded"


def tune(trained, settings: SearchSettings, config: TuningConfig) -> tuple[dict, float]:
    """(tuned weights, their objective), starting from the settings' feature weights
    (none: every feature at 0).

    The weights returned are those whose own decode scored best: each round's weights
    are scored on the n-best lists once their decode has joined them (what that search
    writes, reranked as it ranks), and weights the last round tuned are decoded once
    more to be scored so. MERT's optimum on the lists alone can send the search to
    hypotheses the lists never held: on the real-text page's second ABS seed the last
    round's weights scored 0.303 on the lists and decoded summaries that scored 0.198."""
    weights = dict(settings.feature_weights or {"lm": 1.0, **dict.fromkeys(INDICATORS, 0.0)})
    tuner = Tuner(trained, settings, config, weights)
    scored: list[tuple[float, int, dict]] = []  # (objective after its decode, round, weights)
    decoded = None  # the weights the pools' latest decode used
    for round_ in range(1, config.iterations + 1):
        t0 = time.time()
        new = tuner.collect()
        decoded = weights
        before = tuner.objective(weights)
        scored.append((before, round_, weights))
        tuned, value = tuner.optimise(weights)
        log.info(
            "round %d: %d new hypotheses (%d in all, %.0f s); %s %.4f -> %.4f; %s",
            round_,
            new,
            tuner.size(),
            time.time() - t0,
            config.objective,
            before,
            value,
            " ".join(f"{k}={tuned[k]:.4g}" for k in FREE),
        )
        changed = _changed(tuned, weights)
        weights = tuned
        tuner.weights = weights
        if new == 0 or not changed:
            break
    if config.keep == "last":
        return weights, value  # (their objective on the n-best lists, as before)
    if decoded is not None and _changed(weights, decoded):
        tuner.collect()  # the last weights, decoded to be scored as the others were
        scored.append((tuner.objective(weights), len(scored) + 1, weights))
    best, round_, weights = max(scored, key=lambda x: (x[0], x[1]))
    log.info(
        "kept the weights decoded in round %d: %s %.4f after their own decode (the last "
        "round's: %.4f)",
        round_,
        config.objective,
        best,
        scored[-1][0],
    )
    return weights, best


def _changed(a: dict, b: dict) -> bool:
    return any(abs(a[k] - b[k]) > 1e-9 for k in FEATURES)


class Tuner:
    """The n-best pools of the development set and their MERT.

    Args:
      trained: the model (`trained.open_trained`).
      settings: the search (its `feature_weights` are replaced by the weights tuned).
      config: what to tune on and for (`TuningConfig`).
      weights: the starting weights.
    """

    def __init__(self, trained, settings: SearchSettings, config: TuningConfig, weights: dict):
        self.trained, self.vocab, self.hps = trained, trained.vocab, trained.hps
        self.settings, self.config = settings, config
        self.weights = weights
        self.pools: list[dict] = []  # per example: {token ids: (model score, features)}
        self.references: list[list[list[str]]] = []
        self.stats_cache: dict = {}

    def size(self) -> int:
        return sum(len(p) for p in self.pools)

    def collect(self) -> int:
        """Decode the development set with the current weights; returns how many
        hypotheses were new."""
        cfg = self.config
        decoder = self.trained.decoder(self.settings.replace(feature_weights=self.weights))
        norm = decoder.norm_table()
        namas = self.settings.namas_features
        alpha = np.array([self.weights[k] for k in INDICATORS])
        new, index = 0, 0
        batch_hps = self.hps.replace(batch_size=cfg.decode_batch_size)
        with data_errors():
            for batch in make_dataset(cfg.data_path, self.vocab, batch_hps, "decode", True):
                out = decoder.nbest_batch(batch)
                enc = batch["enc_batch"].numpy()
                lens = batch["enc_lens"].numpy()
                for b in range(enc.shape[0]):
                    if index == len(self.pools):
                        self.pools.append({})
                        abstract = batch_strings(batch, b)["abstract_sents"]
                        self.references.append([" ".join(abstract).lower().split()])
                    pool = self.pools[index]
                    for r in np.flatnonzero(out["nbest_valid"][b]):
                        n = int(out["nbest_lengths"][b, r])
                        ids = tuple(int(t) for t in out["nbest_tokens"][b, r, :n])
                        if ids in pool:
                            continue
                        f = hypothesis_features(enc[b, : lens[b]], ids, namas)
                        lm = (float(out["nbest_sums"][b, r]) - alpha @ f) / self.weights["lm"]
                        # The search ranks finished hypotheses by score / norm(length).
                        pool[ids] = (lm, f, float(norm[min(n, len(norm) - 1)]))
                        new += 1
                    index += 1
        return new

    def _nbests(self):
        cfg = self.config
        out = []
        for pool, refs in zip(self.pools, self.references, strict=True):
            ids = list(pool)
            model = np.array([pool[h][0] / pool[h][2] for h in ids])
            feats = np.stack([pool[h][1] / pool[h][2] for h in ids])
            stats = []
            for h in ids:
                key = (h, id(refs))
                if key not in self.stats_cache:
                    words = [self.vocab.id2word(t).lower() for t in h if t != STOP_ID]
                    self.stats_cache[key] = mert.statistics(
                        words, refs, cfg.objective, cfg.objective_bytes
                    )
                stats.append(self.stats_cache[key])
            out.append(mert.NBest(model, feats, np.stack(stats)))
        return out

    def objective(self, weights: dict) -> float:
        w = np.array([weights[k] for k in INDICATORS])
        return mert.evaluate(self._nbests(), w, self.config.objective)

    def optimise(self, weights: dict) -> tuple[dict, float]:
        start = np.array([weights[k] for k in INDICATORS])
        free = [INDICATORS.index(k) for k in FREE]
        upper = {INDICATORS.index("ooo"): 0.0}
        w, value = mert.optimise(
            self._nbests(),
            start,
            self.config.objective,
            free,
            upper,
            random_starts=self.config.random_starts,
        )
        return {"lm": weights["lm"], **dict(zip(INDICATORS, map(float, w), strict=True))}, value
