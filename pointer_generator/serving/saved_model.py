"""A trained model as a SavedModel that summarizes raw text by itself (docs/export.md).

`export_saved_model(decoder, export_dir)` writes a SavedModel whose graph holds every
step from raw article strings to summary strings: tokenization (`data/graph_tokenizer`),
the vocabulary and the article-OOV numbering (`data/example_ops`), the batched beam
search with the decode settings the decoder was built with (`search/beam_decoder`), the
ids back to words (article OOVs included) and readable text (`data/graph_detokenize`).
Loading it needs TensorFlow only (`tf.saved_model.load`, TensorFlow Serving), not this
package.

Signatures (B = texts in the request, M = max_dec_steps, T = longest article read):

  serving_default(texts: string [B])     raw articles, tokenized in the graph; the
                                         summary gets the capitals its words have in
                                         the article, as `summarize` gives them
  summarize_tokens(articles: string [B]) articles already tokenized as the training data
                                         (lower-cased PTB tokens, space separated):
                                         exact where the in-graph tokenizer is not;
                                         the summary capitalizes sentence starts only
both returning
  summary        string  [B]        readable summary, one line per sentence (what
                                    `pointer-generator summarize` prints)
  tokens         string  [B, M]     the summary's tokens, padded with ""
  num_tokens     int32   [B]
  token_ids      int32   [B, M]     ids in the extended vocabulary (article OOVs are
                                    vocab_size + k), padded with 0
  article_tokens string  [B, T]     the article as the model read it, padded with ""
  article_length int32   [B]
  attention      float32 [B, M, T]  attention of each summary token over the article
  p_gens         float32 [B, M]     generation probability of each summary token
  scores         float32 [B]        the mean log-probability the search ranked it by

A text with no words gets an empty summary (num_tokens 0).
"""

from __future__ import annotations

import json
import os

import tensorflow as tf

from pointer_generator.data import example_ops
from pointer_generator.data.graph_detokenize import detokenize_batch, restore_case
from pointer_generator.data.graph_tokenizer import article_of_tokens, tokenize_texts
from pointer_generator.data.input_pipeline import encoder_width, padded_lengths
from pointer_generator.data.vocab import PAD_ID, STOP_ID
from pointer_generator.search.beam_decoder import BeamSearchDecoder
from pointer_generator.summarizing.export_info import SIGNATURE_RAW, SIGNATURE_TOKENS
from pointer_generator.summarizing.summarizer import EXPORT_INFO_FILE


def padded_rows(n):
    """The smallest power of two >= n (n a scalar int32 tensor >= 1)."""
    powers = tf.bitwise.left_shift(1, tf.range(31))
    return tf.reduce_min(tf.where(powers >= n, powers, powers[-1]))


