"""The decode benchmark's denominator, the original's one-article decoding re-enacted
(experiments/benchmarks/original_decode.py), computes what the batched decoder computes:
same summaries and scores, on a tiny model with real choices to make."""

import os

import numpy as np
import pytest
import tensorflow as tf

import pointer_generator as pg
from experiments.benchmarks import original_decode
from pointer_generator.data.vocab import Vocab, outputids2words
from pointer_generator.decoding import job
from tests import helpers


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("original_decode")
    s = helpers.tiny_setup(tmp, n_train=4, n_val=4)
    s.test_path = helpers.write_data(os.path.join(str(tmp), "data"), "test", 5, s.words, seed=5)
    return s


def _model(setup, **hp):
    hps = helpers.hparams(**hp)
    vocab = Vocab(setup.vocab_path, hps.vocab_size)
    tf.keras.utils.set_random_seed(3)
    model = pg.PointerGeneratorModel(hps, vocab.size()).build_weights()
    for v in model.trainable_variables:  # larger than the initialisers: real choices
        v.assign(tf.random.uniform(v.shape, -0.5, 0.5, seed=11))
    return hps, vocab, model


@pytest.mark.parametrize("coverage", [False, True])
def test_original_one_article_decoding_equals_the_batched_decoder(setup, coverage):
    hps, vocab, model = _model(setup, max_dec_steps=6, coverage=coverage)
    search = helpers.search(hps, beam_size=3, min_dec_steps=2)
    batch = next(
        iter(pg.make_dataset(setup.test_path, vocab, hps.replace(batch_size=5), "decode", True))
    )
    settings = search.replace(full_final_dist=True)
    batched = pg.BeamSearchDecoder(model, vocab, hps, settings).decode_batch(batch)
    searches = {
        original: original_decode.one_at_a_time(model, vocab, hps, original, search)
        for original in (True, False)
    }
    for i, summary in enumerate(batched):
        n = int(batch["enc_lens"][i])
        one = {k: v[i : i + 1] for k, v in batch.items() if v.shape.rank}
        one = {
            k: (v[:, :n] if k.startswith("enc_") and k != "enc_lens" else v) for k, v in one.items()
        }
        one["max_art_oovs"] = batch["max_art_oovs"]
        for original, search in searches.items():
            hyp = search(one)
            generated = hyp.tokens[1:]
            assert len(generated) == len(summary.p_gens), (i, original)
            words = outputids2words(generated, vocab, job.example_strings(batch, i)["art_oovs"])
            assert words[: len(summary.words)] == summary.words, (i, original)
            np.testing.assert_allclose(np.stack(hyp.attn_dists), summary.attn, atol=1e-5)
            assert float(hyp.avg_log_prob) == pytest.approx(summary.score, abs=1e-5)
            np.testing.assert_allclose(hyp.p_gens, summary.p_gens, atol=1e-5)


def test_original_step_recomputes_the_encoder_features(setup):
    """With features_per_step the step ignores `enc.features` (the original fed only the
    encoder states); without it, wrong features change the attention."""
    hps, vocab, model = _model(setup, coverage=True)
    batch = helpers.numpy_batch(2, vocab.size(), seed=1)
    enc = model.encode(batch["enc_batch"], batch["enc_padding_mask"])
    wrong = enc._replace(features=tf.zeros_like(enc.features))
    carry = original_decode.reference_carry(enc, batch["enc_padding_mask"])
    tokens = tf.constant([4, 5])
    args = (batch["enc_batch_extend_vocab"], batch["max_art_oovs"], tokens, carry)
    per_step = original_decode.reference_step(model, hps, features_per_step=True, top_k=4)
    cached = original_decode.reference_step(model, hps)
    _, attn_right, _, _ = cached(enc, *args)
    top, attn_fed, _, _ = per_step(wrong, *args)
    _, attn_wrong, _, _ = cached(wrong, *args)
    np.testing.assert_allclose(attn_fed, attn_right, atol=1e-6)
    assert np.abs(np.asarray(attn_wrong) - np.asarray(attn_right)).max() > 1e-4
    assert top.probs.shape == (2, 4) and top.ids.shape == (2, 4)
