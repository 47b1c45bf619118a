"""The Keras model, loaded from a TF1-named checkpoint, against the NumPy oracle.

Random weights are written under the original's variable names (both TF naming schemes),
loaded through `tf1_checkpoint`, and the model's encoder states, attention, p_gen, final
distribution, NLL and coverage loss are compared with `numpy_reference` (float64) on a
batch built from real CNN/DM examples with the batcher rules of spec 3.1.
"""

from __future__ import annotations

import functools
import gzip
import json
import os

import numpy as np
import pytest
import tensorflow as tf

import pointer_generator as pg
from pointer_generator.models.tf1_checkpoint import load_tf1_checkpoint, save_tf1_arrays
from tests import numpy_reference as ref

VOCAB_SIZE = 500
HIDDEN, EMB = 10, 8  # distinct sizes so a transposed or mis-split matrix cannot fit
MAX_DEC = 12
# Rows of the batch: (line of cnndm_sample, article truncation). Line 3 has a 9-word
# abstract (so its target ends in [STOP] and is padded); the third row is cut shorter to
# stand in for a short article, so the encoder sees padding (a bucketed batch would).
ROWS = ((0, 40), (3, 40), (1, 23))
DECODE_STEPS = 5
RTOL = 1e-5  # float32 model vs float64 oracle
START, STOP, PAD, UNK = 2, 3, 1, 0

CONFIGS = [  # (pointer_gen, coverage, tf_version)
    (False, False, "1.0"),
    (True, False, "1.2.1"),
    (True, True, "1.0"),
    (True, True, "1.2.1"),
]


