"""The global gradient norm that training clips by (spec 1.6; `tf.clip_by_global_norm`).

The original builds its gradients with `tf.gradients` and clips them with
`tf.clip_by_global_norm(grads, max_grad_norm)`. `tf.global_norm` takes the norm of what
it is given, and for the embedding that is a `tf.IndexedSlices`: one row per token looked
up in the batch (the encoder's [batch * enc_len] lookups and the decoder's [batch *
dec_len], concatenated; a word that occurs twice has two rows, not their sum). So

    original norm^2 = sum over dense gradients g of |g|^2
                      + sum over lookups (b, t) of |dL/d emb(x_bt)|^2,

which is not the norm of the summed (dense) embedding gradient: |a + b|^2 differs from
|a|^2 + |b|^2 by 2 a.b for every pair of occurrences of the same word. A TF2 gradient tape
returns the embedding's gradient in the same per-lookup form, so both norms can be taken
from it. Adagrad applies the summed rows in both implementations; only the norm, hence the
clipping factor min(1, max_grad_norm / norm), depends on the choice.

With several replicas every lookup belongs to exactly one replica, so the per-lookup sum
of squares is the sum of the replicas' sums, while dense gradients are summed first and
then squared.
"""

from __future__ import annotations

import tensorflow as tf


def split_gradients(grads) -> tuple[list[tf.Tensor], tf.Tensor, tf.Tensor]:
    """Dense gradients and the per-lookup part of the original's norm.

    Args:
      grads: a tape's gradients (Tensors, `tf.IndexedSlices` or None).
    Returns:
      (dense, row_sq, is_rows): `dense` the gradients as dense tensors (None stays None;
      duplicate rows of an IndexedSlices summed, as the optimizer applies them); `row_sq`
      a float32 scalar, the sum of squares of every IndexedSlices row; `is_rows` a bool
      vector [len(grads)], True where the gradient came as rows (so its dense form is left
      out of the original norm).
    """
    dense, row_sq, is_rows = [], tf.constant(0.0, tf.float32), []
    for g in grads:
        rows = isinstance(g, tf.IndexedSlices)
        if rows:
            row_sq += tf.reduce_sum(tf.square(tf.cast(g.values, tf.float32)))
        dense.append(None if g is None else tf.convert_to_tensor(g))
        is_rows.append(rows)
    return dense, row_sq, tf.constant(is_rows, tf.bool, shape=[len(is_rows)])


def global_norm(dense_grads, row_sq, is_rows, mode: str = "original") -> tf.Tensor:
    """The norm to clip by.

    Args:
      dense_grads: list of dense gradients (all-reduced over replicas).
      row_sq: scalar, the per-lookup sum of squares (all-reduced, i.e. summed).
      is_rows: bool [len(dense_grads)] from `split_gradients`.
      mode: "original" (TF1's `tf.global_norm` over the per-lookup rows) or "dense" (the
        norm of the dense gradients, `tf.linalg.global_norm`).
    Returns:
      float32 scalar.
    """
    if mode == "dense":
        return tf.linalg.global_norm(dense_grads)
    if mode != "original":
        raise ValueError(f"unknown gradient norm mode {mode!r}")
    squares = [tf.reduce_sum(tf.square(tf.cast(g, tf.float32))) for g in dense_grads]
    dense_sq = tf.reduce_sum(tf.where(is_rows, tf.zeros_like(squares), tf.stack(squares)))
    return tf.sqrt(dense_sq + row_sq)
