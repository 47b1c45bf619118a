"""The earlier families' weights are drawn as their Torch code drew them (issue 29, item 1).

NAMAS builds its modules with Torch's defaults (spec abs-ras.md §2.5): `nn.LookupTable`
N(0, 1), `nn.Linear` weight and bias U(±1/√fan_in), `nn.TemporalConvolution`
U(±1/√(kW·inputFrameSize)). The fan-ins below are written from the spec's module list,
not read from the code under test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from pointer_generator.models.abs_model import ABSConfig, ABSModel
from pointer_generator.models.ras_model import RASConfig, RASModel

V, C, D, H, Q = 300, 3, 16, 32, 5  # vocabulary, window, ABS D and H, conv width


def _abs(encoder, namas=False, **kw):
    config = ABSConfig(encoder=encoder, window=C, emb_dim=D, hidden_dim=H, namas=namas, **kw)
    return ABSModel(config, V).build_weights()


def _ras(decoder, **kw):
    return RASModel(RASConfig(decoder=decoder, dim=D, width=Q, max_positions=20, **kw), V)


# variable path -> fan-in (None: a lookup table, N(0, 1))
ABS_COMMON = {
    "E/embeddings": None,
    "F/embeddings": None,
    "nnlm/U/kernel": C * D,  # U: Linear(C·D -> H)
    "nnlm/U/bias": C * D,
    "output/V": 2 * H,  # NAMAS: one Linear on [h; enc]
    "output/W": 2 * H,
    "output/bias": 2 * H,
}
EXPECTED = {
    ("abs", "attention"): {
        **ABS_COMMON,
        "G/embeddings": None,
        "encoder/P/kernel": C * D,  # P: Linear(C·D -> H)
        "encoder/P/bias": C * D,
        "encoder/extra_linear/kernel": H,
        "encoder/extra_linear/bias": H,
    },
    ("abs", "bow"): {
        **ABS_COMMON,
        "encoder/extra_linear/kernel": H,
        "encoder/extra_linear/bias": H,
    },
    ("abs", "conv"): {**ABS_COMMON, **{f"encoder/Q{i}/kernel": Q * H for i in (1, 2, 3)}},
    ("ras", "elman"): {
        "x/embeddings": None,
        "y/embeddings": None,
        "encoder/positions": None,
        "encoder/B/kernel": Q * D,
        "elman/W1": D,
        "elman/W2": D,
        "elman/W3": D,
        "output/W4": 2 * D,
        "output/W5": 2 * D,
    },
    ("ras", "lstm"): {
        "x/embeddings": None,
        "y/embeddings": None,
        "encoder/positions": None,
        "encoder/B/kernel": Q * D,
        "lstm/kernel": D,
        "lstm/recurrent_kernel": D,
        "lstm/context_kernel": D,
        "output/W4": 2 * D,
        "output/W5": 2 * D,
    },
}
# NAMAS starts its learned smoothing at weight 1, bias 0: Keras' ones/zeros, kept; RAS's
# learned initial state starts at the zeros the paper's silence implies.
KEPT = {"encoder/smooth_weight": 1.0, "encoder/smooth_bias": 0.0, "h0": 0.0, "m0": 0.0}


def _models():
    for encoder in ("attention", "bow", "conv"):
        for namas in (False, True):
            yield f"abs-{encoder}-namas{int(namas)}", ("abs", encoder), _abs(encoder, namas)
    for decoder in ("elman", "lstm"):
        yield f"ras-{decoder}", ("ras", decoder), _ras(decoder).build_weights()
        learned = _ras(decoder, initial_state="learned").build_weights()
        yield f"ras-{decoder}-learned-h0", ("ras", decoder), learned


@pytest.mark.parametrize(
    "name, key, model", list(_models()), ids=lambda x: x if isinstance(x, str) else ""
)
def test_every_weight_is_drawn_with_torchs_default(name, key, model):
    expected = EXPECTED[key]
    for v in model.trainable_variables:
        w = v.numpy().ravel()
        name = v.path.split("/", 1)[1] if v.path.split("/")[-1] in ("h0", "m0") else v.path
        if name in KEPT:
            assert np.all(w == KEPT[name]), v.path
            continue
        assert v.path in expected, f"{name}: {v.path} has no Torch rule"
        fan = expected[v.path]
        if fan is None:  # N(0, 1)
            assert abs(w.mean()) < 5 / math.sqrt(w.size), (v.path, w.mean())
            assert w.std() == pytest.approx(1.0, abs=6 / math.sqrt(w.size)), v.path
        else:  # U(±1/√fan_in): inside the bound, variance bound²/3
            bound = 1 / math.sqrt(fan)
            assert np.abs(w).max() <= bound + 1e-7, v.path
            assert np.abs(w).max() > 0.8 * bound, v.path
            if w.size >= 200:
                assert w.std() == pytest.approx(bound / math.sqrt(3), rel=0.15), v.path


def test_the_draw_follows_the_seed_and_keras_form_is_the_switch():
    a, b = _abs("attention", init_seed=5), _abs("attention", init_seed=5)
    c = _abs("attention", init_seed=6)
    for va, vb, vc in zip(
        a.trainable_variables, b.trainable_variables, c.trainable_variables, strict=True
    ):
        np.testing.assert_array_equal(va.numpy(), vb.numpy())
        assert not np.array_equal(va.numpy(), vc.numpy())
    keras_form = _abs("attention", init="keras")
    e = {v.path: v.numpy() for v in keras_form.trainable_variables}["E/embeddings"]
    assert np.abs(e).max() <= 0.05  # Keras' Embedding: U(±0.05)
    ras = _ras("elman", init="keras").build_weights()
    x = {v.path: v.numpy() for v in ras.trainable_variables}["x/embeddings"]
    assert np.abs(x).max() <= 0.05


def test_the_flag_reaches_the_model():
    from pointer_generator.models.family_registry import build_model
    from tests import helpers

    for init, limit in (("torch", 1.5), ("keras", 0.05)):
        hps = helpers.hparams(model="abs", family_init=init, emb_dim=D, hidden_dim=H)
        model = build_model(hps, V)
        e = {v.path: v.numpy() for v in model.trainable_variables}["E/embeddings"]
        assert (np.abs(e).max() > limit) == (init == "torch")
