"""What every benchmark shares: machine description, peak memory, result files.

Each benchmark prints its figures, writes them as JSON, and appends one row to
`experiments/results/benchmarks.md`, so figures from different machines (this CPU, a lent
GPU) sit side by side in one table.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import shlex
import socket
import sys

from pointer_generator.cli import arg_types

RESULTS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "results")
TABLE = os.path.join(RESULTS_DIR, "benchmarks.md")
TABLE_HEADER = (
    "| date | benchmark | machine | configuration | figures | peak RSS (MiB) |\n"
    "|---|---|---|---|---|---|\n"
)


# The CPU features that decide the matmul rate: vector width and bf16/int8 units. Hosts
# sold under one model name differ here (this project's VMs: AVX2 only at ~100 GFLOP/s,
# AVX-512 + AVX512_BF16 at ~200), so the table must say which one a row comes from.
_ISA_FLAGS = (
    ("avx512f", "AVX-512"),
    ("avx512_bf16", "AVX512_BF16"),
    ("amx_bf16", "AMX-BF16"),
    ("avx2", "AVX2"),
    ("fma", "FMA"),
)


def cpu_description(cpuinfo: str) -> str:
    """'model name (family F model M), ISA' from the text of /proc/cpuinfo."""
    fields = {}
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    cpu = fields.get("model name") or platform.processor() or platform.machine()
    if "cpu family" in fields and "model" in fields:
        cpu += f" (family {fields['cpu family']} model {fields['model']})"
    flags = set(fields.get("flags", "").split())
    isa = [name for flag, name in _ISA_FLAGS if flag in flags]
    if "AVX-512" in isa:  # AVX2 and FMA go without saying
        isa = [n for n in isa if n not in ("AVX2", "FMA")]
    return cpu + (f", {' + '.join(isa)}" if isa else "")


def machine_description() -> str:
    """CPU model, vector ISA and core count, plus the GPU name when TensorFlow sees one."""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = cpu_description(f.read())
    except OSError:
        cpu = platform.processor() or platform.machine()
    desc = f"{cpu}, {os.cpu_count()} cores"
    try:
        import tensorflow as tf

        gpus = tf.config.list_physical_devices("GPU")
        if gpus:
            details = tf.config.experimental.get_device_details(gpus[0])
            desc += f", {len(gpus)}x {details.get('device_name', 'GPU')}"
        desc += f", TF {tf.__version__}"
    except Exception:  # noqa: BLE001 - a description must never fail a benchmark
        pass
    return desc


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def shared_data_dir() -> str | None:
    """../shared/data beside the repository, or None when absent."""
    repo = os.path.dirname(RESULTS_DIR.rstrip("/").rsplit("/", 1)[0])
    path = os.environ.get(
        "POINTER_GENERATOR_SHARED_DATA", os.path.join(os.path.dirname(repo), "shared", "data")
    )
    return path if os.path.isdir(path) else None


def argument_parser(module_doc: str, spec) -> argparse.ArgumentParser:
    """A benchmark's parser: `python -m <its module>` in the usage line (argparse would
    say `decode.py`), its docstring's first paragraph as the description."""
    return argparse.ArgumentParser(
        prog=f"python -m {spec.name}", description=module_doc.split("\n\n")[0]
    )


def add_data_arguments(p: argparse.ArgumentParser) -> None:
    """--data_path, --vocab_path (defaults: the shared sample and vocab) and --vocab_size."""
    data = shared_data_dir()
    p.add_argument(
        "--data_path",
        default=data and os.path.join(data, "cnndm_sample.jsonl.gz"),
        help="a .jsonl.gz sample (converted to .bin chunks) or a glob of .bin files",
    )
    p.add_argument("--vocab_path", default=data and os.path.join(data, "vocab_200k"))
    p.add_argument("--vocab_size", type=arg_types.non_negative_int, default=50000)


def add_thread_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--intra_op_threads",
        type=arg_types.non_negative_int,
        default=0,
        help="0 = TensorFlow default",
    )
    p.add_argument(
        "--inter_op_threads",
        type=arg_types.non_negative_int,
        default=0,
        help="0 = TensorFlow default",
    )


def data_missing(args, check_data_path: bool = False) -> bool:
    """True (after saying why on stderr) when the benchmark's data is not there."""
    present = bool(args.data_path and args.vocab_path) and os.path.exists(args.vocab_path)
    if present and check_data_path:
        present = (
            args.data_path.endswith(".bin")
            or "*" in args.data_path
            or os.path.exists(args.data_path)
        )
    if not present:
        print(
            "SKIPPED: no real data: ../shared/data (cnndm_sample.jsonl.gz, vocab_200k) is "
            "absent and no --data_path/--vocab_path was given; pass --data_path (a glob of "
            ".bin files made by data_tools, or a .jsonl.gz of stories) and --vocab_path "
            "(docs/data.md, 'The real-data sample')",
            file=sys.stderr,
        )
    return not present


def import_tensorflow(args=None):
    """TensorFlow, quiet, with the thread counts of `add_thread_arguments` applied."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    if args is not None and args.intra_op_threads:
        tf.config.threading.set_intra_op_parallelism_threads(args.intra_op_threads)
    if args is not None and args.inter_op_threads:
        tf.config.threading.set_inter_op_parallelism_threads(args.inter_op_threads)
    return tf


def thread_settings(args) -> list[str]:
    """["intra-op threads N", ...] for the thread counts that were set."""
    return [
        f"{name} {n}"
        for name, n in (
            ("intra-op threads", args.intra_op_threads),
            ("inter-op threads", args.inter_op_threads),
        )
        if n
    ]


def _command_line() -> str | None:
    """`python -m experiments.benchmarks.<module> <its arguments>` when this process is
    such a command (the result file then says how it was made), else None."""
    script = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    here = os.path.dirname(os.path.abspath(__file__))
    if os.path.dirname(script) != here or not script.endswith(".py"):
        return None
    module = "experiments.benchmarks." + os.path.basename(script)[:-3]
    return " ".join(["python -m", module, *(shlex.quote(a) for a in sys.argv[1:])])


def record(name: str, config: str, figures: dict, out_json: str | None = None) -> dict:
    """Print the figures, write them as JSON and append a row to the results table."""
    command = _command_line()
    result = {
        "benchmark": name,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M"),
        "host": socket.gethostname(),
        "machine": machine_description(),
        **({"command": command} if command else {}),
        "configuration": config,
        "figures": figures,
        "peak_rss_mib": round(peak_rss_mib(), 1),
    }
    print(json.dumps(result, indent=2))
    os.makedirs(RESULTS_DIR, exist_ok=True)
    out_json = out_json or os.path.join(RESULTS_DIR, f"{name}_{socket.gethostname()}.json")
    with open(out_json, "w") as f:
        json.dump(result, f, indent=2)
    new = not os.path.exists(TABLE)
    with open(TABLE, "a") as f:
        if new:
            f.write(TABLE_HEADER)
        figs = ", ".join(
            f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in figures.items()
        )
        f.write(
            f"| {result['date']} | {name} | {result['machine']} | {config} | {figs} | "
            f"{result['peak_rss_mib']} |\n"
        )
    return result
