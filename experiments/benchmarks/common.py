"""What every benchmark shares: machine description, peak memory, result files.

Each benchmark prints its figures, writes them as JSON, and appends one row to
`experiments/results/benchmarks.md`, so figures from different machines (this CPU, a lent
GPU) sit side by side in one table.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import resource
import socket

RESULTS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "results")
TABLE = os.path.join(RESULTS_DIR, "benchmarks.md")
TABLE_HEADER = ("| date | benchmark | machine | configuration | figures | peak RSS (MiB) |\n"
                "|---|---|---|---|---|---|\n")


def machine_description() -> str:
    """CPU model and core count, plus the GPU name when TensorFlow sees one."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
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
    path = os.environ.get("POINTER_GENERATOR_SHARED_DATA",
                          os.path.join(os.path.dirname(repo), "shared", "data"))
    return path if os.path.isdir(path) else None


def record(name: str, config: str, figures: dict, out_json: str | None = None) -> dict:
    """Print the figures, write them as JSON and append a row to the results table."""
    result = {
        "benchmark": name,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M"),
        "host": socket.gethostname(),
        "machine": machine_description(),
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
        figs = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                         for k, v in figures.items())
        f.write(f"| {result['date']} | {name} | {result['machine']} | {config} | {figs} | "
                f"{result['peak_rss_mib']} |\n")
    return result