@functools.lru_cache(maxsize=4)
def _real_batch(cnndm_path: str, vocab_path: str, pointer_gen: bool) -> dict:
    """A batch built with the rules of spec 3.1/3.2 from a few JSONL examples."""
    vocab = pg.Vocab(vocab_path, VOCAB_SIZE)
    wanted = {line for line, _ in ROWS}
    records = {}
    with gzip.open(cnndm_path, "rt", encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i in wanted:
                records[i] = json.loads(line)
            if len(records) == len(wanted):
                break
    enc, ext, dec, tgt, oov_counts = [], [], [], [], []
    for line, cap in ROWS:
        article = records[line]["article"].split()[:cap]
        abstract = " ".join(s.strip() for s in records[line]["abstract"]).split()
        ids = [vocab.word2id(w) for w in article]
        oovs = []
        for w in article:
            if vocab.word2id(w) == UNK and w not in oovs:
                oovs.append(w)
        ext_ids = [
            vocab.size() + oovs.index(w) if vocab.word2id(w) == UNK else vocab.word2id(w)
            for w in article
        ]
        abs_ids = [vocab.word2id(w) for w in abstract]
        if pointer_gen:
            abs_ext = [
                vocab.size() + oovs.index(w) if i == UNK and w in oovs else i
                for w, i in zip(abstract, abs_ids, strict=True)
            ]
        else:
            abs_ext = abs_ids
        inp, target = [START] + abs_ids, list(abs_ext)
        if len(inp) > MAX_DEC:
            inp, target = inp[:MAX_DEC], target[:MAX_DEC]
        else:
            target.append(STOP)
        enc.append(ids), ext.append(ext_ids), dec.append(inp), tgt.append(target)
        oov_counts.append(len(oovs))
    batch_size, enc_len = len(ROWS), max(len(x) for x in enc)

    def pad(rows, length):
        out = np.full((batch_size, length), PAD, np.int32)
        for b, r in enumerate(rows):
            out[b, : len(r)] = r
        return out

    enc_lens = np.array([len(x) for x in enc], np.int32)
    dec_lens = np.array([len(x) for x in dec], np.int32)
    batch = {
        "enc_batch": pad(enc, enc_len),
        "enc_lens": enc_lens,
        "enc_padding_mask": (np.arange(enc_len)[None] < enc_lens[:, None]).astype(np.float32),
        "enc_batch_extend_vocab": pad(ext, enc_len) if pointer_gen else pad(enc, enc_len),
        "max_art_oovs": np.int32(max(oov_counts) if pointer_gen else 0),
        "dec_batch": pad(dec, MAX_DEC),
        "target_batch": pad(tgt, MAX_DEC),
        "dec_padding_mask": (np.arange(MAX_DEC)[None] < dec_lens[:, None]).astype(np.float32),
    }
    # The batch must exercise what the test claims: padding on both sides, copy targets.
    assert batch["enc_padding_mask"].min() == 0 and batch["dec_padding_mask"].min() == 0
    if pointer_gen:
        assert (batch["target_batch"] >= VOCAB_SIZE).any()
    return batch


@pytest.fixture
def real_batch(cnndm_sample_path, vocab_200k_path):
    return functools.partial(_real_batch, cnndm_sample_path, vocab_200k_path)


def _tf_batch(batch: dict) -> dict:
    return {k: tf.constant(v) for k, v in batch.items()}


def _model_from_tf1(tmp_path, pointer_gen, coverage, tf_version, seed=0, **hps_changes):
    """Random TF1 weights -> checkpoint on disk -> loaded model. Returns (model, params)."""
    rng = np.random.default_rng(seed)
    params = ref.random_tf1_params(rng, VOCAB_SIZE, HIDDEN, EMB, pointer_gen, coverage, tf_version)
    prefix = save_tf1_arrays(params, os.path.join(tmp_path, f"model.ckpt-{seed}"))
    assert dict(tf.train.list_variables(prefix)) == {k: list(v.shape) for k, v in params.items()}
    hps = pg.HParams(
        hidden_dim=HIDDEN,
        emb_dim=EMB,
        pointer_gen=pointer_gen,
        coverage=coverage,
        vocab_size=VOCAB_SIZE,
        **hps_changes,
    )
    model = pg.PointerGeneratorModel(hps, VOCAB_SIZE).build_weights()
    result = load_tf1_checkpoint(model, str(tmp_path))
    assert result.tf_version == tf_version
    return model, params


def _close(actual, expected, rtol=RTOL, atol=0.0, what=""):
    np.testing.assert_allclose(
        np.asarray(actual, np.float64), expected, rtol=rtol, atol=atol, err_msg=what
    )


@pytest.mark.parametrize("pointer_gen,coverage,tf_version", CONFIGS)
def test_training_forward_matches_oracle(tmp_path, real_batch, pointer_gen, coverage, tf_version):
    batch = real_batch(pointer_gen)
    model, params = _model_from_tf1(tmp_path, pointer_gen, coverage, tf_version)
    want = ref.forward(params, batch, pointer_gen, coverage)
    tb = _tf_batch(batch)

    enc = model.encode(tb["enc_batch"], tb["enc_padding_mask"])
    # Encoder outputs are zero past each length in the original; tiny absolute slack for
    # entries that are exactly 0 there.
    _close(enc.states, want["enc"]["states"], atol=1e-7, what="encoder states")
    _close(enc.c, want["enc"]["c"], atol=1e-7, what="initial c")
    _close(enc.h, want["enc"]["h"], atol=1e-7, what="initial h")

    out = model(tb)
    attn = out["attn_dists"].numpy()
    assert np.all(attn[batch["enc_padding_mask"][:, None, :].repeat(MAX_DEC, 1) == 0] == 0)
    _close(attn, want["attn"], atol=1e-9, what="attention")
    _close(out["p_gens"], want["p_gens"], what="p_gen")
    final = model.final_distributions(tb, out).numpy()
    _close(final, want["final_dists"], atol=1e-10, what="final distribution")
    m = batch["dec_padding_mask"] > 0
    _close(out["step_nll"].numpy()[m], want["step_nll"][m], what="per-step NLL")
    _close(out["loss"], want["loss"], what="loss")
    _close(out["coverage_loss"], want["coverage_loss"], what="coverage loss")
    _close(out["total_loss"], want["total_loss"], what="total loss")
    if coverage:
        assert want["coverage_loss"] > 1e-3  # the comparison is not 0 == 0
    if pointer_gen:
        # Training never builds P_final (losses.pointer_nll); it must still equal
        # -log P_final[w*] gathered from the model's own full distribution, at every step.
        gold = np.take_along_axis(
            final.astype(np.float64), batch["target_batch"][:, :, None], axis=2
        )[:, :, 0]
        _close(out["step_nll"], -np.log(gold), what="P(w*) paths disagree")
        _close(final.sum(-1), np.ones(final.shape[:2]), what="final rows sum to 1")


@pytest.mark.parametrize("pointer_gen,coverage,tf_version", CONFIGS[:3])
def test_decode_step_original_matches_oracle(
    tmp_path, real_batch, pointer_gen, coverage, tf_version
):
    """decode_attention="original" is the TF1 decode graph (spec 4.12), step by step."""
    batch = real_batch(pointer_gen)
    model, params = _model_from_tf1(
        tmp_path, pointer_gen, coverage, tf_version, seed=2, decode_attention="original"
    )
    tb = _tf_batch(batch)
    enc = model.encode(tb["enc_batch"], tb["enc_padding_mask"])
    carry = model.initial_carry(enc)
    r_enc = ref.encode(params, batch["enc_batch"], batch["enc_lens"])
    c, h = r_enc["c"], r_enc["h"]
    cov = np.zeros(batch["enc_batch"].shape)
    max_oovs = int(batch["max_art_oovs"])
    for t in range(DECODE_STEPS):
        tokens = batch["dec_batch"][:, t]
        final, attn, p_gen, carry = model.decode_step(
            enc, tb["enc_batch_extend_vocab"], tb["max_art_oovs"], tf.constant(tokens), carry
        )
        w_final, w_attn, w_pgen, c, h, cov = ref.decode_step_original(
            params,
            r_enc,
            batch["enc_padding_mask"],
            batch["enc_batch_extend_vocab"],
            max_oovs,
            tokens,
            c,
            h,
            cov,
            pointer_gen,
            coverage,
        )
        _close(attn, w_attn, atol=1e-9, what=f"attention at step {t}")
        _close(final, w_final, atol=1e-10, what=f"final distribution at step {t}")
        _close(p_gen, w_pgen, what=f"p_gen at step {t}")
        _close(carry["c"], c, atol=1e-7, what=f"c at step {t}")
        _close(carry["h"], h, atol=1e-7, what=f"h at step {t}")
        if coverage:
            _close(carry["coverage"], cov, atol=1e-9, what=f"coverage at step {t}")
        if t == 0 and pointer_gen:
            # The original's first step differs from training's (its previous context is
            # that of s_0, not zeros: spec 4.12 (i)), so the switch really changes results.
            train0 = ref.forward(params, batch, pointer_gen, coverage)["final_dists"][:, 0]
            assert np.max(np.abs(w_final - train0)) > 1e-6


@pytest.mark.parametrize("pointer_gen,coverage,tf_version", [CONFIGS[3]])
def test_decode_step_train_consistent_reproduces_training(
    tmp_path, real_batch, pointer_gen, coverage, tf_version
):
    """decode_attention="train_consistent" over the gold inputs = the training loop."""
    batch = real_batch(pointer_gen)
    model, params = _model_from_tf1(
        tmp_path, pointer_gen, coverage, tf_version, seed=3, decode_attention="train_consistent"
    )
    tb = _tf_batch(batch)
    out = model(tb)
    train_final = model.final_distributions(tb, out).numpy()
    want = ref.forward(params, batch, pointer_gen, coverage)
    enc = model.encode(tb["enc_batch"], tb["enc_padding_mask"])
    carry = model.initial_carry(enc)
    for t in range(DECODE_STEPS):
        final, attn, p_gen, carry = model.decode_step(
            enc, tb["enc_batch_extend_vocab"], tb["max_art_oovs"], tb["dec_batch"][:, t], carry
        )
        _close(attn, out["attn_dists"][:, t].numpy(), atol=1e-9, what=f"attention step {t}")
        _close(p_gen, out["p_gens"][:, t].numpy(), what=f"p_gen step {t}")
        _close(final, train_final[:, t], atol=1e-10, what=f"final dist step {t}")
        _close(final, want["final_dists"][:, t], atol=1e-10, what=f"oracle step {t}")
