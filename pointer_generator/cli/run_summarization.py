"""The original's entry point: `python -m pointer_generator.cli.run_summarization --mode=...`.

Start-up follows spec 1.2: flags are checked (unknown or contradictory ones end the run
with one `error: ...` line and exit status 2), the experiment directory
`<log_root>/<exp_name>` is created in train mode (and must exist otherwise), the
vocabulary is read, decode mode uses `batch_size = beam_size`, and the mode's job runs:
train (`training/train.py: run_train_mode`), eval (`evaluation/evaluate.py: run_eval_mode`)
or decode (`decoding/job.py: run_decode_mode`). TensorFlow is imported only after the
flags passed these checks.
"""

from __future__ import annotations

import sys

from absl import app
from absl import flags as absl_flags
from absl import logging as absl_logging

from pointer_generator import exit_codes
from pointer_generator.cli import configs, console, flag_checks, stored_settings
from pointer_generator.cli import flags as flags_lib
from pointer_generator.errors import FlagError

FLAGS = flags_lib.FLAGS


def fail(message) -> None:
    """Print `error: <message>` and exit with status 2 (bad input, not a crash)."""
    sys.exit(exit_codes.print_error(message))


def parse_flags(argv: list[str]) -> list[str]:
    """absl flag parsing whose errors (unknown flag, bad value) are one line + exit 2."""
    from pointer_generator.cli import family_flags

    family_flags.define_options(FLAGS)  # (a family registered since the flags were defined)
    try:
        rest = FLAGS(argv)
        flags_lib.after_parsing(FLAGS)
    except absl_flags.Error as e:
        fail(e)
    except FlagError as e:
        fail(e)
    return rest


def main(argv: list[str]) -> None:
    sys.exit(exit_codes.run_command(run_mode, argv))


def run_mode(argv: list[str]) -> None:
    """Start-up (spec 1.2) and dispatch to the mode's job `run_<mode>_mode(hps, vocab, config)`."""
    from pointer_generator.data.vocab import Vocab
    from pointer_generator.runtime.experiment import check_writable, open_experiment, output_dir

    # Flags not given come from the experiment's settings.json (if it has one).
    stored_settings.apply(FLAGS, FLAGS.mode)
    flag_checks.apply_model_family(FLAGS)
    flag_checks.validate(FLAGS, argv)
    console.setup_logging()
    hps = configs.hparams(FLAGS)
    if FLAGS.mode == "decode":
        hps = hps.replace(batch_size=FLAGS.beam_size)
    if FLAGS.debug and hps.fused_recurrence:
        # The fused loops are XLA clusters, inside which numeric checks cannot look.
        absl_logging.info("--debug: using --fused_recurrence=0")
        hps = hps.replace(fused_recurrence=False)
    exp = open_experiment(FLAGS.log_root, FLAGS.exp_name, FLAGS.mode)
    # A read-only or otherwise unwritable directory is reported now, not at the first save.
    check_writable(output_dir(exp, FLAGS.mode))
    vocab = Vocab(FLAGS.vocab_path, FLAGS.vocab_size)
    console.import_tensorflow()  # before the mode's modules import it
    mode_job = mode_job_of(FLAGS.mode)
    # Devices are fixed before TensorFlow starts using them (GPU selection, memory growth,
    # logical CPU devices for mirrored training).
    from pointer_generator.training import distribution

    distribution.configure_devices(
        FLAGS.num_gpus, FLAGS.num_cpu_devices if flags_lib.strategy_name(FLAGS) == "mirrored" else 1
    )
    if FLAGS.continuous_batching:
        absl_logging.warning(
            "--continuous_batching has no effect any more: it decoded no faster than the "
            "batched search, which drops finished articles (same summaries; "
            "docs/beam_search.md)"
        )
    mode_job(hps, vocab, configs.mode_config(FLAGS))


def mode_job_of(mode: str):
    """The job `run_<mode>_mode(hps, vocab, config)` of a mode (its module is imported only
    when used)."""
    if mode == "train":
        from pointer_generator.training.train import run_train_mode

        return run_train_mode
    if mode == "eval":
        from pointer_generator.evaluation.evaluate import run_eval_mode

        return run_eval_mode
    from pointer_generator.decoding.job import run_decode_mode

    return run_decode_mode


def print_help(kind: str) -> int:
    """`--help`: usage, the flags by purpose, an example; `--helpfull` adds absl's own."""
    from pointer_generator.cli import help as help_lib

    print(help_lib.help_text(FLAGS))
    if kind == "full":
        print("All flags, absl's included:\n" + FLAGS.get_help())
    return exit_codes.OK


def print_usage() -> int:
    """A bare `pointer-generator`: the usage on stderr, status 2 (no command given)."""
    from pointer_generator.cli import help as help_lib

    print(help_lib.USAGE + "Every flag: pointer-generator --help", file=sys.stderr)
    return exit_codes.BAD_INPUT


def run(argv: list[str] | None = None) -> None:
    """Parse flags and run (the console script's default command), then end the process
    without TensorFlow's slow teardown (`process_exit`)."""
    from pointer_generator.cli.help import wants_help
    from pointer_generator.runtime.process_exit import run_and_exit

    console.quiet_tensorflow()
    args = list(sys.argv if argv is None else argv)[1:]
    if not args:  # a bare `pointer-generator`: what it does and how, not a missing flag
        run_and_exit(exit_codes.run_command, print_usage)
    kind = wants_help(args)
    if kind:
        run_and_exit(exit_codes.run_command, print_help, kind)
    run_and_exit(lambda: app.run(main, argv=argv, flags_parser=parse_flags))


if __name__ == "__main__":
    run()
