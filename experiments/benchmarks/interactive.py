"""Interactive decoding, side by side in one run: one text at a time through
`pg.Summarizer`, the SavedModel and `serve`.

    python -m experiments.benchmarks.interactive [--train_steps 200] [--no_paper | --no_toy]

Toy model (the quick-start's corpus, trained here briefly with the default padding):

* `from_experiment` and `warm_up` times (the search compiled for every article length
  bucket, as `serve` does before it says it is serving);
* one article, repeated: median ms per call, with the whole search in XLA (the
  default) and without (`jit_compile=False`);
* 8 articles of new lengths, one call each, against one article 8 times (target
  <= 1.2x: no new length compiles anything);
* the first batch of 4 and of 8 texts, and a second batch of 8;
* the same article through the exported SavedModel (`pointer-generator export`; target:
  the Summarizer within 1.2x of it) and through `serve` at one client (target: within
  1.2x of the Summarizer).

Paper configuration (skipped with --no_paper or without ../shared/data): hidden 256,
400/120 tokens, beam 4, 50k vocabulary, random weights (which never stop, so every search
runs all 120 steps: the worst case); one real article at a time (target < 0.3 s), in
float32 with and without XLA, and with `--mixed_precision` (bfloat16 projection weights).
"""

from __future__ import annotations

import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from experiments.benchmarks import common
from experiments.benchmarks.serve import _articles, _post, _toy_experiment
from pointer_generator import exit_codes
from pointer_generator.cli import arg_types
from pointer_generator.runtime import child_processes
from pointer_generator.runtime.progress import unstamped


def _ms(f, repeats: int = 10) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return round(1000 * statistics.median(times), 1)


def _alternating_ms(f, g, repeats: int = 30) -> tuple[float, float]:
    """Median ms per call of f and of g, called in turn `repeats` times each: on a
    shared host both medians then see the same moments, and their ratio is steadier
    than that of two runs one after the other."""
    times = ([], [])
    for _ in range(repeats):
        for fn, out in zip((f, g), times, strict=True):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    return tuple(round(1000 * statistics.median(t), 1) for t in times)


def _seconds(f) -> float:
    t0 = time.perf_counter()
    f()
    return round(time.perf_counter() - t0, 3)


def _distinct_lengths(texts: list[str], n: int) -> list[str]:
    by_length = {}
    for t in texts:
        by_length.setdefault(len(t.split()), t)
    return list(by_length.values())[:n]


def toy_figures(work: str, steps: int) -> dict:
    import pointer_generator as pg

    log_root, exp, data = _toy_experiment(work, steps, padding=())
    texts = _articles(data, 200)
    article = texts[0]
    fig = {}
    t0 = time.perf_counter()
    summarizer = pg.Summarizer.from_experiment(log_root, exp, beam_size=4)
    fig["load_s"] = round(time.perf_counter() - t0, 2)
    fig["warm_up_s"] = _seconds(summarizer.warm_up)
    fig["one_article_ms"] = _ms(lambda: summarizer.summarize([article]))
    new = _distinct_lengths(texts[1:], 8)
    fig["new_lengths_8_calls_s"] = _seconds(lambda: [summarizer.summarize([t]) for t in new])
    fig["same_article_8_calls_s"] = _seconds(
        lambda: [summarizer.summarize([article]) for _ in range(8)]
    )
    fig["new_over_same"] = round(fig["new_lengths_8_calls_s"] / fig["same_article_8_calls_s"], 2)
    fig["first_batch_4_s"] = _seconds(lambda: summarizer.summarize(texts[20:24]))
    fig["first_batch_8_s"] = _seconds(lambda: summarizer.summarize(texts[30:38]))
    fig["second_batch_8_s"] = _seconds(lambda: summarizer.summarize(texts[40:48]))
    plain = pg.Summarizer.from_experiment(log_root, exp, beam_size=4, jit_compile=False)
    plain.summarize([article])
    fig["one_article_no_xla_ms"] = _ms(lambda: plain.summarize([article]))

    export_dir = os.path.join(work, "exported")
    child_processes.run([sys.executable, "-m", "pointer_generator.cli.export",
                    f"--log_root={log_root}", f"--exp_name={exp}", f"--export_dir={export_dir}",
                         "--beam_size=4"], check=True, capture_output=True)  # fmt: skip
    saved = pg.Summarizer.from_saved_model(export_dir)
    saved.summarize([article])
    # In alternation with the Summarizer, so that both medians see the same moments.
    saved_ms, direct_ms = _alternating_ms(
        lambda: saved.summarize([article]), lambda: summarizer.summarize([article])
    )
    fig["saved_model_ms"], fig["summarizer_alternating_saved_ms"] = saved_ms, direct_ms
    fig["summarizer_over_saved_model"] = round(direct_ms / saved_ms, 2)
    fig.update(_serve(log_root, exp, article, lambda: summarizer.summarize([article])))
    return fig


