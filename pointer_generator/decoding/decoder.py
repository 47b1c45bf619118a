"""The batched decoder of a pointer-generator model: `BeamSearchDecoder` runs the
batched beam search (`beam_search.py`) over `PointerGeneratorModel.decode_step` and turns
the chosen ids into `Summary`s (words with article OOVs, attention, p_gens, score)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import tensorflow as tf

from pointer_generator.data.vocab import (
    START_ID,
    STOP_DECODING,
    UNK_ID,
    Vocab,
    outputids2words,
)
from pointer_generator.decoding import extractive_features
from pointer_generator.decoding.beam_search import (
    MIN_COMPACT_SIZE,
    batched_beam_search,
    tile_beams,
)
from pointer_generator.decoding.search_rules import search_settings
from pointer_generator.errors import FlagError
from pointer_generator.hparams import HParams
from pointer_generator.models import final_candidates
from pointer_generator.models.model_io import EncoderOutput


class Summary(NamedTuple):
    """One decoded example.

    words: output words, [STOP] excluded. attn: [steps, enc_len] attention per generated
    id (steps may be len(words) + 1, the step that produced [STOP]). p_gens: [steps].
    """

    words: list[str]
    attn: np.ndarray
    p_gens: np.ndarray
    score: float


class BeamSearchDecoder:
    """Runs batched beam search for batches of distinct articles.

    Args:
      model: a built model of any family (`models/families.py`) with weights loaded.
      vocab: the vocabulary the model was trained with.
      hps: beam_size, max_dec_steps, min_dec_steps, pointer_gen are read.
      trigram_blocking, length_penalty: optional extras (off = the original's search).
      jit_compile: compile the whole search with XLA.
      top_k: the search's top-k function over a whole distribution (default
        `top_k.chunked_top_k`).
      full_final_dist: build the whole extended-vocabulary distribution at every step
        and search it, as the original; by default (and unless trigram blocking needs
        it) only the entries that can be in its top 2K are computed
        (final_candidates.py: same summaries up to float rounding, faster).
      block_unk: (the earlier families) the search never generates [UNK].
      feature_weights: (the earlier families) ABS+'s feature weights
        (`extractive_features.FEATURES`), added to every word's score during the search;
        namas_features: the official code's skip-gram tables and padded input.
      min_compact_size: finished articles leave the batch (halving it) down to this
        many rows (`beam_search.batched_beam_search`); None = never (the batch's last
        article decides how long every row is computed).

    `decode_batch` decodes one pipeline batch; `decode_stream` decodes a stream of them
    batch by batch.
    """

    def __init__(
        self,
        model,
        vocab: Vocab,
        hps: HParams,
        *,
        trigram_blocking: bool = False,
        length_penalty: float | None = None,
        jit_compile: bool = False,
        top_k=None,
        full_final_dist: bool = False,
        min_compact_size: int | None = MIN_COMPACT_SIZE,
        block_unk: bool = False,
        feature_weights: dict | None = None,
        namas_features: bool = False,
    ):
        if 2 * hps.beam_size > vocab.size():
            # Each step takes the top 2K words of a distribution over the vocabulary.
            raise FlagError(
                f"--beam_size={hps.beam_size} is too large for a vocabulary of "
                f"{vocab.size()} words: beam search takes the top 2*beam_size words each "
                f"step; use --beam_size <= {vocab.size() // 2}"
            )
        self.model, self.vocab, self.hps = model, vocab, hps
        self.jit_compile = jit_compile
        self.min_compact_size = min_compact_size
        self.top_k = top_k
        self.full_final_dist = full_final_dist or trigram_blocking
        self.trigram_blocking = trigram_blocking
        self.length_penalty = length_penalty
        if block_unk and hps.model == "pointer_generator":
            raise FlagError("--block_unk is for --model=abs|ras_*: the pointer-generator copies")
        self.block_unk = block_unk
        if feature_weights is not None and hps.model == "pointer_generator":
            raise FlagError(
                "--feature_weights (ABS+) is for --model=abs|ras_*: the pointer-generator "
                "copies through its pointer instead"
            )
        self.feature_weights = feature_weights
        self.namas_features = namas_features
        self._nbest = None
        self._search = tf.function(
            self._search_graph, reduce_retracing=True, jit_compile=jit_compile
        )

    def _articles(self, enc: EncoderOutput, enc_batch_extend_vocab, enc_padding_mask) -> dict:
        """The per-article tensors [B, ...] the step function reads (`_step_fn`): the
        encoder tensors stay one row per article (the attention reads them once for all
        K beams); the small per-row tensors are tiled to the B*K rows in each step."""
        articles = {
            "states": enc.states,
            "features": enc.features,
            "mask": enc.padding_mask,
            "ext": enc_batch_extend_vocab,
        }
        if not self.full_final_dist and self.hps.pointer_gen:
            articles["words"] = final_candidates.article_index(
                enc_batch_extend_vocab, enc_padding_mask
            )
        return articles

    def _step_fn(self, max_art_oovs, projection):
        """step_fn(tokens, carry, articles) of the searches over `model.decode_step`;
        projection: `model.candidate_projection()`, or None for the whole distribution."""
        model, k = self.model, self.hps.beam_size

        def step_fn(tokens, carry, art):
            art_enc = EncoderOutput(art["states"], art["features"], art["mask"], None, None)
            setup = None
            if projection is not None:
                words = (
                    final_candidates.tile_article_words(art["words"], k)
                    if self.hps.pointer_gen
                    else None
                )
                setup = final_candidates.CandidateSetup(projection, words, 2 * k)
            ext = None if setup is not None else tile_beams(art["ext"], k)
            return model.decode_step(art_enc, ext, max_art_oovs, tokens, carry, setup)

        return step_fn

    def _family_search(self, enc_batch, enc_padding_mask, batch_size, n_best: bool = False):
        """The search for the earlier families (ABS, RAS): their own step function, with
        ABS+'s feature score (`extractive_features.py`) added to every word when the
        decoder has feature weights."""
        model, k = self.model, self.hps.beam_size
        rows = batch_size * k
        keep = tf.one_hot(UNK_ID, self.vocab.size(), on_value=0.0, off_value=1.0)
        weights, namas = self.feature_weights, self.namas_features

        def step(tokens, carry, art):
            probs, attn, p_gen, new = model.decode_step(tokens, carry["model"], art["model"], k)
            if self.block_unk:  # the ABS papers' search never writes <unk>
                probs = probs * keep
            # (y_{i-1}, y_i): the two latest words of each hypothesis, [START] before.
            history = tf.concat([carry["history"][:, 1:], tokens[:, None]], axis=1)
            if weights is not None:
                scores = extractive_features.feature_scores(
                    art["ids"], art["mask"], history, weights, self.vocab.size(), k, namas
                )
                if weights["lm"] != 1.0:
                    probs = probs ** weights["lm"]
                # The search adds log(probs): this adds the weighted features.
                probs = probs * tf.exp(scores)
            return probs, attn, p_gen, {"model": new, "history": history}

        carry = {"model": model.initial_carry(rows), "history": tf.fill([rows, 2], START_ID)}
        articles = {
            "model": model.search_articles(enc_batch, enc_padding_mask),
            "ids": enc_batch,
            "mask": enc_padding_mask,
        }
        return self._run_search(step, carry, batch_size, articles, n_best)

    def _run_search(self, step, carry, batch_size, articles, n_best: bool = False):
        """`batched_beam_search` with this decoder's settings."""
        return batched_beam_search(
            step,
            carry,
            batch_size=batch_size,
            **search_settings(self.hps, self.vocab.size()),
            trigram_blocking=self.trigram_blocking,
            length_penalty=self.length_penalty,
            top_k=self.top_k,
            articles=articles,
            min_compact_size=self.min_compact_size,
            n_best=n_best,
        )

    def _search_graph(self, enc_batch, enc_padding_mask, enc_batch_extend_vocab, max_art_oovs):
        model, hps, k = self.model, self.hps, self.hps.beam_size
        if hps.model != "pointer_generator":
            batch_size = enc_batch.shape[0]
            if batch_size is None:
                batch_size = tf.shape(enc_batch)[0]
            return self._family_search(enc_batch, enc_padding_mask, batch_size)
        enc = model.encode(enc_batch, enc_padding_mask)
        carry = tile_beams(model.initial_carry(enc), k)
        articles = self._articles(enc, enc_batch_extend_vocab, enc_padding_mask)
        projection = None if self.full_final_dist else model.candidate_projection()
        # A Python int when the batch size is static; a tensor once retracing relaxed it.
        batch_size = enc_batch.shape[0]
        if batch_size is None:
            batch_size = tf.shape(enc_batch)[0]
        step = self._step_fn(max_art_oovs, projection)
        return self._run_search(step, carry, batch_size, articles)

    def nbest_batch(self, batch: dict) -> dict:
        """The earlier families' final hypotheses of every article of a pipeline batch
        (`batched_beam_search` with n_best, as numpy arrays: nbest_tokens [B, K, M],
        nbest_lengths, nbest_sums, nbest_valid [B, K]); for ABS+'s tuning."""
        if self.hps.model == "pointer_generator":
            raise FlagError("n-best lists are for --model=abs|ras_*")
        if self._nbest is None:

            def graph(enc_batch, enc_padding_mask):
                return self._family_search(
                    enc_batch, enc_padding_mask, tf.shape(enc_batch)[0], n_best=True
                )

            self._nbest = tf.function(graph, reduce_retracing=True)
        out = self._nbest(batch["enc_batch"], batch["enc_padding_mask"])
        return {k: v.numpy() for k, v in out.items() if k.startswith("nbest_")}

    def search(self, enc_batch, enc_padding_mask, enc_batch_extend_vocab, max_art_oovs) -> dict:
        """The search's outputs for the encoder inputs of a pipeline batch: tokens,
        lengths, scores, attn_dists, p_gens (one row per article, see
        `batched_beam_search`). A tf.function: called eagerly, on a replica
        (`replicated.py`) or inside another graph (an export, `serving/export.py`)."""
        return self._search(enc_batch, enc_padding_mask, enc_batch_extend_vocab, max_art_oovs)

    def decode_batch(self, batch: dict) -> list[Summary]:
        """Beam-search every article of a pipeline batch; returns one Summary per row."""
        out = self.search(
            batch["enc_batch"],
            batch["enc_padding_mask"],
            batch["enc_batch_extend_vocab"],
            batch["max_art_oovs"],
        )
        return self.summaries({k: v.numpy() for k, v in out.items()}, batch)

    def summaries(self, out: dict, batch: dict) -> list[Summary]:
        """One Summary per row of a pipeline batch from the search's outputs for it (numpy
        arrays: tokens, lengths, scores, attn_dists, p_gens, one row per article)."""
        enc_lens = batch["enc_lens"].numpy()
        art_oovs = batch["art_oovs"].numpy()
        results = []
        for i in range(len(enc_lens)):
            n = int(out["lengths"][i])
            results.append(
                self._summary(
                    out["tokens"][i, :n],
                    out["attn_dists"][i, :n],
                    out["p_gens"][i, :n],
                    float(out["scores"][i]),
                    int(enc_lens[i]),
                    art_oovs[i],
                )
            )
        return results

    def _summary(self, ids, attn, p_gens, score: float, enc_len: int, art_oovs) -> Summary:
        """A Summary from a search's generated ids [n], attention [n, >= enc_len], p_gens."""
        oovs = [_text(w) for w in art_oovs if w] if self.hps.pointer_gen else None
        words = outputids2words([int(t) for t in ids], self.vocab, oovs)
        if STOP_DECODING in words:
            words = words[: words.index(STOP_DECODING)]
        return Summary(words, attn[:, :enc_len], p_gens, score)

    def decode_stream(self, batches, skip: int = 0):
        """Decode every article of an iterable of pipeline batches, batch by batch;
        yields (batch, row, Summary) in input order, leaving out the first `skip`
        articles (a resumed single pass)."""
        return decode_batches(self.decode_batch, batches, skip)


