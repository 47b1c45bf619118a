"""The original TF1 release's variables (spec 4.11 names, spec 10 layout) and how each
maps to the Keras model's parameterisation (reading and writing: `tf1_checkpoint.py`):

* LSTM: TF1 stores one kernel [in + H, 4H] (rows = [input; previous h], gate columns
  i, j, f, o) and a bias [4H] to which the cell adds a constant forget bias of 1.0.
  Keras stores kernel [in, 4H] and recurrent_kernel [H, 4H] with gate columns i, f, c, o
  (c = TF1's j) and keeps the forget bias inside the stored bias, so the f block gets +1.
* Attention: W_h [1, 1, 2H, A] and w_c [1, 1, 1, A] are 1x1 convolution kernels; the
  Keras layer keeps them as [2H, A] and [1, A].
* `Linear/Matrix` and `Linear/Bias` of the original's `linear` helper are Dense kernels
  and biases (the concatenation orders of their inputs are the same in both).

Adagrad accumulators (`<variable>/Adagrad`) follow the same row split and gate reorder,
but without the +1 (the constant forget bias does not change any gradient).

Both naming schemes of the original are supported: TF 1.2.1 (`lstm_cell/kernel`,
`lstm_cell/bias`) and TF 1.0 (`lstm_cell/weights`, `lstm_cell/biases`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from pointer_generator.errors import CheckpointError

TF1_VERSIONS = ("1.2.1", "1.0")
GLOBAL_STEP = "global_step"
ADAGRAD_SUFFIX = "/Adagrad"
# Added to the f gate by TF1's LSTMCell at run time; Keras stores it in the bias.
FORGET_BIAS = 1.0

ENC = "seq2seq/encoder/bidirectional_rnn"
DEC = "seq2seq/decoder/attention_decoder"
REDUCE = "seq2seq/reduce_final_st"
# Names that tell a checkpoint's flags (`PointerGeneratorModel.implied_settings`).
EMBEDDING = "seq2seq/embedding/embedding"
REDUCE_BIAS_C = f"{REDUCE}/bias_reduce_c"
COVERAGE_W = f"{DEC}/coverage/w_c"
P_GEN_SCOPE = f"{DEC}/calculate_pgen"


# --------------------------------------------------------------------------- LSTM layout
def gate_blocks(a: np.ndarray, hidden: int) -> list[np.ndarray]:
    """Split the last axis of `a` into its 4 gate blocks of `hidden` columns."""
    return [a[..., k * hidden : (k + 1) * hidden] for k in range(4)]


def tf1_lstm_bias_to_keras(bias: np.ndarray, forget_bias: float = FORGET_BIAS) -> np.ndarray:
    """TF1 bias [4H] (i, j, f, o; forget bias added at run time) -> Keras [4H] (i, f, c, o)."""
    i, j, f, o = gate_blocks(bias, bias.shape[-1] // 4)
    return np.concatenate([i, f + forget_bias, j, o], axis=-1)


def keras_lstm_bias_to_tf1(bias: np.ndarray, forget_bias: float = FORGET_BIAS) -> np.ndarray:
    """Inverse of `tf1_lstm_bias_to_keras`."""
    i, f, c, o = gate_blocks(bias, bias.shape[-1] // 4)
    return np.concatenate([i, c, f - forget_bias, o], axis=-1)


def tf1_lstm_kernel_to_keras(kernel: np.ndarray, input_dim: int):
    """TF1 kernel [input_dim + H, 4H] (rows [x; h], gates i, j, f, o) ->
    Keras (kernel [input_dim, 4H], recurrent_kernel [H, 4H]), gates i, f, c, o."""
    i, j, f, o = gate_blocks(kernel, kernel.shape[-1] // 4)
    reordered = np.concatenate([i, f, j, o], axis=-1)
    return reordered[:input_dim], reordered[input_dim:]


def keras_lstm_kernel_to_tf1(kernel: np.ndarray, recurrent_kernel: np.ndarray) -> np.ndarray:
    """Inverse of `tf1_lstm_kernel_to_keras`: [input_dim + H, 4H], gates i, j, f, o."""
    full = np.concatenate([kernel, recurrent_kernel], axis=0)
    i, f, c, o = gate_blocks(full, full.shape[-1] // 4)
    return np.concatenate([i, c, f, o], axis=-1)


# --------------------------------------------------------------------------- name table
@dataclasses.dataclass(frozen=True)
class Entry:
    """One TF1 tensor and the Keras variable(s) it becomes.

    kind: "plain" (same array), "conv" (1x1 conv kernel, drop the two leading 1s),
      "lstm_kernel" (split rows + reorder gates; two Keras variables), "lstm_bias".
    targets: functions model -> Keras variable (two for "lstm_kernel").
    input_dim: rows of an LSTM kernel that belong to the input (lstm_kernel only).
    """

    name: str
    shape: tuple[int, ...]
    kind: str
    targets: tuple[Callable, ...]
    input_dim: int = 0


def lstm_names(scope: str, tf_version: str) -> tuple[str, str]:
    if tf_version == "1.0":
        return f"{scope}/lstm_cell/weights", f"{scope}/lstm_cell/biases"
    return f"{scope}/lstm_cell/kernel", f"{scope}/lstm_cell/bias"


def entries(hps, vocab_size: int, tf_version: str = "1.2.1") -> list[Entry]:
    """The original's trainable variables for these hyper-parameters (spec 4.11)."""
    if tf_version not in TF1_VERSIONS:
        raise CheckpointError(
            f"tf_version must be one of {', '.join(TF1_VERSIONS)}, got {tf_version!r}"
        )
    h, e, v, a = hps.hidden_dim, hps.emb_dim, vocab_size, hps.attention_dim
    entries = [Entry(EMBEDDING, (v, e), "plain", (lambda m: m.embedding.embeddings,))]

    def lstm(scope, cell_of, input_dim):
        k, b = lstm_names(scope, tf_version)
        return [
            Entry(
                k,
                (input_dim + h, 4 * h),
                "lstm_kernel",
                (lambda m: cell_of(m).kernel, lambda m: cell_of(m).recurrent_kernel),
                input_dim,
            ),
            Entry(b, (4 * h,), "lstm_bias", (lambda m: cell_of(m).bias,)),
        ]

    entries += lstm(f"{ENC}/fw", lambda m: m.encoder.forward_layer.cell, e)
    entries += lstm(f"{ENC}/bw", lambda m: m.encoder.backward_layer.cell, e)
    rs = REDUCE
    entries += [
        Entry(f"{rs}/w_reduce_c", (2 * h, h), "plain", (lambda m: m.reduce_state.w_reduce_c,)),
        Entry(f"{rs}/w_reduce_h", (2 * h, h), "plain", (lambda m: m.reduce_state.w_reduce_h,)),
        Entry(f"{rs}/bias_reduce_c", (h,), "plain", (lambda m: m.reduce_state.bias_reduce_c,)),
        Entry(f"{rs}/bias_reduce_h", (h,), "plain", (lambda m: m.reduce_state.bias_reduce_h,)),
        Entry(f"{DEC}/W_h", (1, 1, 2 * h, a), "conv", (lambda m: m.attention.W_h,)),
        Entry(f"{DEC}/v", (a,), "plain", (lambda m: m.attention.v,)),
    ]
    if hps.coverage:
        entries.append(Entry(COVERAGE_W, (1, 1, 1, a), "conv", (lambda m: m.attention.w_c,)))

    def linear(scope, rows, cols, layer_of):
        return [
            Entry(f"{scope}/Linear/Matrix", (rows, cols), "plain", (lambda m: layer_of(m).kernel,)),
            Entry(f"{scope}/Linear/Bias", (cols,), "plain", (lambda m: layer_of(m).bias,)),
        ]

    entries += linear(DEC, e + 2 * h, e, lambda m: m.input_merge)
    entries += lstm(DEC, lambda m: m.decoder_cell, e)
    entries += [
        Entry(f"{DEC}/Attention/Linear/Matrix", (2 * h, a), "plain", (lambda m: m.attention.W_s,)),
        Entry(f"{DEC}/Attention/Linear/Bias", (a,), "plain", (lambda m: m.attention.b_attn,)),
    ]
    if hps.pointer_gen:
        entries += linear(P_GEN_SCOPE, 4 * h + e, 1, lambda m: m.p_gen_layer.dense)
    entries += linear(f"{DEC}/AttnOutputProjection", 3 * h, h, lambda m: m.attn_output_projection)
    entries += [
        Entry(
            "seq2seq/output_projection/w", (h, v), "plain", (lambda m: m.output_projection.kernel,)
        ),
        Entry("seq2seq/output_projection/v", (v,), "plain", (lambda m: m.output_projection.bias,)),
    ]
    return entries


