"""Readable text from summary tokens, as TensorFlow ops only: `detokenize.detokenize`
for an exported model (`pointer-generator export`), whose signature must return text.

The same rules, vectorised over a ragged batch of token lists: PTB escapes undone
(`-lrb-` -> `(`, ``` `` ``` -> U+201C, `#` before a number -> U+00A3), a lone `'`
closing the latest U+2018 quote becomes U+2019, no space before punctuation and clitics
or after opening brackets and quotes, "i" as "I", a sentence end right after another
dropped, and each sentence's first word capitalised when it starts with a letter (the
first that starts with a letter or a digit: "6.2 earthquake" stays). `restore_case`
gives a summary's words the capitals they have in its article (`detokenize.case_map`).
Tested against `detokenize.detokenize` and `case_map` (tests/test_graph_text.py).
"""

from __future__ import annotations

import tensorflow as tf

from pointer_generator.data import detokenize as rules

_OPEN_SINGLE, _CLOSE_SINGLE = "\u2018", "\u2019"


def _isin(values: tf.Tensor, members) -> tf.Tensor:
    """bool, same shape as `values`: values[i] is one of `members`."""
    found = tf.zeros_like(values, tf.bool)
    for m in sorted(members):
        found |= tf.equal(values, m)
    return found


def _ragged(values, rowids, nrows):
    return tf.RaggedTensor.from_value_rowids(values, rowids, nrows=nrows, validate=False)


def _same_row_shift(x, rowids, fill):
    """x[i - 1] where position i - 1 is in the same row as i, else `fill` ([N] -> [N])."""
    prev = tf.concat([[fill], x[:-1]], 0)
    prev_row = tf.concat([[-1], rowids[:-1]], 0)
    return tf.where(tf.equal(prev_row, rowids), prev, fill)


def detokenize_batch(tokens: tf.RaggedTensor) -> tf.Tensor:
    """string [n, None] tokens -> string [n]: each row as `detokenize.detokenize` joins it."""
    tokens = tf.ragged.boolean_mask(tokens, tf.strings.length(tokens) > 0)
    # "the . ." -> "the .": a sentence end right after another is dropped.
    words, rowids = tokens.flat_values, tokens.value_rowids()
    end = _isin(words, rules._SENTENCE_END)
    repeated = end & _same_row_shift(end, rowids, False)
    tokens = tf.ragged.boolean_mask(tokens, ~_ragged(repeated, rowids, tokens.nrows()))
    words, rowids = tokens.flat_values, tokens.value_rowids()
    n = tf.shape(words, out_type=tf.int64)[0]

    # PTB escapes; `#` is the pound sign before a number.
    for escape, text in rules._ESCAPES.items():
        words = tf.where(tf.equal(words, escape), text, words)
    following = tf.reverse(
        _same_row_shift(tf.reverse(words, [0]), tf.reverse(rowids, [0]), ""), [0]
    )
    pound = tf.equal(words, "#") & tf.strings.regex_full_match(following, r"\d.*")
    words = tf.where(pound, "\u00a3", words)

    # A lone ' closes a single quote iff the latest quote event before it (an opening
    # U+2018 or another lone ') in its row is an opening one.
    is_open, is_lone = tf.equal(words, _OPEN_SINGLE), tf.equal(words, "'")
    event = is_open | is_lone
    event_pos = tf.where(event)[:, 0]
    event_rows = tf.gather(rowids, event_pos)
    prev_open = _same_row_shift(tf.gather(is_open, event_pos), event_rows, False)
    closes = tf.scatter_nd(event_pos[:, None], prev_open, [n]) & is_lone
    words = tf.where(closes, _CLOSE_SINGLE, words)

    # Spaces: none before punctuation or a clitic, none after an opening bracket or quote.
    no_space_before = _isin(words, rules._NO_SPACE_BEFORE) | _isin(
        tf.strings.lower(words), rules._CLITICS
    )
    words = tf.strings.regex_replace(words, "^i('.*)?$", r"I\1")
    attach_after = _isin(words, rules._NO_SPACE_AFTER)
    first_in_row = ~tf.equal(_same_row_shift(rowids, rowids, -1), rowids)
    no_space = first_in_row | no_space_before | _same_row_shift(attach_after, rowids, False)

    # Capitals: the first word starting with a letter or digit after each sentence end,
    # if it starts with a letter.
    ends = tf.cast(_isin(words, rules._SENTENCE_END), tf.int64)
    # (row, sentence ends before the word): one key per sentence of each row.
    segment, n_segments = _segments(rowids * (n + 1) + tf.cumsum(ends, exclusive=True))
    first_char = tf.strings.substr(words, 0, 1, unit="UTF8_CHAR")
    alpha = tf.strings.regex_full_match(first_char, r"\pL")
    alnum = tf.strings.regex_full_match(first_char, r"[\pL\pN]")
    pos = tf.range(n)
    first_alnum = tf.math.unsorted_segment_min(tf.where(alnum, pos, n), segment, n_segments)
    capital = alpha & tf.equal(pos, tf.gather(first_alnum, segment))
    rest = tf.strings.regex_replace(words, "^.", "")  # all but the first character
    upper = tf.strings.upper(first_char, encoding="utf-8")
    words = tf.where(capital, tf.strings.join([upper, rest]), words)

    spaced = tf.strings.join([tf.where(no_space, "", " "), words])
    return tf.strings.reduce_join(_ragged(spaced, rowids, tokens.nrows()), axis=1)


