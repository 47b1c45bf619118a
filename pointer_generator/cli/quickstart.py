"""`pointer-generator quickstart`: the whole loop on a built-in toy corpus, on a CPU.

Builds a synthetic news-like dataset (no download), trains a small pointer-generator for
1,000 steps, evaluates it on the validation split, decodes the test split with beam
search, scores it with the official ROUGE-1.5.5 and writes the attention pages: about 2
minutes on a 2-core CPU (stored runs: experiments/results/quickstart.md). Each step is
printed as the command a user would type for it (the experiment remembers its model
flags, so eval and decode name none).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time

from pointer_generator import exit_codes
from pointer_generator.cli import arg_types
from pointer_generator.errors import PointerGeneratorError
from pointer_generator.runtime import child_processes

# Small enough for about 2 minutes on a 2-core CPU, big enough to learn to copy names.
MODEL_FLAGS = [
    "--hidden_dim=64",
    "--emb_dim=64",
    "--batch_size=16",
    "--max_enc_steps=200",
    "--max_dec_steps=40",
    "--vocab_size=5000",
    "--lr=0.15",
    # One batch shape: the step compiles once instead of once per article length (the
    # toy articles are short, so the padding costs little).
    "--static_shapes=1",
    "--max_oovs=60",
]
# Saved as the experiment's search: `summarize`, `serve` and the README's Python example
# then write summaries of the length this model was made for.
DECODE_FLAGS = ["--beam_size=4", "--min_dec_steps=10", "--max_dec_steps=40", "--save_search"]


class StepFailed(PointerGeneratorError):
    """A step of the quick-start ended with an error (its own message is above)."""


def _run(children: child_processes.Children, cmd: list[str]) -> None:
    shown = cmd[2:]  # without "<python> -m"
    if shown[0] == "pointer_generator.cli.run_summarization":
        shown = ["pointer-generator", *shown[1:]]
    else:
        shown = ["python", "-m", *shown]
    print("\n$ " + " ".join(shlex.quote(c) for c in shown), flush=True)
    # Ctrl-C or SIGTERM meanwhile: the step is stopped (training saves a checkpoint) and
    # reaped before the quick-start ends, so a rerun finds no job holding the experiment.
    status = children.start(cmd).wait()
    if status != 0:
        how = f"exit status {status}" if status > 0 else f"killed by signal {-status}"
        step = " ".join(shown[:3] if shown[0] == "python" else shown[:2])
        raise StepFailed(f"quickstart step `{step}` failed ({how}); its message is above")


def _steps(children: child_processes.Children, args) -> None:
    """Data (unless made already), training, single-pass eval, decode, one at a time."""
    data = os.path.join(args.out_dir, "data")
    log_root = os.path.join(args.out_dir, "log")
    py = [sys.executable, "-m"]
    if not os.path.exists(os.path.join(data, "vocab")):
        toy_data = ["data_tools.toy_data", f"--out_dir={data}", f"--num_train={args.num_train}"]
        _run(children, py + toy_data)
    common = [f"--vocab_path={data}/vocab", f"--log_root={log_root}", "--exp_name=toy"]
    cli = py + ["pointer_generator.cli.run_summarization"]
    experiment = [f"--log_root={log_root}", "--exp_name=toy"]
    train = [
        "--mode=train",
        f"--data_path={data}/chunked/train_*",
        f"--max_steps={args.train_steps}",
    ]
    # A progress line every 100 steps, not 1,000 lines.
    _run(children, cli + train + common + MODEL_FLAGS + ["--log_every_n_steps=100"])
    # The experiment's settings.json supplies the model flags and the vocabulary.
    evaluate = ["--mode=eval", "--single_pass", f"--data_path={data}/chunked/val_*"]
    _run(children, cli + evaluate + experiment)
    decode = ["--mode=decode", "--single_pass", f"--data_path={data}/chunked/test_*"]
    _run(children, cli + decode + experiment + DECODE_FLAGS)


@exit_codes.command(interrupted="interrupted; run the same command again to continue")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="pointer-generator quickstart",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--out_dir",
        default="quickstart_run",
        help="where the data and the experiment go (default: %(default)s)",
    )
    parser.add_argument(
        "--train_steps",
        type=arg_types.positive_int,
        default=1000,
        help="training steps (default: %(default)s)",
    )
    parser.add_argument(
        "--num_train",
        type=arg_types.positive_int,
        default=4000,
        help="toy training examples (default: %(default)s)",
    )
    args = parser.parse_args(argv)

    start = time.time()
    with child_processes.Children() as children:
        _steps(children, args)
    exp = os.path.join(args.out_dir, "log", "toy")
    decode_dirs = sorted(d for d in os.listdir(exp) if d.startswith("decode_test"))
    print(f"\nQuick-start finished in {(time.time() - start) / 60:.1f} min.")
    if decode_dirs:
        d = os.path.join(exp, decode_dirs[-1])
        print(f"  summaries:        {d}/decoded/")
        print(f"  ROUGE:            {d}/ROUGE_results.txt")
        print(f"  attention pages:  {d}/attention/index.html (open in a browser)")
    print(f"  TensorBoard:      tensorboard --logdir {exp}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
