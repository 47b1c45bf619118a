"""Training losses exactly as the original computes them (spec 4.9), with a safe path.

The pointer-mode NLL needs only P(w*_t), the probability of each gold token, which is
  p_gen * P_vocab(w*_t) + (1 - p_gen) * sum_{i: w_i = w*_t} a_i      (paper eq. 9)
so training never builds the [batch, dec_len, vocab + oovs] final distribution: the
vocabulary term is log P_vocab(w*_t) and the copy term a masked sum over the article
positions.

`fused_gold_log_prob` computes log P_vocab(w*_t) with a hand-written gradient through
the vocabulary projection (the default; `hps.fused_recurrence`): one fused pass over
the [batch * dec_len, vocab] logits forward and one backward, besides the matmuls.
`gold_vocab_log_prob` (a gather from the log-softmax, autodiff'd) is the plain version
that the tests and `--fused_recurrence=0` use.
"""

import math

import tensorflow as tf

# Floor of log P(w*) in the safe path: a gold token the model gives zero probability costs
# -log(1e-30) = 69 nats instead of inf (and its gradient is finite).
SAFE_LOG_FLOOR = math.log(1e-30)
_TINY = 1e-30


def mask_and_avg(values, mask, safe: bool = True):
    """The original `_mask_and_avg`: mean over the batch of per-example masked means.

    Args:
      values: [batch, dec_len] per-step losses.
      mask: [batch, dec_len] float decoder padding mask.
      safe: divide by max(length, 1) so an all-padding row contributes 0 instead of NaN.
    Returns:
      scalar.
    """
    lengths = tf.reduce_sum(mask, axis=1)
    if safe:
        lengths = tf.maximum(lengths, 1.0)
    per_example = tf.reduce_sum(values * mask, axis=1) / lengths
    return tf.reduce_mean(per_example)


def copy_mass(attn, enc_batch_extend_vocab, targets):
    """sum_{i: ext_id_i = target_t} a_{t,i}: the attention mass on the gold token.

    Args:
      attn: [batch, dec_len, enc_len] attention distributions.
      enc_batch_extend_vocab: [batch, enc_len] int32 extended article ids.
      targets: [batch, dec_len] int32 gold (extended) ids.
    Returns:
      [batch, dec_len].
    """
    same = tf.equal(enc_batch_extend_vocab[:, None, :], targets[:, :, None])
    return tf.reduce_sum(attn * tf.cast(same, attn.dtype), axis=-1)


def gold_vocab_log_prob(vocab_log_probs, targets):
    """log P_vocab(target) for in-vocabulary targets, -inf-like (-1e30) for article OOVs.

    Args:
      vocab_log_probs: [batch, dec_len, vocab] log-softmax of the vocabulary logits.
      targets: [batch, dec_len] int32 extended ids.
    """
    vocab = tf.shape(vocab_log_probs)[-1]
    in_vocab = targets < vocab
    gathered = tf.gather(vocab_log_probs, tf.minimum(targets, vocab - 1), batch_dims=2)
    return tf.where(in_vocab, gathered, tf.constant(-1e30, vocab_log_probs.dtype))


@tf.function(jit_compile=True, reduce_retracing=True, autograph=False)
def _row_log_sum_exp(logits):
    """log sum_j exp(logits[r, j]) per row: [rows, V] -> [rows], one fused XLA pass
    (TensorFlow's reduce_logsumexp materialises logits - max and its exp)."""
    top = tf.reduce_max(logits, axis=1)
    top = tf.where(tf.math.is_finite(top), top, tf.zeros_like(top))
    return top + tf.math.log(tf.reduce_sum(tf.exp(logits - top[:, None]), axis=1))


@tf.function(jit_compile=True, reduce_retracing=True, autograph=False)
def _scaled_softmax_minus_onehot(logits, log_norm, labels, scale):
    """scale[r] * (softmax(logits[r]) - onehot(labels[r])): [rows, V], one fused pass."""
    onehot = tf.equal(tf.range(tf.shape(logits)[1])[None, :], labels[:, None])
    probs = tf.exp(logits - log_norm[:, None])
    return scale[:, None] * tf.where(onehot, probs - 1.0, probs)


