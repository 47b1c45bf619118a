"""What a pointer-generator checkpoint holds: the keys that tell which flags it was
trained with (this implementation's names and the original release's TF1 names), the
mismatches between a checkpoint and a model's flags, and the flags it implies
(`PointerGeneratorModel.checkpoint_mismatches` / `implied_settings` / `embedding_key`,
the family contract of models/family.py)."""

from __future__ import annotations

import re

from pointer_generator.hparams import HParams
from pointer_generator.models import tf1_names
from pointer_generator.models.family import embedding_mismatches

# This implementation's checkpoint keys that tell which flags a checkpoint was trained
# with, and the original release's TF1 names of the same tensors.
_EMBEDDING_KEY = re.compile(r"^model/embedding/[^/]*embeddings/\.ATTRIBUTES/VARIABLE_VALUE$")
_HIDDEN_KEY = re.compile(r"^model/decoder_cell/recurrent_kernel/\.ATTRIBUTES/VARIABLE_VALUE$")
_COVERAGE_KEY = re.compile(r"^model/attention/w_c/")
_POINTER_KEY = re.compile(r"^model/p_gen_layer/")


def is_coverage_key(key: str) -> bool:
    """True for the coverage weight w_c (present only in coverage models)."""
    return bool(_COVERAGE_KEY.match(key))


def mismatches(hps: HParams, vocab_size: int, shapes: dict) -> list[str]:
    """What in a model's flags (`hps`, its vocabulary size) disagrees with a
    checkpoint ({key: shape}) of this implementation, one phrase each."""
    problems = []
    if not any(_EMBEDDING_KEY.match(k) for k in shapes):
        return ["it is not a pointer-generator checkpoint (another --model?)"]
    for key, shape in shapes.items():
        if _EMBEDDING_KEY.match(key):
            problems += embedding_mismatches(shape, vocab_size, hps.emb_dim)
        if _HIDDEN_KEY.match(key) and len(shape) == 2 and shape[0] != hps.hidden_dim:
            problems.append(f"it has hidden_dim={shape[0]} but --hidden_dim={hps.hidden_dim}")
    has_cov = any(_COVERAGE_KEY.match(k) for k in shapes)
    if has_cov and not hps.coverage:
        problems.append("it was trained with coverage; add --coverage=1")
    if hps.coverage and not has_cov:
        problems.append(
            "it was trained without coverage; convert it first with "
            "--convert_to_coverage_model=1 --coverage=1 (or drop --coverage)"
        )
    has_ptr = any(_POINTER_KEY.match(k) for k in shapes)
    if has_ptr != hps.pointer_gen:
        problems.append(
            "it is a "
            + ("pointer-generator" if has_ptr else "baseline")
            + f" model but --pointer_gen={int(hps.pointer_gen)}"
        )
    return problems


def implied_settings(shapes: dict) -> dict | None:
    """The flags a checkpoint of this family implies (this implementation's keys or
    the original's TF1 names): vocab_size, emb_dim, hidden_dim, pointer_gen,
    coverage; None when it is no checkpoint of this family."""
    from pointer_generator.runtime.checkpointing import is_tf1_checkpoint

    tf1 = is_tf1_checkpoint(shapes)
    if not tf1 and not any(_EMBEDDING_KEY.match(k) for k in shapes):
        return None
    found = {}
    for key, shape in shapes.items():
        if (_EMBEDDING_KEY.match(key) or key == tf1_names.EMBEDDING) and len(shape) == 2:
            found["vocab_size"], found["emb_dim"] = int(shape[0]), int(shape[1])
        if _HIDDEN_KEY.match(key) and len(shape) == 2:
            found["hidden_dim"] = int(shape[0])
        if key == tf1_names.REDUCE_BIAS_C and len(shape) == 1:
            found["hidden_dim"] = int(shape[0])
    found["pointer_gen"] = any(
        k.startswith(tf1_names.P_GEN_SCOPE) if tf1 else bool(_POINTER_KEY.match(k)) for k in shapes
    )
    found["coverage"] = any(
        k.startswith(tf1_names.COVERAGE_W) if tf1 else is_coverage_key(k) for k in shapes
    )
    return found


def embedding_key(shapes: dict) -> str | None:
    """The checkpoint key of the shared embedding matrix (the projector's)."""
    return next((k for k in sorted(shapes) if _EMBEDDING_KEY.match(k)), None)
