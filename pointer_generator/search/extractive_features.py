"""ABS+'s extractive features (Rush et al. 2015 §5; spec abs-ras.md §2.7): a log-linear
score added to every next word during the search,

    s(y_{i+1}) = α_lm log p(y_{i+1} | x, y_c) + α_uni f_uni + α_bi f_bi + α_tri f_tri
                 + α_ooo f_ooo + α_length

    f_uni = 1{∃j. y_{i+1} = x_j}                          (unigram match)
    f_bi  = 1{∃j. (y_i, y_{i+1}) = (x_{j-1}, x_j)}         (bigram match)
    f_tri = 1{∃j. (y_{i-1}, y_i, y_{i+1}) = (x_{j-2}, x_{j-1}, x_j)}   (trigram match)
    f_ooo = 1{∃j' < j. y_i = x_j, y_{i+1} = x_{j'}}       (out of order)

with the summary's history starting as [START] [START]. `namas=True` reproduces the
official code instead (spec §2.7): the input is padded with three [START] and three
[STOP], and its "bigram" and "trigram" tables are the skip-grams (x_{j-2}, x_j) and
(x_{j-3}, x_{j-2}, x_j) that its off-by-one history builds (its tuned weights were fitted
with them).

One NumPy implementation (`hypothesis_features`, the feature totals of a finished
hypothesis, which MERT reads) and one TensorFlow implementation (`feature_scores`, the
weighted score of every word of the vocabulary for every hypothesis of the search); the
tests hold both to the spec's hand-made table.
"""

from __future__ import annotations

import hashlib

import numpy as np
import tensorflow as tf

from pointer_generator.data.text_files import text_lines
from pointer_generator.data.vocab import START_ID, STOP_ID
from pointer_generator.errors import DataError

# The weights: the model's log-probability, then the five indicator counts and length.
FEATURES = ("lm", "uni", "bi", "tri", "ooo", "length")
INDICATORS = FEATURES[1:]
# The weights NAMAS ships (tuning/SDecoder_cfg.txt), tuned with namas=True on DUC-2003.
NAMAS_WEIGHTS = {
    "lm": 1.0,
    "uni": 4.84922778048135,
    "bi": 1.2132386742991166,
    "tri": -13.382831610766107,
    "ooo": -0.5293249226416208,
    "length": 0.0,
}
# The largest weight a file may give: scores are float32 (overflow at 3.4e38) sums of a
# weight times a count of up to max_dec_steps n-grams, plus log-probabilities; MERT's
# weights are of order 1-10. 1e6 keeps every score finite with room to spare.
MAX_WEIGHT = 1e6
PAD = 3  # NAMAS wraps the input as <s> <s> <s> x </s> </s> </s>