def tf1_variable_shapes(hps, vocab_size: int, tf_version: str = "1.2.1") -> dict[str, tuple]:
    """{TF1 name: shape} of the original's trainable variables for these settings."""
    return {en.name: en.shape for en in entries(hps, vocab_size, tf_version)}


def to_keras(entry: Entry, array: np.ndarray, accumulator: bool = False) -> list[np.ndarray]:
    """Convert one TF1 array into the arrays of `entry.targets` (in order).

    Accumulators get the same layout change but no forget-bias shift.
    """
    if entry.kind == "plain":
        return [array]
    if entry.kind == "conv":
        return [array.reshape(array.shape[2:])]
    if entry.kind == "lstm_kernel":
        return list(tf1_lstm_kernel_to_keras(array, entry.input_dim))
    return [tf1_lstm_bias_to_keras(array, 0.0 if accumulator else FORGET_BIAS)]


def to_tf1(entry: Entry, arrays: list[np.ndarray], accumulator: bool = False) -> np.ndarray:
    """Inverse of `to_keras`."""
    if entry.kind == "plain":
        return arrays[0]
    if entry.kind == "conv":
        return arrays[0].reshape(entry.shape)
    if entry.kind == "lstm_kernel":
        return keras_lstm_kernel_to_tf1(arrays[0], arrays[1])
    return keras_lstm_bias_to_tf1(arrays[0], 0.0 if accumulator else FORGET_BIAS)


def detect_tf1_version(names) -> str:
    """ "1.0" when the LSTM tensors are named weights/biases, else "1.2.1"."""
    names = set(names)
    old = any(n.endswith("/lstm_cell/weights") for n in names)
    new = any(n.endswith("/lstm_cell/kernel") for n in names)
    return "1.0" if old and not new else "1.2.1"