def _segments(key):
    """(segment id of each element, number of segments) for equal values of `key`."""
    uniq, idx = tf.unique(key, out_idx=tf.int64)
    return idx, tf.size(uniq, out_type=tf.int64)


def restore_case(summaries: tf.RaggedTensor, articles: tf.RaggedTensor) -> tf.RaggedTensor:
    """Summary tokens string [n, None] with their article's capitals: `detokenize.case_map`
    of each row of `articles` (string [n, None], tokenized but not lower-cased) applied to
    the same row of `summaries`, as `detokenize(tokens, casing=)` applies it."""
    words, rows = articles.flat_values, articles.value_rowids()
    first_char = tf.strings.substr(words, 0, 1, unit="UTF8_CHAR")
    alpha = tf.strings.regex_full_match(first_char, r"\pL")
    alnum = tf.strings.regex_full_match(first_char, r"[\pL\pN]")
    end = _isin(words, rules._SENTENCE_END)
    # case_map's `start`: word i starts a sentence unless the latest sentence end or
    # alphanumeric word before it in its row is alphanumeric.
    event = end | alnum
    before = tf.cumsum(tf.cast(event, tf.int64), exclusive=True)  # events before each word
    latest = tf.gather(tf.concat([[0], tf.where(event)[:, 0]], 0), before)
    mid_sentence = (before > 0) & tf.equal(tf.gather(rows, latest), rows) & ~tf.gather(end, latest)
    counted = alpha & mid_sentence
    forms = tf.boolean_mask(words, counted)
    form_rows = tf.strings.as_string(tf.boolean_mask(rows, counted))
    # Each (row, form): how often it occurs, and its first occurrence (tf.unique keeps
    # the order of first occurrences, so a form's index orders the forms as seen).
    form_keys, form_idx, counts = tf.unique_with_counts(
        tf.strings.join([form_rows, forms], "\x00"), out_idx=tf.int64
    )
    n_forms = tf.size(form_keys, out_type=tf.int64)
    first = tf.math.unsorted_segment_min(
        tf.range(tf.size(forms, out_type=tf.int64)), form_idx, n_forms
    )
    form = tf.gather(forms, first)
    lower = tf.strings.lower(form, encoding="utf-8")
    lower_keys = tf.strings.join([tf.gather(form_rows, first), lower], "\x00")
    group, n_groups = _segments(lower_keys)
    # Counter.most_common(1): the most frequent form, the first seen among equals.
    score = counts * (n_forms + 1) - tf.range(n_forms)
    chosen = tf.equal(score, tf.gather(tf.math.unsorted_segment_max(score, group, n_groups), group))
    chosen &= ~tf.equal(form, lower)
    map_keys, map_forms = tf.boolean_mask(lower_keys, chosen), tf.boolean_mask(form, chosen)

    # Look the summary words up: one tf.unique over the map's keys and the words' keys.
    s_words = summaries.flat_values
    s_keys = tf.strings.join([tf.strings.as_string(summaries.value_rowids()), s_words], "\x00")
    keys, idx = tf.unique(tf.concat([map_keys, s_keys], 0), out_idx=tf.int64)
    m = tf.size(map_keys, out_type=tf.int64)
    table = tf.tensor_scatter_nd_update(
        tf.fill(tf.shape(keys, out_type=tf.int64), ""), idx[:m, None], map_forms
    )
    cased = tf.gather(table, idx[m:])
    return summaries.with_flat_values(tf.where(tf.equal(cased, ""), s_words, cased))
