"""The ABS model: its log-probabilities against the NumPy composition of the printed
equations, its decode step equal to its training forward pass, one search for it, and a
few pairs overfitted."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from pointer_generator.data.vocab import START_ID, STOP_ID, UNK_ID
from pointer_generator.models.abs_model import ABSConfig, ABSModel, context_windows
from pointer_generator.search.beam_search import batched_beam_search
from tests import numpy_abs_ras as ref

V = 30
TINY = dict(window=3, emb_dim=5, hidden_dim=7, smoothing=1, conv_layers=2)


def _model(encoder="attention", **kw):
    tf.keras.utils.set_random_seed(3)
    return ABSModel(ABSConfig(encoder=encoder, **{**TINY, **kw}), V).build_weights()


def _batch(rng, lengths=(6, 4), dec_len=5):
    m = max(lengths)
    enc = rng.integers(4, V, size=(len(lengths), m)).astype(np.int32)
    mask = np.array([[1.0] * n + [0.0] * (m - n) for n in lengths], np.float32)
    enc[mask == 0] = 1  # [PAD]
    dec = rng.integers(4, V, size=(len(lengths), dec_len)).astype(np.int32)
    dec[:, 0] = START_ID
    target = np.concatenate([dec[:, 1:], np.full((len(lengths), 1), STOP_ID)], axis=1)
    return {
        "enc_batch": enc,
        "enc_padding_mask": mask,
        "dec_batch": dec,
        "target_batch": target.astype(np.int32),
        "dec_padding_mask": np.ones((len(lengths), dec_len), np.float32),
    }


def test_context_windows_start_with_start_tokens():
    dec = tf.constant([[2, 7, 8, 9]])
    got = context_windows(dec, 3).numpy()[0].tolist()
    assert got == [[2, 2, 2], [2, 2, 7], [2, 7, 8], [7, 8, 9]]


def test_log_probs_are_the_printed_equations_composed():
    rng = np.random.default_rng(0)
    batch = _batch(rng)
    model = _model()
    lp = model.log_probs(batch["enc_batch"], batch["enc_padding_mask"], batch["dec_batch"])
    e, f, g = (layer.embeddings.numpy() for layer in (model.e, model.f, model.g))
    u = model.nnlm.u.kernel.numpy()
    p_matrix = model.encoder.p.kernel.numpy()
    v, w = model.out.a.numpy(), model.out.b.numpy()
    for b, n in enumerate((6, 4)):
        x = f[batch["enc_batch"][b, :n]]
        history = [START_ID] * 2 + batch["dec_batch"][b].tolist()
        for t in range(5):
            window = history[t : t + 3]
            h = ref.nnlm_hidden(e[window], u)
            enc, _ = ref.attention_encoder(x, g[window], p_matrix, q=1, divisor=1.0)
            np.testing.assert_allclose(lp[b, t], ref.abs_output(h, enc, v, w), atol=2e-5)


def check_greedy_search_matches_log_probs(model, batch):
    """Greedy search (one beam) over the model's decode_step gives the tokens greedy
    argmax over its training pass gives when the prefix is fed back."""
    out = batched_beam_search(
        lambda tok, carry, art: model.decode_step(tok, carry, art, 1),
        model.initial_carry(2),
        batch_size=2,
        beam_size=1,
        vocab_size=V,
        max_dec_steps=4,
        min_dec_steps=4,
        start_id=START_ID,
        stop_id=STOP_ID,
        unk_id=UNK_ID,
        articles=model.search_articles(batch["enc_batch"], batch["enc_padding_mask"]),
        min_compact_size=None,
    )
    for b in range(2):
        prefix = [START_ID]
        for tok in out["tokens"][b].numpy().tolist()[:4]:
            lp = model.log_probs(
                batch["enc_batch"][b : b + 1],
                batch["enc_padding_mask"][b : b + 1],
                np.array([prefix], np.int32),
            )[0, -1].numpy()
            lp[STOP_ID] = -np.inf  # below min_dec_steps the search never ends here
            assert tok == int(np.argmax(lp))
            prefix.append(tok)


def check_overfits(model, steps: int = 150):
    """Adam fits 4 random pairs: the NLL falls from about ln V to near zero."""
    batch = _batch(np.random.default_rng(2), lengths=(8, 8, 6, 5), dec_len=4)
    optimizer = tf.keras.optimizers.Adam(0.05)
    losses = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = model(batch)["loss"]
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        losses.append(float(loss))
    assert losses[0] > 3.0 and losses[-1] < 0.1  # ln(30) = 3.4 at the start


@pytest.mark.parametrize("encoder", ["bow", "conv", "attention"])
def test_the_decode_step_equals_the_training_forward_pass(encoder):
    check_greedy_search_matches_log_probs(_model(encoder), _batch(np.random.default_rng(1)))


def test_abs_overfits_a_few_pairs():
    check_overfits(_model("attention", emb_dim=16, hidden_dim=32))


def test_config_round_trip_and_parameter_count():
    model = _model("attention")
    again = ABSModel.from_config(model.get_config()).build_weights()
    assert again.get_config() == model.get_config()
    c, d, h = TINY["window"], TINY["emb_dim"], TINY["hidden_dim"]
    # |E| + |G| = 2 D V, |F| = H V, |U| = |P| = C D H, |V| = |W| = V H (spec §8.2)
    assert model.count_params() == 2 * d * V + h * V + 2 * c * d * h + 2 * V * h
    with pytest.raises(ValueError, match="encoder must be one of"):
        ABSConfig(encoder="rnn")


def test_the_paper_configuration_has_the_closed_form_size():
    """Spec §8.2: D=200, H=400, C=5, one vocabulary of 69,000 words: 111.2M parameters."""
    model = ABSModel(ABSConfig(), 69_000).build_weights()
    assert model.count_params() == 111_200_000
