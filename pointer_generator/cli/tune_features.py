"""`pointer-generator tune_features`: ABS+'s feature weights by MERT on a development set.

    pointer-generator tune_features --log_root=L --exp_name=E \\
        --data_path='finished/val.bin' --weights_out=abs_plus.txt \\
        [--objective=rouge1_recall|bleu4] [--beam_size=50] [--block_unk] \\
        [--feature_weights=start.txt] [--namas_features] [--mert_iterations=5]

Each round decodes every example of --data_path with the current weights and keeps each
example's final beam (its n-best list, merged with the earlier rounds'); then MERT
(`evaluation/mert.py`) moves the unigram, bigram, trigram and out-of-order weights, one
coordinate at a time from the current and from random points, to the best corpus
objective the n-best lists allow. The model's weight stays 1 and length's 0, and the
out-of-order weight stays <= 0 (NAMAS's tuning/params.txt). It stops after
--mert_iterations rounds, or earlier when a round finds no new hypothesis. The result
is a weight file for `--feature_weights` in decode and summarize.

The objective reads the examples' abstracts as references (lower-cased tokens), and the
summaries' tokens without [STOP]; ROUGE-1 recall here does no stemming (ROUGE-1.5.5's
-m does): score the tuned decode with ROUGE-1.5.5 itself.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from pointer_generator.errors import FlagError
from pointer_generator.runtime import staging

log = logging.getLogger(__name__)

FREE = ("uni", "bi", "tri", "ooo")  # the weights MERT moves


def _check(fv) -> None:
    if not fv.log_root or not fv.exp_name:
        raise FlagError("tune_features needs --log_root and --exp_name of a trained experiment")
    if not fv.weights_out:
        raise FlagError("tune_features needs --weights_out (where the tuned weights go)")
    if fv.model == "pointer_generator":
        raise FlagError(
            "tune_features tunes ABS+'s features for --model=abs|ras_*; this experiment "
            "is a pointer-generator"
        )
    staging.check_new_file(fv.weights_out, "weights_out")


def main(argv: list[str]) -> int:
    from pointer_generator.cli import configs, console, stored_settings
    from pointer_generator.cli import flags as flags_lib
    from pointer_generator.cli.flag_checks import apply_model_family
    from pointer_generator.cli.help import wants_help

    fv = flags_lib.FLAGS
    if wants_help(argv):
        print(__doc__.strip())
        return 0
    flags_lib.parse_subcommand("tune_features", argv)
    console.setup_logging()
    stored_settings.require_experiment(fv, "tune_features")
    stored_settings.apply(fv, "decode")
    apply_model_family(fv)
    _check(fv)
    from pointer_generator.cli.flag_checks import validate

    fv.mode, fv.single_pass = "decode", True
    validate(fv)
    console.import_tensorflow()
    from pointer_generator.data.vocab import Vocab
    from pointer_generator.decoding import decode
    from pointer_generator.decoding.extractive_features import (
        FEATURES,
        INDICATORS,
        format_weights,
        read_weights,
    )
    from pointer_generator.models.families import build_model
    from pointer_generator.runtime.experiment import open_experiment

    exp = open_experiment(fv.log_root, fv.exp_name, "decode")
    hps = configs.hparams(fv).replace(mode="decode")
    vocab = Vocab(fv.vocab_path, fv.vocab_size)
    model = build_model(hps, vocab.size())
    ckpt = decode.load_weights(model, exp.train_dir, None, wait=False)
    weights = (
        read_weights(fv.feature_weights)
        if fv.feature_weights
        else {"lm": 1.0, **dict.fromkeys(INDICATORS, 0.0)}
    )
    tuner = Tuner(model, vocab, hps, fv, weights)
    for round_ in range(1, fv.mert_iterations + 1):
        t0 = time.time()
        new = tuner.collect()
        before = tuner.objective(weights)
        tuned, value = tuner.optimise(weights)
        log.info(
            "round %d: %d new hypotheses (%d in all, %.0f s); %s %.4f -> %.4f; %s",
            round_,
            new,
            tuner.size(),
            time.time() - t0,
            fv.objective,
            before,
            value,
            " ".join(f"{k}={tuned[k]:.4g}" for k in FREE),
        )
        changed = any(abs(tuned[k] - weights[k]) > 1e-9 for k in FEATURES)
        weights = tuned
        tuner.weights = weights
        if new == 0 or not changed:
            break
    header = (
        f"# ABS+ feature weights: MERT ({fv.objective}) on {fv.data_path}\n"
        f"# model {ckpt}; {fv.objective} {value:.4f} on the n-best lists\n"
    )
    staging.write_new_file(fv.weights_out, header + format_weights(weights), "weights_out")
    print(f"Wrote {fv.weights_out}:\n{format_weights(weights)}", end="", flush=True)
    return 0


class Tuner:
    """The n-best pools of the development set and their MERT."""

    def __init__(self, model, vocab, hps, fv, weights: dict):
        from pointer_generator.decoding.decoder import decoder_for

        self.model, self.vocab, self.hps, self.fv = model, vocab, hps, fv
        self.weights = weights
        self.make_decoder = lambda w: decoder_for(model, vocab, hps, fv, feature_weights=w)
        self.pools: list[dict] = []  # per example: {token ids: (model score, features)}
        self.references: list[list[list[str]]] = []
        self.stats_cache: dict = {}

    def size(self) -> int:
        return sum(len(p) for p in self.pools)

    def collect(self) -> int:
        """Decode the development set with the current weights; returns how many
        hypotheses were new."""
        from pointer_generator.data.input_pipeline import (
            batch_strings,
            data_errors,
            make_dataset,
        )
        from pointer_generator.decoding.extractive_features import (
            INDICATORS,
            hypothesis_features,
        )
        from pointer_generator.decoding.search_rules import SearchConfig, search_settings

        hps, fv = self.hps, self.fv
        decoder = self.make_decoder(self.weights)
        norm = SearchConfig(
            **search_settings(hps, self.vocab.size()),
            trigram_blocking=False,
            length_penalty=fv.length_penalty or None,
        ).norm_table()
        alpha = np.array([self.weights[k] for k in INDICATORS])
        new, index = 0, 0
        batch_hps = hps.replace(batch_size=fv.decode_batch_size)
        with data_errors():
            for batch in make_dataset(fv.data_path, self.vocab, batch_hps, "decode", True):
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
                        f = hypothesis_features(enc[b, : lens[b]], ids, fv.namas_features)
                        lm = (float(out["nbest_sums"][b, r]) - alpha @ f) / self.weights["lm"]
                        # The search ranks finished hypotheses by score / norm(length).
                        pool[ids] = (lm, f, float(norm[min(n, len(norm) - 1)]))
                        new += 1
                    index += 1
        return new

    def _nbests(self):
        from pointer_generator.data.vocab import STOP_ID
        from pointer_generator.evaluation import mert

        fv = self.fv
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
                        words, refs, fv.objective, fv.objective_bytes
                    )
                stats.append(self.stats_cache[key])
            out.append(mert.NBest(model, feats, np.stack(stats)))
        return out

    def objective(self, weights: dict) -> float:
        from pointer_generator.decoding.extractive_features import INDICATORS
        from pointer_generator.evaluation import mert

        w = np.array([weights[k] for k in INDICATORS])
        return mert.evaluate(self._nbests(), w, self.fv.objective)

    def optimise(self, weights: dict) -> tuple[dict, float]:
        from pointer_generator.decoding.extractive_features import INDICATORS
        from pointer_generator.evaluation import mert

        start = np.array([weights[k] for k in INDICATORS])
        free = [INDICATORS.index(k) for k in FREE]
        upper = {INDICATORS.index("ooo"): 0.0}
        w, value = mert.optimise(
            self._nbests(),
            start,
            self.fv.objective,
            free,
            upper,
            random_starts=self.fv.random_starts,
        )
        return {"lm": weights["lm"], **dict(zip(INDICATORS, map(float, w), strict=True))}, value


if __name__ == "__main__":  # the same as `pointer-generator tune_features`
    import sys

    from pointer_generator.cli.entry import run

    run([sys.argv[0], "tune_features", *sys.argv[1:]])