class SummarizerModule(tf.Module):
    """The decoder's model, vocabulary and search as one trackable module.

    Args:
      decoder: a `BeamSearchDecoder` over a loaded model; its settings (beam size, decode
        lengths, max_enc_steps, ...) are fixed into the graph.
    """

    def __init__(self, decoder: BeamSearchDecoder):
        super().__init__(name="summarizer")
        self._decoder = decoder
        self.model = decoder.model
        # Listed explicitly so the SavedModel holds every weight whatever Keras tracks.
        self.weights = list(decoder.model.variables)
        vocab = decoder.vocab
        self.vocab_size = vocab.size()
        self.table = example_ops.vocab_table(vocab)
        self.words = tf.constant([w.encode("utf-8") for w in vocab.words])
        hps = decoder.hps
        self.max_enc_steps, self.max_dec_steps = hps.max_enc_steps, hps.max_dec_steps
        self.copies_words = decoder.copies_words

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="texts")])
    def summarize_raw(self, texts):
        """Raw article texts [B] -> the outputs of the module docstring; the summary
        text has the capitals its words have in the text (`detokenize.case_map`)."""
        tokenized = tokenize_texts(texts)
        return self._summarize(article_of_tokens(tokenized), tokenized)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="articles")])
    def summarize_tokens(self, articles):
        """Tokenized articles [B] -> the outputs of the module docstring."""
        return self._summarize(articles, None)

    def _summarize(self, articles, cased):
        """`cased`: the texts tokenized with their capitals (string [B]), or None."""
        # An empty batch is searched as one "." article (the search needs a row) and
        # every output sliced back to no rows.
        n = tf.shape(articles)[0]
        articles = tf.cond(n > 0, lambda: articles, lambda: tf.constant(["."]))
        if cased is not None:
            cased = tf.cond(n > 0, lambda: cased, lambda: tf.constant(["."]))
        # Rows padded to a power of two by repeating the last text (its extra rows are
        # sliced off below): a new number of texts then seldom compiles the search again,
        # as with `article_texts.batch_rows`.
        rows = padded_rows(tf.shape(articles)[0])
        index = tf.minimum(tf.range(rows), tf.shape(articles)[0] - 1)
        articles = tf.gather(articles, index)
        if cased is not None:
            cased = tf.gather(cased, index)
        return {k: v[:n] for k, v in self._summarize_rows(articles, cased).items()}

    def _summarize_rows(self, articles, cased):
        # A text with no words is decoded as "." (the search needs one position) and
        # its outputs are blanked afterwards.
        has_words = tf.strings.length(tf.strings.strip(articles)) > 0
        articles = tf.where(has_words, articles, ".")
        ex = example_ops.build_examples(
            articles,
            tf.fill(tf.shape(articles), ""),
            self.table,
            self.vocab_size,
            self.max_enc_steps,
            self.max_dec_steps,
            self.copies_words,
        )
        enc_lens = tf.cast(ex["enc_input"].row_lengths(), tf.int32)
        enc_batch = ex["enc_input"].to_tensor(default_value=PAD_ID)
        width = tf.shape(enc_batch)[1]  # the longest article
        ext = ex["enc_input_extend_vocab"].to_tensor(default_value=PAD_ID)  # [B, width]
        # Padded to the experiment's length bucket (`encoder_width`), as training and
        # `pg.Summarizer` pad: a new article length would otherwise compile the search's
        # XLA parts again (about a second each at toy size).
        padded = encoder_width(enc_lens, self._decoder.hps)
        if padded is not None:
            enc_batch, ext = (
                tf.pad(x, [[0, 0], [0, padded - width]], constant_values=PAD_ID)
                for x in (enc_batch, ext)
            )
        mask = tf.sequence_mask(enc_lens, tf.shape(enc_batch)[1], tf.float32)
        oovs = ex["art_oovs"].to_tensor(default_value=b"")
        max_oovs = tf.shape(oovs)[1]
        out = self._decoder.search(enc_batch, mask, ext, max_oovs, oovs)

        ids, lengths = out["tokens"], out["lengths"]
        m = tf.shape(ids)[1]
        # The summary: the generated ids up to the final [STOP] (excluded).
        steps = tf.range(m)[None, :]
        last = tf.gather(ids, tf.maximum(lengths - 1, 0), batch_dims=1)
        num_tokens = lengths - tf.cast((last == STOP_ID) & (lengths > 0), tf.int32)
        num_tokens = tf.where(has_words, num_tokens, 0)
        keep = steps < num_tokens[:, None]
        in_vocab = ids < self.vocab_size
        vocab_words = tf.gather(self.words, tf.clip_by_value(ids, 0, self.vocab_size - 1))
        oov_index = tf.clip_by_value(ids - self.vocab_size, 0, tf.maximum(max_oovs - 1, 0))
        oov_words = tf.gather(
            tf.concat([oovs, tf.fill([tf.shape(oovs)[0], 1], "")], 1), oov_index, batch_dims=1
        )
        tokens = tf.where(keep, tf.where(in_vocab, vocab_words, oov_words), "")
        token_ids = tf.where(keep, ids, 0)

        article_words = tf.strings.split(articles)[:, : self.max_enc_steps]
        article_tokens = article_words.to_tensor(default_value="")  # [B, width]
        article_length = tf.where(has_words, enc_lens, 0)
        art_keep = tf.range(width)[None, :] < article_length[:, None]
        article_tokens = tf.where(art_keep, article_tokens, "")
        attn = out["attn_dists"][:, :, :width]
        attn = tf.where(keep[:, :, None] & art_keep[:, None, :], attn, 0.0)
        p_gens = tf.where(keep, out["p_gens"], 0.0)
        summary = tf.RaggedTensor.from_tensor(tokens, lengths=num_tokens)
        if cased is not None:  # the article's capitals, as `summarize` puts them back
            summary = restore_case(summary, tf.strings.split(cased))
        return {
            "summary": _readable(summary),
            "tokens": tokens,
            "num_tokens": num_tokens,
            "token_ids": token_ids,
            "article_tokens": article_tokens,
            "article_length": article_length,
            "attention": attn,
            "p_gens": p_gens,
            "scores": tf.where(has_words, out["scores"], 0.0),
        }


class TokensModule(SummarizerModule):
    """`SummarizerModule` with `summarize_tokens` only (the kept searches of
    `summarizing/kept_search.py`: the articles come tokenized, so the in-graph tokenizer
    is neither traced nor saved)."""

    summarize_raw = None


def save_module(module: SummarizerModule, export_dir: str) -> None:
    """`module`'s signatures that it has (`summarize_tokens`, and `serving_default` where
    it tokenizes) as a SavedModel in `export_dir`."""
    signatures = {SIGNATURE_TOKENS: module.summarize_tokens.get_concrete_function()}
    if module.summarize_raw is not None:
        signatures[SIGNATURE_RAW] = module.summarize_raw.get_concrete_function()
    tf.saved_model.save(module, export_dir, signatures=signatures)


def _readable(tokens: tf.RaggedTensor) -> tf.Tensor:
    """string [B, None] summary tokens -> string [B]: each sentence (ending after a "."
    token, `decoding.folder.split_sentences`) detokenized, one per line."""
    words, rowids = tokens.flat_values, tokens.value_rowids()
    n = tf.size(words, out_type=tf.int64)
    periods_before = tf.cumsum(tf.cast(tf.equal(words, "."), tf.int64), exclusive=True)
    keys, sentence = tf.unique(rowids * (n + 1) + periods_before, out_idx=tf.int64)
    n_sentences = tf.size(keys, out_type=tf.int64)
    sentences = tf.RaggedTensor.from_value_rowids(words, sentence, nrows=n_sentences)
    sentence_row = tf.math.unsorted_segment_min(rowids, sentence, n_sentences)
    return tf.strings.unsorted_segment_join(
        detokenize_batch(sentences), sentence_row, tokens.nrows(), separator="\n"
    )


def export_saved_model(decoder: BeamSearchDecoder, export_dir: str, info: dict) -> str:
    """Write the SavedModel of `decoder` to `export_dir` (which must not hold one
    already) with `info` (where it came from, its settings) as export_info.json in its
    assets; returns export_dir."""
    save_module(SummarizerModule(decoder), export_dir)
    # The article lengths the graph pads to (`padded_lengths`), so that a server can
    # compile each before its first request (`SavedModelSummarizer.warm_up`).
    info = {**info, "encoder_lengths": padded_lengths(decoder.hps)}
    with open(os.path.join(export_dir, "assets", EXPORT_INFO_FILE), "w", encoding="utf-8") as f:
        json.dump(info, f, indent=2, sort_keys=True)
    return export_dir
