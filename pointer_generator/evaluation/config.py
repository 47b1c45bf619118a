"""What eval mode does besides the model's hyper-parameters (`HParams`).

Built from the command line by `pointer_generator.cli.configs.eval_config`; fields are
named after the flags they come from.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EvalConfig:
    """Eval mode's job settings.

    data_path: glob of the validation `.bin` files.
    log_root, exp_name: the experiment directory `<log_root>/<exp_name>`.
    single_pass: the exact loss over the data once (else the original's endless loop).
    eval_interval_secs: wait before looking again for a new checkpoint.
    max_eval_iterations: stop the concurrent loop after this many batches (0 = never).
    eval_idle_secs: end the concurrent loop once no new checkpoint came for this long
      (0 = never, the original).
    distributed: training was asked to run distributed (eval says it runs on one device).
    xla: compile the forward pass with XLA.
    input_gap: single pass: also the loss with every abstract paired with another
      article, and the gap between the two (does the model read its input?); then the
      loss with every decoder fed another example's summary words (the history gap: does
      it read what it has written?).
    """

    data_path: str = ""
    log_root: str = ""
    exp_name: str = ""
    single_pass: bool = False
    eval_interval_secs: float = 10.0
    max_eval_iterations: int = 0
    eval_idle_secs: float = 0.0
    distributed: bool = False
    xla: bool = False
    input_gap: bool = False