# ------------------------------------------------------------------------ weight files
def read_weights(path: str) -> dict:
    """{feature: weight} from a `name value` file (NAMAS's names and case accepted;
    `#` comments). Features it does not name weigh 0 (lm: 1)."""
    weights = {"lm": 1.0, **dict.fromkeys(INDICATORS, 0.0)}
    try:
        with open(path, encoding="utf-8") as f:
            lines = text_lines(f.read())
    except (OSError, UnicodeDecodeError) as e:
        raise DataError(
            f"cannot read feature weights {path}: {getattr(e, 'strerror', e)}"
        ) from None
    for number, line in enumerate(lines, start=1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        name = words[0].lower()
        if name not in weights or len(words) != 2:
            raise DataError(
                f"{path}:{number}: expected '<feature> <weight>' with a feature among "
                f"{', '.join(FEATURES)}, got {line.strip()!r}"
            )
        try:
            weights[name] = float(words[1])
        except ValueError:
            raise DataError(f"{path}:{number}: {words[1]!r} is not a number") from None
        if not abs(weights[name]) <= MAX_WEIGHT:  # NaN fails this too
            raise DataError(
                f"{path}:{number}: the weight {words[1]} is out of range: a weight must be a "
                f"finite number within +-{MAX_WEIGHT:g} (scores are float32 sums of up to "
                "hundreds of weighted feature counts; larger weights overflow them)"
            )
    if weights["lm"] <= 0:
        raise DataError(f"{path}: the lm weight must be positive, got {weights['lm']}")
    return weights


def format_weights(weights: dict) -> str:
    return "".join(f"{name} {float(weights[name])!r}\n" for name in FEATURES)


def features_suffix(weights: dict | None, namas: bool = False) -> str:
    """`_absplus-<8 hex digits of the weights>` (+ `-namas`) for decode folder names."""
    if weights is None:
        return ""
    digest = hashlib.sha256(format_weights(weights).encode("utf-8")).hexdigest()[:8]
    return f"_absplus-{digest}" + ("-namas" if namas else "")


# ------------------------------------------------------------------------ NumPy
def _article(article, namas: bool) -> list[int]:
    article = [int(a) for a in article]
    return [START_ID] * PAD + article + [STOP_ID] * PAD if namas else article


def article_tables(article, namas: bool = False) -> tuple[set, set, set, set]:
    """(unigrams, bigrams, trigrams, out-of-order pairs (a, b)) of an input's ids."""
    x = _article(article, namas)
    lag = 1 if not namas else 2  # NAMAS's skip-grams
    uni = set(x)
    bi = {(x[j - lag], x[j]) for j in range(lag, len(x))}
    tri = {(x[j - lag - 1], x[j - lag], x[j]) for j in range(lag + 1, len(x))}
    ooo = {(x[j], x[jp]) for j in range(len(x)) for jp in range(j)}
    return uni, bi, tri, ooo


def hypothesis_features(article, summary, namas: bool = False) -> np.ndarray:
    """float64 [5]: the uni, bi, tri, ooo and length totals of a summary's ids (its
    final [STOP] included if it has one, as the search scored it)."""
    uni, bi, tri, ooo = article_tables(article, namas)
    history = [START_ID, START_ID] + [int(w) for w in summary]
    out = np.zeros(len(INDICATORS))
    for i in range(2, len(history)):
        before2, before, w = history[i - 2], history[i - 1], history[i]
        out += (w in uni, (before, w) in bi, (before2, before, w) in tri, (before, w) in ooo, 1)
    return out


# ------------------------------------------------------------------------ TensorFlow
def _indicator(ids, hit, vocab_size: int):
    """[R, V] float: 1 where a row's hit position holds that word. ids, hit: [R, M]."""
    rows = tf.broadcast_to(tf.range(tf.shape(ids)[0])[:, None], tf.shape(ids))
    index = tf.reshape(tf.stack([rows, ids], axis=-1), [-1, 2])
    updates = tf.reshape(tf.cast(hit, tf.float32), [-1])
    zeros = tf.zeros(tf.stack([tf.shape(ids)[0], vocab_size]), tf.float32)
    return tf.tensor_scatter_nd_max(zeros, index, updates)


def _shift(x, n: int, fill):
    """x[:, j - n] at position j (fill where j < n). x: [R, M]."""
    if n == 0:
        return x
    pad = tf.fill(tf.stack([tf.shape(x)[0], n]), tf.cast(fill, x.dtype))
    return tf.concat([pad, x[:, :-n]], axis=1)


def padded_article(ids, mask, namas: bool):
    """The input as the features read it: [S, M'] ids and their real-position mask."""
    ids, mask = tf.cast(ids, tf.int32), tf.cast(mask, tf.bool)
    if not namas:
        return ids, mask
    rows = tf.shape(ids)[0]
    lengths = tf.reduce_sum(tf.cast(mask, tf.int32), axis=1)
    width = tf.shape(ids)[1] + 2 * PAD
    pos = tf.range(width)[None, :] - PAD  # position in the unpadded input
    inside = (pos >= 0) & (pos < lengths[:, None])
    index = tf.broadcast_to(tf.clip_by_value(pos, 0, tf.shape(ids)[1] - 1), [rows, width])
    gathered = tf.gather(ids, index, batch_dims=1)
    out = tf.where(inside, gathered, tf.where(pos < 0, START_ID, STOP_ID))
    return out, pos < lengths[:, None] + PAD


def feature_scores(
    ids, mask, history, weights: dict, vocab_size: int, beam_size: int, namas: bool = False
):
    """[N, V]: Σ_k α_k f_k(w) for every word w after each hypothesis (N = S * K rows,
    hypothesis k of input s at row s*K + k).

    ids, mask: the inputs [S, M]; history: [N, 2] each hypothesis' (y_{i-1}, y_i).
    """
    x, real = padded_article(ids, mask, namas)
    lag = 2 if namas else 1
    total = 0.0
    if weights["uni"]:
        uni = _indicator(x, real, vocab_size)  # [S, V]
        total += weights["uni"] * tf.repeat(uni, beam_size, axis=0)
    x = tf.repeat(x, beam_size, axis=0)  # [N, M']
    real = tf.repeat(real, beam_size, axis=0)
    before2, before = history[:, :1], history[:, 1:]
    if weights["bi"]:
        hit = real & tf.equal(_shift(x, lag, -1), before)
        total += weights["bi"] * _indicator(x, hit, vocab_size)
    if weights["tri"]:
        hit = (
            real & tf.equal(_shift(x, lag, -1), before) & tf.equal(_shift(x, lag + 1, -1), before2)
        )
        total += weights["tri"] * _indicator(x, hit, vocab_size)
    if weights["ooo"]:
        occurs = tf.cast(real & tf.equal(x, before), tf.int32)
        # Positions j' with an occurrence of y_i after them.
        later = tf.cumsum(occurs, axis=1, exclusive=True, reverse=True) > 0
        total += weights["ooo"] * _indicator(x, real & later, vocab_size)
    total += weights["length"]
    return tf.broadcast_to(tf.cast(total, tf.float32), tf.stack([tf.shape(history)[0], vocab_size]))