def _serve(log_root: str, exp: str, article: str, summarize_once) -> dict:
    """`pointer-generator serve` at one client: seconds until it says it serves, and the
    median latency of the same article, timed in alternation with `summarize_once` (the
    Summarizer in this process) so that both medians see the same moments of a shared
    host."""
    cmd = [sys.executable, "-m", "pointer_generator.cli.serve", f"--log_root={log_root}",
           f"--exp_name={exp}", "--beam_size=4", "--serve_port=0"]  # fmt: skip
    t0 = time.perf_counter()
    # Leaving the block stops the server (SIGTERM) and reaps it, as does SIGTERM / Ctrl-C.
    with child_processes.Children() as children:
        proc = children.start(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        url = None
        for line in map(unstamped, proc.stdout):
            if line.startswith("Serving "):
                url = line.split(" on ", 1)[1].split(" ", 1)[0].rstrip("/")
                break
        if url is None:
            raise SystemExit("error: serve did not start")
        ready = round(time.perf_counter() - t0, 1)
        first = _post(f"{url}/api/summarize", article)
        served_ms, direct_ms = _alternating_ms(
            lambda: _post(f"{url}/api/summarize", article), summarize_once
        )
    return {
        "serve_ready_s": ready,
        "serve_first_request_ms": round(1000 * first, 1),
        "serve_one_client_ms": served_ms,
        "summarizer_alternating_ms": direct_ms,
        "serve_over_summarizer": round(served_ms / direct_ms, 2),
    }


def paper_figures(args) -> dict:
    import tensorflow as tf

    from pointer_generator.data.vocab import Vocab
    from pointer_generator.hparams import HParams
    from pointer_generator.models.pointer_generator import PointerGeneratorModel
    from pointer_generator.search.beam_decoder import BeamSearchDecoder
    from pointer_generator.summarizing.summarizer import Summarizer

    hps = HParams(max_enc_steps=400, max_dec_steps=120)  # the search: beam 4, min 35
    vocab = Vocab(args.vocab_path, 50000)
    tf.keras.utils.set_random_seed(1)
    model = PointerGeneratorModel(hps, vocab.size()).build_weights()
    with gzip.open(args.data_path, "rt", encoding="utf-8") as f:
        article = json.loads(f.readline())["article"]
    fig = {}
    for name, jit in (("xla", True), ("no_xla", False)):
        summarizer = Summarizer(BeamSearchDecoder(model, vocab, hps, jit_compile=jit))
        fig[f"paper_{name}_first_call_s"] = _seconds(lambda s=summarizer: s.summarize([article]))
        steps = len(summarizer.summarize([article])[0].tokens)
        fig[f"paper_{name}_one_article_ms"] = _ms(
            lambda s=summarizer: s.summarize([article]), repeats=5
        )
    fig["paper_summary_tokens"] = steps
    # The same weights with `--mixed_precision`: the search reads a bfloat16 copy of the
    # [256, 50k] projection, half the bytes of a step that memory bandwidth bounds.
    mixed = PointerGeneratorModel(hps.replace(mixed_precision=True), vocab.size())
    mixed.build_weights().set_weights(model.get_weights())
    summarizer = Summarizer(
        BeamSearchDecoder(mixed, vocab, hps.replace(mixed_precision=True), jit_compile=True)
    )
    fig["paper_bf16_first_call_s"] = _seconds(lambda: summarizer.summarize([article]))
    fig["paper_bf16_one_article_ms"] = _ms(lambda: summarizer.summarize([article]), repeats=5)
    return fig


@exit_codes.command
def main(argv=None) -> int:
    p = common.argument_parser(__doc__, __spec__)
    p.add_argument("--train_steps", type=arg_types.positive_int, default=200)
    p.add_argument("--no_paper", action="store_true")
    p.add_argument("--no_toy", action="store_true", help="the paper configuration only")
    common.add_data_arguments(p)
    args = p.parse_args(argv)
    common.import_tensorflow()
    figures = {"load_before": round(os.getloadavg()[0], 2)}
    if not args.no_toy:
        with tempfile.TemporaryDirectory() as work:
            figures.update(toy_figures(work, args.train_steps))
            print(json.dumps(figures), flush=True)
    if not args.no_paper and not common.data_missing(args):
        figures.update(paper_figures(args))
    figures["load_after"] = round(os.getloadavg()[0], 2)
    common.record(
        "interactive",
        ("" if args.no_toy else f"toy model ({args.train_steps} steps), ")
        + "beam 4, one text a call"
        + ("" if args.no_paper else "; paper config random"),
        figures,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
