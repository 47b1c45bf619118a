"""The model families behind `--model`: one constructor for every mode.

Every family's model reads the input pipeline's batches and returns, from
`model(batch)`, what the trainer and the eval job read: `loss` (the mean NLL per real
target token for the earlier families), `step_nll` [B, T], `coverage_loss`,
`total_loss`, `p_gens` [B, T] and `p_gen_mean`. The pointer-generator also has its own
decoder (`decoding/decoder.py`); the earlier families give the shared batched search a
step function: `search_articles(enc_batch, mask)`, `initial_carry(rows)` and
`decode_step(tokens, carry, articles, beam_size)`.
"""

from __future__ import annotations

import tensorflow as tf

from pointer_generator.hparams import HParams


def build_model(hps: HParams, vocab_size: int):
    """The built model of `hps.model`, with every weight created."""
    if hps.model == "pointer_generator":
        from pointer_generator.models.pointer_generator import PointerGeneratorModel

        return PointerGeneratorModel(hps, vocab_size).build_weights()
    if hps.model == "abs":
        from pointer_generator.models.abs_model import ABSConfig, ABSModel

        config = ABSConfig(
            encoder=hps.abs_encoder,
            window=hps.context_window,
            emb_dim=hps.emb_dim,
            hidden_dim=hps.hidden_dim,
            smoothing=hps.smoothing_window,
            namas=hps.abs_namas,
        )
        model = ABSModel(config, vocab_size)
    else:
        from pointer_generator.models.ras_model import RASConfig, RASModel

        config = RASConfig(
            decoder=hps.model.split("_", 1)[1],
            dim=hps.hidden_dim,
            width=hps.conv_width,
            max_positions=hps.max_positions,
        )
        model = RASModel(config, vocab_size)
    # The checkpoint checks read the flags a model was made with.
    model.hps = hps
    return model.build_weights()


def parameter_summary(model, kind: str) -> str:
    """`<kind> model with N trainable parameters (vocab V)`, the start-up line."""
    n = sum(int(tf.size(v)) for v in model.trainable_variables)
    return f"{kind} model with {n:,} trainable parameters (vocab {model.vocab_size:,})"
