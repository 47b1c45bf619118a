"""Torch's default initialisation, which the earlier families' code trained from.

The official ABS code (NAMAS, Lua Torch) creates its modules with Torch's defaults
(spec abs-ras.md §2.5), and RAS was written in Torch too: `nn.LookupTable` draws N(0, 1),
`nn.Linear` draws weight and bias U(-1/√fan_in, 1/√fan_in), `nn.TemporalConvolution`
U(±1/√(kW·inputFrameSize)). Keras' defaults are far smaller for embeddings (U(±0.05)):
with them ABS's attention logits start near 0 and its encoder's gradients are products
of two small numbers, so the model learns a language model of the summaries that ignores
the article (issue 29; experiments/results/families_results.md has the evidence).

`initialize(model, seed)` re-draws every weight of a built model this way: Keras
`Embedding`, `Dense` and `Conv1D` layers by their kind, and the project's own layers by
the fan-in each declares for its weights (`torch_fan_ins()`; None = a lookup table). A
weight no layer declares keeps its Keras initialiser (NAMAS's learned smoothing scalars,
which NAMAS starts at 1 and 0 too).
"""

from __future__ import annotations

import keras
import numpy as np

TORCH, KERAS = "torch", "keras"
SCHEMES = (TORCH, KERAS)


def fan_ins(layer) -> list:
    """[(variable, fan_in)] of one layer's own weights (not its sub-layers'); fan_in None
    for a lookup table, drawn N(0, 1). (Variables are not hashable: pairs, not a dict.)"""
    if isinstance(layer, keras.layers.Embedding):
        return [(layer.embeddings, None)]
    if isinstance(layer, keras.layers.Conv1D):
        fan = int(layer.kernel.shape[0]) * int(layer.kernel.shape[1])  # kW * inputFrameSize
    elif isinstance(layer, keras.layers.Dense):
        fan = int(layer.kernel.shape[0])
    elif hasattr(layer, "torch_fan_ins"):
        return layer.torch_fan_ins()
    else:
        return []
    return [(layer.kernel, fan)] + ([(layer.bias, fan)] if layer.use_bias else [])


def initialize(model, seed: int) -> None:
    """Re-draw every declared weight of the built `model` with Torch's defaults, from a
    generator seeded by `seed` (variables in path order: the same weights every time)."""
    declared = {}
    for layer in model._flatten_layers(include_self=False, recursive=True):
        declared.update({id(v): (v, f) for v, f in fan_ins(layer)})
    rng = np.random.default_rng(seed)
    for variable, fan in sorted(declared.values(), key=lambda vf: vf[0].path):
        shape = tuple(int(d) for d in variable.shape)
        if fan is None:
            value = rng.standard_normal(shape)
        else:
            bound = 1.0 / np.sqrt(max(fan, 1))
            value = rng.uniform(-bound, bound, shape)
        variable.assign(value.astype(variable.dtype))