def decode_batches(decode_batch, batches, skip: int = 0):
    """(batch, row, Summary) of every article after the first `skip`, decoding batch by
    batch with `decode_batch(batch) -> [Summary]`."""
    index = 0
    for batch in batches:
        n = int(batch["enc_lens"].shape[0])
        if index + n > skip:
            for i, summary in enumerate(decode_batch(batch)):
                if index + i >= skip:
                    yield batch, i, summary
        index += n


def _text(x: bytes) -> str:
    # Text that is not UTF-8 flows through the pipeline as bytes (as in the original, whose
    # Python 2 strings were bytes; the pipeline warns about it); here it is shown with U+FFFD.
    return x.decode("utf-8", errors="replace")


def decoder_for(model, vocab: Vocab, hps: HParams, options, **overrides) -> BeamSearchDecoder:
    """The decoder the search options ask for: `options` is a `DecodeConfig` or the flags
    (the same names: trigram_blocking, block_unk, length_penalty (0 = none),
    full_final_dist, feature_weights (a weight file, "" = none), namas_features);
    `overrides` are further `BeamSearchDecoder` arguments."""
    path = options.feature_weights
    kwargs = dict(
        trigram_blocking=options.trigram_blocking,
        block_unk=options.block_unk,
        length_penalty=options.length_penalty or None,
        full_final_dist=options.full_final_dist,
        feature_weights=extractive_features.read_weights(path) if path else None,
        namas_features=options.namas_features,
    )
    kwargs.update(overrides)
    return BeamSearchDecoder(model, vocab, hps, **kwargs)
