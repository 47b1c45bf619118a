"""What train mode does besides the model's hyper-parameters (`HParams`).

Built from the command line by `pointer_generator.cli.configs.train_config`; fields are
named after the flags they come from.
"""

from __future__ import annotations

from dataclasses import dataclass

from pointer_generator.errors import FlagError


@dataclass(frozen=True)
class TrainConfig:
    """Train mode's job settings.

    data_path: glob of the training `.bin` files.
    log_root, exp_name: the experiment directory `<log_root>/<exp_name>`.
    max_steps: stop at this global step (0 = never, like the original).
    save_checkpoint_secs, log_every_n_steps: checkpoint and console-progress intervals
      (log_every_n_steps 0: a progress line every log_every_secs seconds).
    checkpoint_data_position: save the input pipeline's position in checkpoints.
    distribution_strategy: `default`, `mirrored`, `multi_worker_mirrored` or `tpu` (a
      `--tpu` address alone already resolved to `tpu`); tpu: its address.
    tf1_checkpoint: start from an original TF1 checkpoint when train/ has none.
    conversion: the flag of the model family's one-off conversion to run
      (`ModelFamily.CONVERSIONS`: "convert_to_coverage_model"), "" = none;
      restore_best_model: the other one-off operation.
    debug: stop at the first inf/NaN (numeric checks); xla: compile the step with XLA.
    valid_data_path: validation files measured at the end of every epoch (perplexity,
      best model, learning-rate annealing; `epochs.py`); "" = none.
    epoch_steps: steps per epoch (0 = one pass over data_path).
    early_stop_epochs: with valid_data_path, stop training (a final checkpoint saved, as
      at max_steps) after this many epochs in a row whose validation perplexity is no
      better than the best so far; 0 = never.
    settings: what the experiment stores about how it was made (`settings.json`: model
      flags, vocabulary), written once the run holds train/'s lock; None = nothing.
    """

    data_path: str = ""
    log_root: str = ""
    exp_name: str = ""
    max_steps: int = 0
    save_checkpoint_secs: float = 60.0
    log_every_n_steps: int = 0
    log_every_secs: float = 10.0
    checkpoint_data_position: bool = True
    distribution_strategy: str = "default"
    tpu: str = ""
    tf1_checkpoint: str = ""
    conversion: str = ""
    restore_best_model: bool = False
    debug: bool = False
    xla: bool = False
    valid_data_path: str = ""
    epoch_steps: int = 0
    early_stop_epochs: int = 0
    settings: dict | None = None

    def __post_init__(self):
        if self.early_stop_epochs < 0:
            raise FlagError(
                f"--early_stop_epochs must be >= 0 (0 = off), got {self.early_stop_epochs}"
            )
        if self.early_stop_epochs and not self.valid_data_path:
            raise FlagError(EARLY_STOP_NEEDS_VALIDATION.format(self.early_stop_epochs))


# (The command line's check says the same: cli/flag_checks.py.)
EARLY_STOP_NEEDS_VALIDATION = (
    "--early_stop_epochs={} stops on validation perplexity: give --valid_data_path "
    "(validation .bin files)"
)
