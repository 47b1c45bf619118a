"""Turning article/abstract text into the batcher's id sequences, vectorised (spec 3.1).

Everything here works on a block of `n` examples at once, with ragged tensors for the
variable-length parts, so that tf.data runs a few dozen kernels per block instead of per
example. Shapes below use `n` for the block and `None` for ragged dimensions.
"""

from __future__ import annotations

import tensorflow as tf

from pointer_generator.data.vocab import PAD_ID, START_ID, STOP_ID, UNK_ID, Vocab

# The text up to and including the first `<s>`, non-greedy. `\C` is any byte: RE2's `.`
# does not match bytes that are not UTF-8, which would silently drop such sentences.
_UP_TO_OPEN_TAG = r"^\C*?<s>"
_HAS_OPEN_TAG = r"\C*<s>\C*"


def vocab_table(vocab: Vocab) -> tf.lookup.StaticHashTable:
    """Word (UTF-8 bytes) -> int32 id; unknown words -> [UNK] (0).

    Built from all `vocab.size()` words including the special tokens, so text that
    contains e.g. the literal `[PAD]` maps to its id, as `Vocab.word2id` does.
    """
    keys = tf.constant([w.encode("utf-8") for w in vocab.words], tf.string)
    ids = tf.range(vocab.size(), dtype=tf.int32)
    return tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(keys, ids), UNK_ID)


def _ragged(values, rowids, nrows):
    return tf.RaggedTensor.from_value_rowids(values, rowids, nrows=nrows, validate=False)


def abstract_sentences(abstracts):
    """Sentences of tagged abstracts: [n] string -> [n, None] string.

    Each is the text between a `<s>` and the next `</s>`, scanning left to right, stripped
    of ASCII whitespace. Splitting on `</s>` gives one piece per closing tag (the last
    piece has none and is dropped); a piece yields a sentence iff it contains `<s>`, and
    the sentence starts after its first `<s>`. This equals the left-to-right scan because
    `<s>` and `</s>` occurrences can never overlap.
    """
    pieces = tf.strings.split(abstracts, sep="</s>")
    # Flat-value ops throughout: the high-level ragged ops add hundreds of graph nodes.
    rows = pieces.value_rowids()
    is_last = tf.range(tf.size(rows, out_type=tf.int64)) == tf.gather(pieces.row_limits() - 1, rows)
    keep = tf.logical_not(is_last) & tf.strings.regex_full_match(pieces.flat_values, _HAS_OPEN_TAG)
    sents = tf.strings.regex_replace(
        tf.boolean_mask(pieces.flat_values, keep), _UP_TO_OPEN_TAG, "", replace_global=False
    )
    return _ragged(tf.strings.strip(sents), tf.boolean_mask(rows, keep), pieces.nrows())


def _truncate(rt, n: int):
    """Cut every row of a ragged [rows, None] tensor to at most n items."""
    rows = rt.value_rowids()
    pos = tf.range(tf.size(rows, out_type=tf.int64)) - tf.gather(rt.row_starts(), rows)
    keep = pos < n
    return _ragged(tf.boolean_mask(rt.flat_values, keep), tf.boolean_mask(rows, keep), rt.nrows())


def _oov_tokens(words, ids):
    """Flat (row, word, position) of the [UNK] tokens of ragged `words`/`ids`."""
    is_oov = tf.equal(ids.flat_values, UNK_ID)
    return (
        tf.boolean_mask(words.value_rowids(), is_oov),
        tf.boolean_mask(words.flat_values, is_oov),
        tf.where(is_oov),
    )


def extend_oovs(art_words, art_ids, abs_words, abs_ids, base: int, max_oovs=None):
    """Temporary extended-vocab ids for article OOVs (spec 3.1 step 5).

    Within each example, the k-th distinct OOV word of the (truncated) article, in order of
    first occurrence, gets id `base + k`. An abstract word gets the id of the same word
    among its own article's OOVs, else stays [UNK].

    Args:
      art_words, abs_words: [n, None] string; art_ids, abs_ids: matching [n, None] int32
        vocab ids (OOV -> 0).
      base: vocab.size().
      max_oovs: if set, only the first `max_oovs` distinct OOVs of an article get an id;
        later ones stay [UNK] everywhere (the static-shape cap).
    Returns:
      (art_ext [n, None] int32, abs_ext [n, None] int32, art_oovs [n, None] string).
    """
    n = art_ids.nrows()
    a_rows, a_words, a_pos = _oov_tokens(art_words, art_ids)
    b_rows, b_words, b_pos = _oov_tokens(abs_words, abs_ids)
    # Number the distinct OOV strings of the block, then make per-example keys
    # row * U + word: equal keys <=> same word in the same example.
    uniq_words, word_idx = tf.unique(tf.concat([a_words, b_words], 0), out_idx=tf.int64)
    n_uniq = tf.maximum(tf.size(uniq_words, out_type=tf.int64), 1)
    n_a = tf.size(a_words)
    a_keys = a_rows * n_uniq + word_idx[:n_a]
    b_keys = b_rows * n_uniq + word_idx[n_a:]

    # tf.unique keeps first-occurrence order and tokens are in row order, so the distinct
    # keys come grouped by row; a key's rank within its row is k.
    keys, key_idx = tf.unique(a_keys, out_idx=tf.int64)
    key_rows = keys // n_uniq
    per_row = tf.math.bincount(
        tf.cast(key_rows, tf.int32),
        minlength=tf.cast(n, tf.int32),
        maxlength=tf.cast(n, tf.int32),
        dtype=tf.int64,
    )
    row_first = tf.cumsum(per_row, exclusive=True)  # [n] index of each row's first key
    key_k = tf.range(tf.size(keys, out_type=tf.int64)) - tf.gather(row_first, key_rows)

    a_k = tf.gather(key_k, key_idx)
    # Abstract tokens: binary search among the article keys (a sentinel keeps it in range).
    order = tf.argsort(keys)
    sorted_keys = tf.concat([tf.gather(keys, order), [tf.int64.max]], 0)
    sorted_k = tf.concat([tf.gather(key_k, order), [-1]], 0)
    at = tf.searchsorted(sorted_keys, b_keys, out_type=tf.int64)
    b_found = tf.gather(sorted_keys, at) == b_keys
    b_k = tf.where(b_found, tf.gather(sorted_k, at), -1)

    limit = tf.int64.max if max_oovs is None else max_oovs
    a_ext = tf.where(a_k < limit, base + a_k, UNK_ID)
    b_ext = tf.where((b_k >= 0) & (b_k < limit), base + b_k, UNK_ID)
    art_ext = art_ids.with_flat_values(
        tf.tensor_scatter_nd_update(art_ids.flat_values, a_pos, tf.cast(a_ext, tf.int32))
    )
    abs_ext = abs_ids.with_flat_values(
        tf.tensor_scatter_nd_update(abs_ids.flat_values, b_pos, tf.cast(b_ext, tf.int32))
    )

    keep = key_k < limit
    art_oovs = _ragged(
        tf.gather(uniq_words, tf.boolean_mask(keys % n_uniq, keep)),
        tf.boolean_mask(key_rows, keep),
        n,
    )
    return art_ext, abs_ext, art_oovs


