"""The batched decoder of every model family: `BeamSearchDecoder` runs the batched beam
search (`beam_search.py`) over the search step a model provides (`search_start`,
models/family.py) and turns the chosen ids into `Summary`s (words with article OOVs,
attention, p_gens, score)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import tensorflow as tf

from pointer_generator.data.vocab import (
    START_ID,
    STOP_DECODING,
    UNK_ID,
    UNK_TOKEN,
    Vocab,
    outputids2words,
)
from pointer_generator.errors import FlagError
from pointer_generator.hparams import HParams
from pointer_generator.models import family_registry
from pointer_generator.models.family import SearchInputs, SearchStart
from pointer_generator.search import extractive_features
from pointer_generator.search.beam_search import MIN_COMPACT_SIZE, batched_beam_search
from pointer_generator.search.rules import SearchRules, block_token
from pointer_generator.search.settings import SearchSettings


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
    """Runs batched beam search for batches of distinct articles, over the search step of
    any model family (models/family.py); it never asks which family it holds.

    Args:
      model: a built model of any family (`models/family_registry.py`) with weights loaded.
      vocab: the vocabulary the model was trained with.
      hps: the model's hyper-parameters (what its inputs are built with: max_enc_steps,
        its family's switches); the search reads none of them, its family says whether
        summaries copy article words (`copies_words`).
      settings: the search (`SearchSettings`); by default the original's search of
        `hps` (`SearchSettings.from_hparams`: its max_dec_steps, the original's beam).
      jit_compile: compile the whole search with XLA.
      top_k: the search's top-k function over a whole distribution (default
        `top_k.chunked_top_k`).
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
        settings: SearchSettings | None = None,
        *,
        jit_compile: bool = False,
        top_k=None,
        min_compact_size: int | None = MIN_COMPACT_SIZE,
    ):
        settings = settings or SearchSettings.from_hparams(hps)
        if 2 * settings.beam_size > vocab.size():
            # Each step takes the top 2K words of a distribution over the vocabulary.
            raise FlagError(
                f"--beam_size={settings.beam_size} is too large for a vocabulary of "
                f"{vocab.size()} words: beam search takes the top 2*beam_size words each "
                f"step; use --beam_size <= {vocab.size() // 2}"
            )
        # What the search may do, and whether summaries hold article words outside the
        # vocabulary and p_gen means something: the family says (models/family.py).
        self.family = family_registry.of(hps)
        for option, flag in settings.search_options():
            if option not in self.family.search_options():
                raise FlagError(f"{flag} {self.family.search_option_note}")
        self.model, self.vocab, self.hps, self.settings = model, vocab, hps, settings
        self.copies_words = self.family.copies_words(hps)
        self.jit_compile = jit_compile
        self.min_compact_size = min_compact_size
        self.top_k = top_k
        self._nbest = None
        # autograph=False: the search's loops are explicit `tf.while_loop`s; converting
        # its Python to graph code (AutoGraph) was most of a first call's time.
        self._search = tf.function(
            self._search_graph, reduce_retracing=True, jit_compile=jit_compile, autograph=False
        )

    # The settings a decode folder's name and record are made of.
    trigram_blocking = property(lambda self: self.settings.trigram_blocking)
    length_penalty = property(lambda self: self.settings.length_penalty)
    block_unk = property(lambda self: self.settings.block_unk)
    feature_weights = property(lambda self: self.settings.feature_weights)

    def _start(self, inputs: SearchInputs):
        """The model's search (step, carry, articles), with the search options of the
        settings that act on any step's distribution: [UNK] blocked, ABS+'s features."""
        settings, k = self.settings, self.settings.beam_size
        start = self.model.search_start(inputs, k, settings.whole_distribution)
        if not settings.block_unk and settings.feature_weights is None:
            return start
        weights, namas = settings.feature_weights, settings.namas_features

        def step(tokens, carry, art):
            probs, attn, p_gen, new = start.step(tokens, carry["model"], art["model"])
            if settings.block_unk:  # the ABS papers' search never writes <unk>
                probs = block_token(probs, UNK_ID)
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

        first = tf.nest.flatten(start.carry)[0]
        rows = first.shape[0] if first.shape[0] is not None else tf.shape(first)[0]
        carry = {"model": start.carry, "history": tf.fill([rows, 2], START_ID)}
        articles = {
            "model": start.articles,
            "ids": inputs.enc_batch,
            "mask": inputs.enc_padding_mask,
        }
        return SearchStart(step, carry, articles)

    def _search_graph(
        self, enc_batch, enc_padding_mask, enc_batch_extend_vocab, max_art_oovs, n_best=False
    ):
        inputs = SearchInputs(enc_batch, enc_padding_mask, enc_batch_extend_vocab, max_art_oovs)
        step, carry, articles = self._start(inputs)
        # A Python int when the batch size is static; a tensor once retracing relaxed it
        # (and for n-best lists, which are kept for every article without compaction).
        batch_size = enc_batch.shape[0]
        if batch_size is None or n_best:
            batch_size = tf.shape(enc_batch)[0]
        return batched_beam_search(
            step,
            carry,
            batch_size=batch_size,
            **self.settings.search_keywords(self.vocab.size()),
            top_k=self.top_k,
            articles=articles,
            min_compact_size=self.min_compact_size,
            n_best=n_best,
        )

    def norm_table(self):
        """The length normalisation the search ranks finished hypotheses by (float32
        [max_dec_steps + 1], `rules.SearchRules.norm_table`)."""
        cfg = SearchRules(**self.settings.search_keywords(self.vocab.size()))
        return cfg.norm_table()

    def nbest_batch(self, batch: dict) -> dict:
        """The earlier families' final hypotheses of every article of a pipeline batch
        (`batched_beam_search` with n_best, as numpy arrays: nbest_tokens [B, K, M],
        nbest_lengths, nbest_sums, nbest_valid [B, K]); for ABS+'s tuning."""
        if "nbest" not in self.family.search_options():
            raise FlagError(f"n-best lists {self.family.search_option_note}")
        if self._nbest is None:

            def graph(enc_batch, enc_padding_mask, enc_batch_extend_vocab, max_art_oovs):
                return self._search_graph(
                    enc_batch, enc_padding_mask, enc_batch_extend_vocab, max_art_oovs, True
                )

            self._nbest = tf.function(graph, reduce_retracing=True, autograph=False)
        out = self._nbest(
            batch["enc_batch"],
            batch["enc_padding_mask"],
            batch["enc_batch_extend_vocab"],
            batch["max_art_oovs"],
        )
        return {k: v.numpy() for k, v in out.items() if k.startswith("nbest_")}

    def search(
        self, enc_batch, enc_padding_mask, enc_batch_extend_vocab, max_art_oovs, art_oovs=None
    ) -> dict:
        """The search's outputs for the encoder inputs of a pipeline batch: tokens,
        lengths, scores, attn_dists, p_gens (one row per article, see
        `batched_beam_search`). A tf.function: called eagerly, on a replica
        (`replicated.py`) or inside another graph (an export, `serving/saved_model.py`).
        `art_oovs` [B, M] strings: with --block_unk, copies of an article's literal
        [UNK] token (one of its OOVs) are blocked too (`unk_copies_as_unk`)."""
        if self.settings.block_unk and art_oovs is not None:
            enc_batch_extend_vocab = unk_copies_as_unk(
                enc_batch_extend_vocab, art_oovs, self.vocab.size()
            )
        return self._search(enc_batch, enc_padding_mask, enc_batch_extend_vocab, max_art_oovs)

    def decode_batch(self, batch: dict) -> list[Summary]:
        """Beam-search every article of a pipeline batch; returns one Summary per row."""
        out = self.search(
            batch["enc_batch"],
            batch["enc_padding_mask"],
            batch["enc_batch_extend_vocab"],
            batch["max_art_oovs"],
            batch["art_oovs"],
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
        oovs = [_text(w) for w in art_oovs if w] if self.copies_words else None
        words = outputids2words([int(t) for t in ids], self.vocab, oovs)
        if STOP_DECODING in words:
            words = words[: words.index(STOP_DECODING)]
        return Summary(words, attn[:, :enc_len], p_gens, score)

    def decode_stream(self, batches, skip: int = 0):
        """Decode every article of an iterable of pipeline batches, batch by batch;
        yields (batch, row, Summary) in input order, leaving out the first `skip`
        articles (a resumed single pass)."""
        return decode_batches(self.decode_batch, batches, skip)


def unk_copies_as_unk(enc_batch_extend_vocab, art_oovs, vocab_size: int):
    """enc_batch_extend_vocab [B, T] with the positions of an article's literal [UNK]
    token given UNK_ID instead of its OOV id (vocab_size + k, as the original's
    article2ids numbers it): the copy mass there then lands on [UNK], which --block_unk
    sets to 0 (both print as [UNK]). art_oovs: [B, M] strings, "" for padding."""
    ext = tf.convert_to_tensor(enc_batch_extend_vocab)
    oovs = tf.convert_to_tensor(art_oovs)
    # One "" column after the OOVs: every slot outside them reads it (an article
    # without OOVs has none).
    oovs = tf.concat([oovs, tf.fill([tf.shape(oovs)[0], 1], "")], axis=1)
    slot = tf.clip_by_value(ext - vocab_size, -1, tf.shape(oovs)[1] - 1)
    slot = tf.where(slot < 0, tf.shape(oovs)[1] - 1, slot)
    literal = tf.equal(tf.gather(oovs, slot, batch_dims=1), UNK_TOKEN)
    return tf.where(literal, tf.constant(UNK_ID, ext.dtype), ext)


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
