"""`pointer-generator serve` under load: requests/s and latency with 1 and 8 concurrent
clients, measured side by side in one run against the real server on a free port.

    python -m experiments.benchmarks.serve [--log_root L --exp_name E] [--requests 48]

Without an experiment it builds the quick-start's toy corpus and trains a small model on
it briefly (`--train_steps`; hidden 128, articles of up to 200 tokens: not the
quick-start's own settings), so the figures are of a small model; give a trained
experiment for realistic ones. Each client sends one article per request (test
articles of the experiment's data, or of the toy corpus). The ratio of the two
throughputs shows what batching requests across clients buys.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from experiments.benchmarks import common
from pointer_generator import exit_codes
from pointer_generator.cli import arg_types
from pointer_generator.runtime import child_processes


def _toy_experiment(
    work: str, steps: int, padding: tuple[str, ...] = ("--static_shapes=1", "--max_oovs=60")
) -> tuple[str, str, str]:
    data = os.path.join(work, "data")
    child_processes.run([sys.executable, "-m", "data_tools.toy_data", f"--out_dir={data}",
                         "--num_train=2000"], check=True, capture_output=True)  # fmt: skip
    log_root = os.path.join(work, "log")
    child_processes.run(
        [sys.executable, "-m", "pointer_generator.cli.run_summarization", "--mode=train",
         f"--data_path={data}/chunked/train_*", f"--vocab_path={data}/vocab",
         f"--log_root={log_root}", "--exp_name=toy", f"--max_steps={steps}",
         "--hidden_dim=128", "--emb_dim=64", "--batch_size=16", "--max_enc_steps=200",
         "--max_dec_steps=40", "--vocab_size=0", *padding],
        check=True, capture_output=True,
    )  # fmt: skip
    return log_root, "toy", os.path.join(data, "test.bin")


def _articles(path: str, n: int) -> list[str]:
    from pointer_generator.data.binfile import read_records

    out = [a for a, _ in read_records(path)][:n]
    if not out:
        raise SystemExit(f"error: {path} holds no articles")
    return (out * (n // len(out) + 1))[:n]


def _post(url: str, text: str) -> float:
    body = json.dumps({"text": text}).encode("utf-8")
    request = urllib.request.Request(url, data=body, method="POST")
    request.add_header("Content-Type", "application/json")
    start = time.perf_counter()
    with urllib.request.urlopen(request, timeout=600) as r:
        r.read()
        assert r.status == 200
    return time.perf_counter() - start


def _load(url: str, texts: list[str], clients: int) -> dict:
    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        latencies = list(pool.map(lambda t: _post(url, t), texts))
    seconds = time.perf_counter() - start
    latencies.sort()
    return {
        "requests_per_s": round(len(texts) / seconds, 2),
        "latency_p50_s": round(statistics.median(latencies), 3),
        "latency_p90_s": round(latencies[int(0.9 * (len(latencies) - 1))], 3),
    }


@exit_codes.command
def main(argv=None) -> int:
    p = common.argument_parser(__doc__, __spec__)
    p.add_argument("--log_root", default=None)
    p.add_argument("--exp_name", default=None)
    p.add_argument("--data_path", default=None, help="articles to send (a .bin file)")
    p.add_argument("--requests", type=arg_types.positive_int, default=48)
    p.add_argument("--beam_size", type=arg_types.positive_int, default=4)
    p.add_argument("--max_batch", type=arg_types.positive_int, default=8)
    p.add_argument("--train_steps", type=arg_types.positive_int, default=200)
    p.add_argument("--out_json", default=None)
    args = p.parse_args(argv)
    common.import_tensorflow()
    import pointer_generator as pg
    from pointer_generator.serving.http_server import SummaryService, make_server
    from pointer_generator.summarizing.article_texts import all_batch_rows

    with tempfile.TemporaryDirectory() as work:
        if args.log_root:
            log_root, exp, data = args.log_root, args.exp_name, args.data_path
        else:
            log_root, exp, data = _toy_experiment(work, args.train_steps)
        texts = _articles(data, args.requests)
        summarizer = pg.Summarizer.from_experiment(
            log_root, exp, beam_size=args.beam_size, batch_size=args.max_batch
        )
        # Every batch size at every article length compiled first (as `serve
        # --serve_warm_up_batches` does): the figures are of the steady state.
        summarizer.warm_up(all_batch_rows(args.max_batch))
        service = SummaryService(summarizer, exp, max_batch=args.max_batch, max_wait_s=0.01)
        server = make_server(service, "127.0.0.1", 0)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}/api/summarize"
        figures = {}
        for clients in (1, 8):
            figures[f"{clients}_clients"] = _load(url, texts, clients)
            print(f"{clients} client(s): {figures[f'{clients}_clients']}", flush=True)
        figures["throughput_8_over_1"] = round(
            figures["8_clients"]["requests_per_s"] / figures["1_clients"]["requests_per_s"], 2
        )
        server.shutdown()
        service.batcher.close()
    config = (
        f"{'toy model (' + str(args.train_steps) + ' steps)' if not args.log_root else exp}, "
        f"beam {args.beam_size}, server batches of up to {args.max_batch}, "
        f"{args.requests} requests of one article per client count"
    )
    common.record("serve", config, figures, args.out_json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