def decoder_sequences(abs_ids, target_ids, max_dec_steps: int):
    """Decoder input and target, padded to max_dec_steps (spec 3.1 step 4).

    inp = [START] + seq and target = seq + [STOP], both cut to max_dec_steps, so the
    [STOP] is lost exactly when len(seq) >= max_dec_steps.

    Args:
      abs_ids: [n, None] int32 abstract ids (OOV -> 0); target_ids: the same with the
        extended ids in pointer mode.
    Returns:
      (dec_input [n, max_dec_steps], target [n, max_dec_steps], dec_len [n]) int32.
    """
    seq_len = tf.cast(abs_ids.row_lengths(), tf.int32)
    width = [None, max_dec_steps]
    ids = abs_ids.to_tensor(default_value=PAD_ID, shape=width)  # cuts longer rows
    start = tf.fill(tf.stack([tf.shape(ids)[0], 1]), START_ID)
    dec_input = tf.concat([start, ids[:, : max_dec_steps - 1]], axis=1)
    target = target_ids.to_tensor(default_value=PAD_ID, shape=width)
    at_end = tf.range(max_dec_steps)[None, :] == seq_len[:, None]
    target = tf.where(at_end, STOP_ID, target)
    return dec_input, target, tf.minimum(seq_len + 1, max_dec_steps)


def build_examples(
    article,
    abstract,
    table,
    vocab_size: int,
    max_enc_steps: int,
    max_dec_steps: int,
    pointer_gen: bool,
    max_oovs=None,
):
    """Spec 3.1 for a block of examples.

    Args:
      article, abstract: [n] string, the `.bin` feature values.
      table: `vocab_table(vocab)`; vocab_size: `vocab.size()`.
      max_oovs: the static-shape OOV cap, or None.
    Returns:
      dict with `article` [n], `abstract` [n] (sentences joined by a space),
      `abstract_sents` [n, None] string, `art_oovs` [n, None] string,
      `enc_input`, `enc_input_extend_vocab` [n, None] int32 (<= max_enc_steps long),
      `dec_input`, `target` [n, max_dec_steps] int32 (padded with [PAD]), `dec_len` [n].
    """
    sents = abstract_sentences(abstract)
    abstract_text = tf.strings.unsorted_segment_join(
        sents.flat_values, sents.value_rowids(), sents.nrows(), separator=" "
    )
    # tf.strings.split without `sep` splits on ASCII whitespace only, like the original's
    # Python 2 byte strings (unlike Python 3 str.split).
    art_words = _truncate(tf.strings.split(article), max_enc_steps)
    abs_words = tf.strings.split(abstract_text)
    art_ids = art_words.with_flat_values(table.lookup(art_words.flat_values))
    abs_ids = abs_words.with_flat_values(table.lookup(abs_words.flat_values))
    art_ext, abs_ext, art_oovs = extend_oovs(
        art_words, art_ids, abs_words, abs_ids, vocab_size, max_oovs
    )
    dec_input, target, dec_len = decoder_sequences(
        abs_ids, abs_ext if pointer_gen else abs_ids, max_dec_steps
    )
    return {
        "article": article,
        "abstract": abstract_text,
        "abstract_sents": sents,
        "art_oovs": art_oovs,
        "enc_input": art_ids,
        "enc_input_extend_vocab": art_ext,
        "dec_input": dec_input,
        "target": target,
        "dec_len": dec_len,
    }


PAD_VALUES = {
    "enc_input": PAD_ID,
    "enc_input_extend_vocab": PAD_ID,
    "art_oovs": b"",
    "abstract_sents": b"",
}
