"""The wrong-input controls of `eval --single_pass --input_gap` (`make_dataset(control=)`):
every example paired with another example's article ("articles": does the model read its
input?) or its decoder fed another example's summary words, its targets unchanged
("summaries": does it read the words it has written?).

Example i of the n examples of a single pass is paired with example i + n // 2 (mod n): a
derangement that pairs no example with one beside it (a story's pairs stand side by side
in a file: 219 of the real-text test split's adjacent pairs share their source sentence).
"""

from __future__ import annotations

import tensorflow as tf

from pointer_generator.data import example_ops

CONTROLS = ("articles", "summaries")

# The stages use explicit tf.cond; skipping AutoGraph's conversion saves start-up time.
_graph_fn = tf.autograph.experimental.do_not_convert


def offset(texts: tf.data.Dataset) -> int:
    """n // 2 for the n examples of a finite stream (1 for two; 0 for one: no other)."""
    n = int(texts.reduce(tf.constant(0, tf.int64), lambda count, _: count + 1))
    return max(1, n // 2) if n > 1 else 0


def _shifted(stream: tf.data.Dataset, by: int) -> tf.data.Dataset:
    """Element i + by (mod n) beside element i of a finite stream of n."""
    return tf.data.Dataset.zip(stream, stream.skip(by).concatenate(stream.take(by)))


def other_articles(texts: tf.data.Dataset, by: int) -> tf.data.Dataset:
    """Abstract i with article i + by (mod n) of a stream of {'article', 'abstract'}."""
    return _shifted(texts, by).map(
        lambda this, nxt: {**this, "article": nxt["article"]},
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )


def other_decoder_inputs(examples: tf.data.Dataset, by: int) -> tf.data.Dataset:
    """Example i with the decoder inputs of example i + by (mod n): [START], then that
    summary's words, cycled where it is shorter, so that every position example i's
    targets score is fed a real word (not [PAD], whose embedding never trains); its
    targets and their mask are unchanged."""

    def swap(this, nxt):
        width = tf.shape(this["dec_input"])[0]  # (every example's: max_dec_steps)
        words = nxt["dec_input"][1 : nxt["dec_len"]]
        words = tf.cond(
            tf.size(words) > 0,
            lambda: words,
            lambda: tf.constant([example_ops.UNK_ID], words.dtype),
        )
        cycled = tf.gather(words, tf.range(width - 1) % tf.size(words))
        return {**this, "dec_input": tf.concat([this["dec_input"][:1], cycled], 0)}

    return _shifted(examples, by).map(
        _graph_fn(swap), num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
    )