def fused_gold_log_prob(logits, out, kernel, bias, targets, compute_dtype=None):
    """log P_vocab of the targets from logits = out @ kernel + bias, with a hand-written
    gradient that goes straight to out, kernel and bias.

    Forward: the log-normaliser of each row (one fused pass) and the target's logit.
    Backward, with g the gradient of the gold log-probabilities [rows]: d logits =
    -g * (softmax - onehot(target)), built in one fused pass, then d out = d logits
    kernel^T, d kernel = out^T d logits, d bias = the column sums. Autodiff of
    log-softmax + gather instead writes the log-softmax, a dense scatter of the gathered
    gradient and the softmax gradient, each a [rows, vocab] pass (the vocabulary part of
    a paper-config step: 954-995 vs 719-729 ms; experiments/results/performance_history.md). Logits
    themselves get no gradient from here (whatever else reads them differentiates them
    as usual).

    Args:
      logits: [batch, dec_len, vocab], computed by the caller from out, kernel and bias.
      out: [batch, dec_len, hidden] decoder outputs.
      kernel: [hidden, vocab]; bias: [vocab] (variables or tensors).
      targets: [batch, dec_len] int32 extended ids; ids >= vocab (article OOVs) get
        log P_vocab = -1e30 and no gradient, as in `gold_vocab_log_prob`.
      compute_dtype: the backward matmuls' input dtype (bfloat16 for mixed precision);
        None = the kernel's dtype. Gradients have the dtypes of out, kernel and bias.
    Returns:
      [batch, dec_len] log P_vocab(targets).
    """
    shape = tf.shape(targets)
    vocab = tf.shape(logits)[-1]
    targets = tf.reshape(targets, [-1])
    in_vocab = targets < vocab
    labels = tf.minimum(targets, vocab - 1)
    # Variables as tensors: custom_gradient then treats them as inputs (each read is on
    # the tape, so their gradients reach them as usual).
    kernel, bias = tf.convert_to_tensor(kernel), tf.convert_to_tensor(bias)
    compute_dtype = compute_dtype or kernel.dtype

    @tf.custom_gradient
    def run(flat_logits, x, kernel, bias):
        log_norm = _row_log_sum_exp(flat_logits)
        gold = tf.gather(flat_logits, labels, batch_dims=1) - log_norm

        def grad(d_gold):
            scale = -tf.where(in_vocab, d_gold, tf.zeros_like(d_gold))  # [rows]
            d_logits = _scaled_softmax_minus_onehot(flat_logits, log_norm, labels, scale)
            d_b = tf.reduce_sum(d_logits, axis=0)
            d_logits = tf.cast(d_logits, compute_dtype)
            d_x = tf.matmul(d_logits, tf.cast(kernel, compute_dtype), transpose_b=True)
            d_k = tf.matmul(tf.cast(x, compute_dtype), d_logits, transpose_a=True)
            return None, tf.cast(d_x, x.dtype), tf.cast(d_k, kernel.dtype), d_b

        return tf.where(in_vocab, gold, tf.constant(-1e30, gold.dtype)), grad

    flat = run(
        tf.reshape(logits, [-1, vocab]), tf.reshape(out, [-1, tf.shape(out)[-1]]), kernel, bias
    )
    return tf.reshape(flat, shape)


def pointer_nll(
    gold_vocab, p_gen_logit, attn, enc_batch_extend_vocab, targets, dec_mask, safe: bool = True
):
    """Pointer-mode loss: per-example average of -log P(w*_t), then batch mean.

    Args:
      gold_vocab: [batch, dec_len] log P_vocab(w*_t), -1e30 for article OOVs
        (`gold_vocab_log_prob` or `fused_gold_log_prob`).
      p_gen_logit: [batch, dec_len] pre-sigmoid generation probability.
      attn: [batch, dec_len, enc_len] attention distributions.
      enc_batch_extend_vocab: [batch, enc_len] int32.
      targets: [batch, dec_len] int32 extended target ids.
      dec_mask: [batch, dec_len] float.
      safe: False computes the original's -log(p_gen P_vocab + (1 - p_gen) copy) with no
        guard; True the same value in log space with a floor (finite loss and gradients).
    Returns:
      (loss scalar, per-step NLL [batch, dec_len]).
    """
    mass = copy_mass(attn, enc_batch_extend_vocab, targets)
    if safe:
        log_gen = tf.math.log_sigmoid(p_gen_logit) + gold_vocab
        log_copy = tf.math.log_sigmoid(-p_gen_logit) + tf.math.log(tf.maximum(mass, _TINY))
        log_p = tf.maximum(
            tf.math.reduce_logsumexp(tf.stack([log_gen, log_copy]), axis=0), SAFE_LOG_FLOOR
        )
    else:
        p_gen = tf.sigmoid(p_gen_logit)
        log_p = tf.math.log(p_gen * tf.exp(gold_vocab) + (1.0 - p_gen) * mass)
    step_nll = -log_p
    return mask_and_avg(step_nll, dec_mask, safe), step_nll


def baseline_nll(gold_vocab, dec_mask):
    """Baseline loss: token-level average cross-entropy over all real tokens of the batch
    (the original's `sequence_loss`), dividing by (number of real tokens + 1e-12).

    Args:
      gold_vocab: [batch, dec_len] log P_vocab(target) (targets are < vocab in baseline
        mode); dec_mask: [batch, dec_len] float.
    Returns:
      (loss scalar, per-step NLL [batch, dec_len]).
    """
    step_nll = -gold_vocab
    total = tf.reduce_sum(step_nll * dec_mask)
    return total / (tf.reduce_sum(dec_mask) + 1e-12), step_nll


def coverage_step_losses(attn):
    """covloss_t = sum_i min(a_{t,i}, c_{t,i}) with c_t = sum_{t' < t} a_{t'} (eq. 12).

    Args:
      attn: [batch, dec_len, enc_len].
    Returns:
      [batch, dec_len].
    """
    coverage = tf.cumsum(attn, axis=1, exclusive=True)
    return tf.reduce_sum(tf.minimum(attn, coverage), axis=-1)


def with_coverage_loss(loss, coverage_loss, weight):
    """Eq. 13: loss_t + lambda * covloss_t, averaged as its terms are (what a coverage
    model minimises; `weight` is lambda, --cov_loss_wt)."""
    return loss + weight * coverage_loss
