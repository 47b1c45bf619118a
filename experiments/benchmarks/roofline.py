"""The real limit of a training step and of a batched decoding step: a roofline that
counts the attention's elementwise work and the softmaxes beside the matrix products.

    python -m experiments.benchmarks.roofline [--steps 6] [--decode_articles 64]

A matmul-only ceiling (experiments/benchmarks/flops.py) is the wrong limit for this model
on a CPU: the attention's energies, e_ti = v . tanh(W_h h_i + W_s s_t + w_c c_ti + b)
(eq. 1, 11), are [batch, enc_len, 2*hidden] of tanh and additions at every decoder step
(328M tanh a training step at the paper's sizes), and the dependent recurrent steps
cannot all run at the rate of one large product. The model of the limit here:

    t_min = t_products + t_recurrent + t_energies + t_softmax + t_kept

  * t_products: the analytical matrix-product FLOPs (`flops.forward_flops`; a training
    step is 3x the forward pass) that do not wait for the step before, at this machine's
    dense float32 matmul rate, measured now (`flops.measured_matmul_rate`: the best of a
    square product and the vocabulary projection's shape).
  * t_recurrent: the products each recurrent step must wait for (`recurrent_flops`):
    the encoder LSTM's h_{t-1} W_h, and the decoder's input merge, LSTM and W_s s_t
    (input feeding makes a decoder step's input the last step's context); in training
    also their input gradients in the backward pass (the weight gradients wait for
    nothing: one large product after the loop). A step's product has only the batch's
    rows (16; 64 beams in decoding), and a CPU runs such products far below its large-
    product rate; they are priced at the rate of a chain of dependent products of the
    LSTM's shape (the largest of them), one XLA loop timed now (`chain_rate`; the
    encoder's two directions as two chains at once).
  * t_energies: the attention energies' own kernel, timed now as one XLA computation at
    the model's shapes: forward and backward ([batch, enc_len, 2*hidden] with coverage's
    term, the gradients with respect to the encoder features and the decoder state) for
    training, forward for decoding ([articles x beam, enc_len, 2*hidden]), times the
    decoder steps; the best of all rows at once and of chunks of 8, 4, 2 or 1 rows one
    after another (a small chunk's tensors stay in cache: `best_energies_seconds`).
  * t_softmax: the vocabulary softmax, timed now as one XLA computation: the cross
    entropy over [batch x dec_steps, vocab] forward and backward for training; for each
    decoding step what the search needs of it over [articles x beam, vocab], the
    log-sum-exp and the top 2k + 1 logits (`models/final_candidates.py`).
  * t_kept: what the backward pass needs of the forward pass that no kernel above
    accounts for: the energies' tanh values, [batch, enc_len, 2*hidden] float32 a decoder
    step. The lesser of keeping them (written once and read once at this machine's memory
    bandwidth, an XLA elementwise pass over 256 MiB timed now) and computing them again
    in the backward pass (the forward energies kernel at the training shapes, timed now).
    Zero for decoding.

The parts are summed: they run on the same cores one after another (a product does not
overlap the tanh of the step that needs it), so the sum is the least time this machine
can take for the work the original does, each part at the best rate measured for it.
What is left out (the LSTM gates' elementwise work, the pointer's scatter-add, the
gradient clipping and the Adagrad update, the search's bookkeeping, per-step dispatch) is
small at these sizes or is the overhead a faster implementation would remove: it counts
against the implementation, not the limit.

Then the real thing, measured in the same run on synthetic data of exactly these sizes
(random words: every article enc_len long, every abstract dec_len; an untrained model
decodes all max_dec_steps): `Trainer.train_step` (forward, backward, clipping, Adagrad)
and `BeamSearchDecoder.decode_batch` (beam 4, min 35, batches of 32 articles as decode
mode's default). Printed: each part's time, the roofline, the achieved time,
achieved/roofline (target 0.8, issue 46) and the old matmul-only share beside it, with the
CPU model and its matrix extensions.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

from experiments.benchmarks import common, flops
from pointer_generator.cli import arg_types

TARGET = 0.8
BEAM = 4


# ---------------------------------------------------------------------------------------
# The analytical counts


def energy_elements(rows: int, enc_len: int, hidden: int, dec_steps: int) -> int:
    """Elements of the attention's tanh over a run of decoder steps: rows x enc_len x
    2*hidden (A = 2H, the original's attention size) per step."""
    return rows * enc_len * 2 * hidden * dec_steps


def kept_bytes(batch: int, enc_len: int, hidden: int, dec_len: int) -> int:
    """Bytes of the tanh values a training step's forward pass keeps for its backward
    pass: float32 [batch, enc_len, 2*hidden] a decoder step, written once, read once."""
    return 2 * 4 * energy_elements(batch, enc_len, hidden, dec_len)


def train_products(cfg: dict) -> float:
    """Matrix-product FLOPs of one training step (3x the forward pass)."""
    return flops.train_step_flops(
        batch=cfg["batch"], enc_len=cfg["enc_len"], dec_len=cfg["dec_len"],
        vocab=cfg["vocab"], hidden=cfg["hidden"], emb=cfg["emb"],
    )  # fmt: skip


def decode_products(cfg: dict, steps: float) -> float:
    """Matrix-product FLOPs of decoding one article with a beam of BEAM for `steps`
    decoder steps: its encoder once, every decoder step for BEAM rows."""
    once = ("encoder", "reduce_state", "attention_features")
    enc = flops.forward_flops(1, cfg["enc_len"], 0, cfg["vocab"], cfg["hidden"], cfg["emb"])
    dec = flops.forward_flops(
        BEAM, cfg["enc_len"], 1, cfg["vocab"], cfg["hidden"], cfg["emb"]
    )  # one step of BEAM rows
    per_step = dec["total"] - sum(dec[k] for k in once)
    return sum(enc[k] for k in once) + steps * per_step


def recurrent_flops(cfg: dict, rows: int, dec_steps: float, training: bool) -> dict:
    """Forward FLOPs of the products a recurrent step waits for, by recurrence:
    {"encoder": both directions' h_{t-1} W_h over enc_len steps (training only; decoding's
    encoder, once an article, stays at the matmul rate: a limit that errs low),
    "decoder": the context's half of the input merge [rows, 2H] x [2H, E] (the embedding's
    half waits for nothing), LSTM [rows, E + H] x [E + H, 4H] and W_s [rows, 2H] x [2H, A]
    over dec_steps}.
    Training's backward pass has as many again (their input gradients); those are
    added by the caller."""
    h, e, a = cfg["hidden"], cfg["emb"], 2 * cfg["hidden"]
    per_step = 2 * rows * (2 * h * e + (e + h) * 4 * h + 2 * h * a)
    encoder = 2 * cfg["enc_len"] * 2 * rows * h * 4 * h if training else 0
    return {"encoder": float(encoder), "decoder": float(dec_steps * per_step)}


def energy_dot_flops(rows: int, enc_len: int, hidden: int, dec_steps: float) -> float:
    """Forward FLOPs of the energies' v . tanh(.) over dec_steps ([rows, enc_len, A] . [A]),
    which `flops.forward_flops` counts among the products: `energies_seconds` times them
    with the tanh (and, for training, their input gradient), so the products leave those
    out (counted once)."""
    return 2.0 * rows * enc_len * 2 * hidden * dec_steps


# ---------------------------------------------------------------------------------------
# Rates measured now


def _timed(fn, seconds: float) -> float:
    """Seconds a call of `fn` takes (after one untimed call), the best of repeated
    rounds over about `seconds`."""
    fn()
    best, start = float("inf"), time.perf_counter()
    while time.perf_counter() - start < seconds:
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def chain_rate(tf, rows: int, k: int, n: int, chains: int, s: float, steps: int = 64):
    """FLOP/s of `chains` recurrences run together (one batched product a step), each
    `steps` steps of two dependent products, [rows, k] x [k, n] (an LSTM's gates) then
    [rows, n] x [n, k] (the shape of their input gradient), each output whole and through
    a tanh, as one XLA loop: the rate a recurrence's products run at, each step waiting
    for the one before."""
    h0 = tf.random.uniform([chains, rows, k], -1, 1)
    w = tf.random.uniform([chains, k, n], -0.05, 0.05)
    u = tf.random.uniform([chains, n, k], -0.05, 0.05)

    @tf.function(jit_compile=True)
    def run():
        def body(i, x):
            return i + 1, tf.tanh(tf.matmul(tf.tanh(tf.matmul(x, w)), u))

        return tf.while_loop(lambda i, x: i < steps, body, (tf.constant(0), h0))[1]

    seconds = _timed(lambda: run().numpy(), s)
    return 2.0 * 2 * chains * rows * k * n * steps / seconds


def energies_seconds(tf, rows: int, enc_len: int, hidden: int, backward: bool, s: float):
    """One decoder step's attention energies as one XLA computation: e = v . tanh(F +
    W_s s + w_c c) over [rows, enc_len, 2*hidden], with (training) the gradients of a
    weighted sum of e with respect to F, the decoder state's features and coverage."""
    a = 2 * hidden
    feats = tf.random.uniform([rows, enc_len, a], -1, 1)
    state = tf.random.uniform([rows, a], -1, 1)
    cov = tf.random.uniform([rows, enc_len])
    v, wc = tf.random.uniform([a], -1, 1), tf.random.uniform([a], -1, 1)
    weight = tf.random.uniform([rows, enc_len])

    def energies(f, st, c):
        return tf.reduce_sum(v * tf.tanh(f + st[:, None, :] + c[:, :, None] * wc), -1)

    @tf.function(jit_compile=True)
    def forward():
        return energies(feats, state, cov)

    @tf.function(jit_compile=True)
    def forward_backward():
        with tf.GradientTape() as tape:
            tape.watch([feats, state, cov])
            e = energies(feats, state, cov)
            loss = tf.reduce_sum(e * weight)
        return tape.gradient(loss, [feats, state, cov])

    fn = forward_backward if backward else forward
    return _timed(lambda: [x.numpy() for x in tf.nest.flatten(fn())], s)


ROW_CHUNKS = (8, 4, 2, 1)  # besides all rows at once: what stays in a core's caches


def best_energies_seconds(tf, rows, enc_len, hidden, backward, s) -> tuple[float, int]:
    """(seconds, rows per chunk) of one decoder step's energies over `rows` rows at the
    best rate measured: all rows in one computation, or chunks of fewer rows one after
    another (a chunk's [chunk, enc_len, 2*hidden] tensors stay in cache, as the fused
    decoder's 4-row chunks do), each chunk size timed now."""
    sizes = [rows] + [c for c in ROW_CHUNKS if c < rows and rows % c == 0]
    timed = {c: rows // c * energies_seconds(tf, c, enc_len, hidden, backward, s) for c in sizes}
    best = min(timed, key=timed.get)
    return timed[best], best


def softmax_seconds(tf, rows: int, vocab: int, backward: bool, s: float, top: int = 0):
    """The vocabulary softmax over [rows, vocab] as one XLA computation: training's cross
    entropy with its gradient; or what a search step needs of it, the log-sum-exp (the
    normaliser) and the `top` largest logits, the faster of `tf.math.top_k` over the row
    and the chunked top-k of `layers/top_k.py`."""
    from pointer_generator.layers.top_k import top_k_of_chunks

    logits = tf.random.uniform([rows, vocab], -4, 4)
    labels = tf.random.uniform([rows], 0, vocab, tf.int32)
    chunk = 256
    padded = tf.pad(logits, [[0, 0], [0, -vocab % chunk]], constant_values=-1e9)
    chunks = tf.reshape(padded, [rows, -1, chunk])

    @tf.function(jit_compile=True)
    def train():
        with tf.GradientTape() as tape:
            tape.watch(logits)
            loss = tf.reduce_sum(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
            )
        return tape.gradient(loss, logits)

    @tf.function(jit_compile=True)
    def search_row():
        return tf.reduce_logsumexp(logits, -1), tf.math.top_k(logits, k=top)

    @tf.function(jit_compile=True)
    def search_chunked():
        top_k = top_k_of_chunks(chunks, tf.reduce_max(chunks, -1), top)
        return tf.reduce_logsumexp(logits, -1), top_k

    def timed(fn):
        return _timed(lambda: [x.numpy() for x in tf.nest.flatten(fn())], s)

    if backward:
        return timed(train)
    return min(timed(search_row), timed(search_chunked))


def bandwidth(tf, s: float) -> float:
    """Bytes/s of an XLA elementwise pass over 256 MiB of float32 (read once, written
    once): the rate the kept activations move at."""
    x = tf.random.uniform([64 << 20])

    @tf.function(jit_compile=True)
    def scale():
        return x * 1.0001 + 1.0

    seconds = _timed(lambda: scale().numpy(), s)
    return 2 * 4 * (64 << 20) / seconds


# ---------------------------------------------------------------------------------------
# The real thing on synthetic data


def synthetic_data(folder: str, cfg: dict, n: int, seed: int = 0) -> tuple[str, str]:
    """(vocab file, .bin file) of `n` random articles of enc_len words and abstracts of
    dec_len words, over a vocabulary of cfg["vocab"] (4 special tokens included)."""
    import numpy as np

    from pointer_generator.data.binfile import write_bin

    vocab_path = os.path.join(folder, "vocab")
    words = [f"w{i}" for i in range(cfg["vocab"] - 4)]
    with open(vocab_path, "w", encoding="utf-8") as f:
        f.writelines(f"{w} {len(words) - i}\n" for i, w in enumerate(words))
    rng = np.random.default_rng(seed)
    pairs = []
    for _ in range(n):
        article = " ".join(words[i] for i in rng.integers(0, len(words), cfg["enc_len"]))
        abstract = " ".join(words[i] for i in rng.integers(0, len(words), cfg["dec_len"]))
        pairs.append((article, f"<s> {abstract} </s>"))
    data_path = os.path.join(folder, "data.bin")
    write_bin(data_path, pairs)
    return vocab_path, data_path


def time_training(tf, cfg: dict, vocab, data_path: str, steps: int) -> dict:
    from pointer_generator.data import input_pipeline
    from pointer_generator.hparams import HParams
    from pointer_generator.training.train import Trainer

    hps = HParams(
        batch_size=cfg["batch"], max_enc_steps=cfg["enc_len"], max_dec_steps=cfg["dec_len"],
        hidden_dim=cfg["hidden"], emb_dim=cfg["emb"], pointer_gen=True, coverage=True,
    )  # fmt: skip
    ds = input_pipeline.make_dataset(data_path, vocab, hps, "train", single_pass=False)
    batches = iter(ds.map(input_pipeline.model_inputs).repeat())
    trainer = Trainer(hps, vocab.size())
    t0 = time.perf_counter()
    trainer.train_step(batches)  # traces and compiles
    first = time.perf_counter() - t0
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        metrics = trainer.train_step(batches)
        times.append(time.perf_counter() - t0)
        if not metrics["finite"]:
            raise RuntimeError(f"a non-finite training step: {metrics}")
    times.sort()
    return {"first_step_s": first, "s_per_step": times[len(times) // 2], "steps": steps}


def time_decoding(tf, cfg: dict, vocab, data_path: str, articles: int, batch: int) -> dict:
    from pointer_generator.data import input_pipeline
    from pointer_generator.hparams import HParams
    from pointer_generator.models.pointer_generator import PointerGeneratorModel
    from pointer_generator.search.beam_decoder import BeamSearchDecoder
    from pointer_generator.search.settings import SearchSettings

    hps = HParams(
        batch_size=batch, max_enc_steps=cfg["enc_len"], max_dec_steps=cfg["decode_steps"],
        hidden_dim=cfg["hidden"], emb_dim=cfg["emb"], pointer_gen=True, coverage=True,
    )  # fmt: skip
    settings = SearchSettings(
        beam_size=BEAM, min_dec_steps=min(35, cfg["decode_steps"]),
        max_dec_steps=cfg["decode_steps"],
    )  # fmt: skip
    ds = input_pipeline.make_dataset(data_path, vocab, hps, "decode", single_pass=True)
    batches = list(ds.take(max(1, articles // batch)))
    tf.keras.utils.set_random_seed(111)
    model = PointerGeneratorModel(hps, vocab.size()).build_weights()
    decoder = BeamSearchDecoder(model, vocab, hps, settings)
    t0 = time.perf_counter()
    decoder.decode_batch(batches[0])  # traces and compiles
    first = time.perf_counter() - t0
    seconds, n, steps = 0.0, 0, 0
    for b in batches:
        t0 = time.perf_counter()
        summaries = decoder.decode_batch(b)
        seconds += time.perf_counter() - t0
        n += len(summaries)
        steps += sum(len(s.p_gens) for s in summaries)
    return {"first_batch_s": first, "articles_per_s": n / seconds, "articles": n,
            "steps_per_article": steps / n}  # fmt: skip


# ---------------------------------------------------------------------------------------
# Main


def _parse(argv):
    p = common.argument_parser(__doc__, __spec__)
    p.add_argument("--batch_size", type=arg_types.positive_int, default=16)
    p.add_argument("--max_enc_steps", type=arg_types.positive_int, default=400)
    p.add_argument("--max_dec_steps", type=arg_types.positive_int, default=100)
    p.add_argument("--decode_steps", type=arg_types.positive_int, default=120)
    p.add_argument("--hidden_dim", type=arg_types.positive_int, default=256)
    p.add_argument("--emb_dim", type=arg_types.positive_int, default=128)
    p.add_argument("--vocab_size", type=arg_types.positive_int, default=50_000)
    p.add_argument("--steps", type=arg_types.positive_int, default=6, help="timed train steps")
    p.add_argument("--decode_articles", type=arg_types.positive_int, default=64)
    p.add_argument(
        "--decode_batch_size", type=arg_types.positive_int, default=32,
        help="articles searched together (decode mode's default, 32)",
    )  # fmt: skip
    p.add_argument(
        "--rate_seconds", type=arg_types.positive_float, default=2.0,
        help="how long each rate is measured",
    )  # fmt: skip
    common.add_thread_arguments(p)
    p.add_argument(
        "--out_json", default=None, help="default: experiments/results/roofline_<hostname>.json"
    )
    return p.parse_args(argv)


def roofline(parts: dict) -> float:
    return sum(parts.values())


def main(argv=None) -> int:
    args = _parse(argv)
    tf = common.import_tensorflow(args)
    from pointer_generator.data.vocab import Vocab

    cfg = {
        "batch": args.batch_size, "enc_len": args.max_enc_steps, "dec_len": args.max_dec_steps,
        "decode_steps": args.decode_steps, "hidden": args.hidden_dim, "emb": args.emb_dim,
        "vocab": args.vocab_size,
    }  # fmt: skip
    machine = common.machine_description()
    load_before = os.getloadavg()[0]  # (after the run it counts the run's own threads)
    print(f"roofline on {machine}, load {load_before:.2f} before the run", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        n = max(args.batch_size * 2, args.decode_articles)
        vocab_path, data_path = synthetic_data(tmp, cfg, n)
        vocab = Vocab(vocab_path, 0)
        train = time_training(tf, cfg, vocab, data_path, args.steps)
        print(f"training: {train['s_per_step']:.3f} s/step", flush=True)
        dec = time_decoding(tf, cfg, vocab, data_path, args.decode_articles, args.decode_batch_size)
        print(f"decoding: {dec['articles_per_s']:.2f} articles/s", flush=True)

    s = args.rate_seconds
    mm = flops.measured_matmul_rate(s)
    bw = bandwidth(tf, s)
    b, t, h, d = cfg["batch"], cfg["enc_len"], cfg["hidden"], cfg["dec_len"]
    lstm_in = cfg["emb"] + h  # the decoder LSTM's [x; h_{t-1}]: its largest product
    chains = {
        "encoder": chain_rate(tf, b, h, 4 * h, 2, s),
        "decoder": chain_rate(tf, b, lstm_in, 4 * h, 1, s),
        "decode": chain_rate(tf, args.decode_batch_size * BEAM, lstm_in, 4 * h, 1, s),
    }
    # A step's products wait for the step before: the chain's rate is the best measured
    # for them (a large product's rate is not reachable one step at a time).
    rates = chains
    waits = {k: 2 * v for k, v in recurrent_flops(cfg, b, d, True).items()}  # + input grads
    # The energies' v . tanh(.) forward and its input gradient are in `energies_seconds`
    # (its weight gradient, dv, is not: it stays among the products).
    dots = 2 * energy_dot_flops(b, t, h, d)
    energies, chunk_train = best_energies_seconds(tf, b, t, h, True, s)
    # Keep the tanh values or compute them again in the backward pass: the cheaper.
    stored = kept_bytes(b, t, h, d) / bw
    recomputed = d * best_energies_seconds(tf, b, t, h, False, s)[0]
    train_parts = {
        "products": (train_products(cfg) - sum(waits.values()) - dots) / mm,
        "recurrent": sum(v / rates[k] for k, v in waits.items()),
        "energies": d * energies,
        "softmax": softmax_seconds(tf, b * d, cfg["vocab"], True, s),
        "kept": min(stored, recomputed),
    }
    rows = args.decode_batch_size * BEAM
    steps = dec["steps_per_article"]
    per_article = args.decode_batch_size
    dec_waits = recurrent_flops(cfg, BEAM, steps, False)["decoder"]  # one article's rows
    decode_energies, chunk_decode = best_energies_seconds(tf, rows, t, h, False, s)
    decode_dots = energy_dot_flops(BEAM, t, h, steps)  # in `energies_seconds`
    decode_parts = {
        "products": (decode_products(cfg, steps) - dec_waits - decode_dots) / mm,
        "recurrent": dec_waits / rates["decode"],
        "energies": steps * decode_energies / per_article,
        "softmax": steps
        * softmax_seconds(tf, rows, cfg["vocab"], False, s, top=2 * BEAM + 1)
        / per_article,
        "kept": 0.0,
    }
    train_min, decode_min = roofline(train_parts), roofline(decode_parts)
    decode_s = 1.0 / dec["articles_per_s"]
    figures = {
        "matmul_gflop_per_s": round(mm / 1e9, 1),
        "bandwidth_gb_per_s": round(bw / 1e9, 1),
        "train_s_per_step": round(train["s_per_step"], 3),
        "train_roofline_s": round(train_min, 3),
        "train_of_roofline": round(train_min / train["s_per_step"], 3),
        "train_matmul_only_share": round(train_products(cfg) / mm / train["s_per_step"], 3),
        "train_first_step_s": round(train["first_step_s"], 1),
        "decode_articles_per_s": round(dec["articles_per_s"], 2),
        "decode_roofline_articles_per_s": round(1.0 / decode_min, 2),
        "decode_of_roofline": round(decode_min / decode_s, 3),
        "decode_matmul_only_share": round(decode_products(cfg, steps) / mm / decode_s, 3),
        **{f"chain_gflop_per_s_{k}": round(v / 1e9, 1) for k, v in chains.items()},
        "train_recurrent_gflop": round(sum(waits.values()) / 1e9, 2),
        "decode_steps_per_article": round(steps, 1),
        "decode_first_batch_s": round(dec["first_batch_s"], 1),
        **{f"train_{k}_s": round(v, 4) for k, v in train_parts.items()},
        **{f"decode_{k}_s_per_article": round(v, 4) for k, v in decode_parts.items()},
        "train_energies_rows_per_chunk": chunk_train,
        "decode_energies_rows_per_chunk": chunk_decode,
        "train_kept_stored_s": round(stored, 4),
        "train_kept_recomputed_s": round(recomputed, 4),
        "load_avg_1min_before": round(load_before, 2),
        "load_avg_1min": round(os.getloadavg()[0], 2),
    }
    config = (
        f"batch {b}, enc {t}, dec {d} (decode {cfg['decode_steps']}, beam {BEAM}, batches of "
        f"{args.decode_batch_size}), hidden {h}, emb {cfg['emb']}, vocab {cfg['vocab']}, "
        f"pointer + coverage; synthetic data of exactly these lengths; {args.steps} timed "
        f"training steps (median), {dec['articles']} decoded articles"
    )
    common.record("roofline", config, figures, args.out_json)
    for what, parts, achieved, share in (
        ("training step", train_parts, train["s_per_step"], figures["train_of_roofline"]),
        ("decoding, per article", decode_parts, decode_s, figures["decode_of_roofline"]),
    ):
        detail = ", ".join(f"{k} {v:.3g} s" for k, v in parts.items())
        verdict = "meets" if share >= TARGET else "MISSES"
        old = figures["train_matmul_only_share" if what.startswith("train") else
                      "decode_matmul_only_share"]  # fmt: skip
        print(
            f"{what}: {achieved:.3g} s against a roofline of {roofline(parts):.3g} s ({detail}): "
            f"{share:.2f} of it ({verdict} the {TARGET} target; matmul-only share {old:.2f}) "
            f"on {machine}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
