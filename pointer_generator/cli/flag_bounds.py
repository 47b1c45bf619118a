"""The valid range of every numeric flag, checked in one place for every command.

absl checks a flag's type but not its value, and NaN passes any bound written as a
comparison (`nan < 0` is false): `--serve_max_wait_ms=nan` made the server's batcher spin
and `=inf` killed it. Every integer and float flag this project defines has a row here
(a test holds the table to the flags), and `check_numbers` rejects, with one `FlagError`
line naming the flag, a value outside its range: NaN and infinities always, negatives and
zero where they mean nothing.
"""

from __future__ import annotations

import dataclasses
import math

from pointer_generator.errors import FlagError


@dataclasses.dataclass(frozen=True)
class Bound:
    """Allowed values: finite, `low <= v` (`low < v` if `open_low`), `v <= high`."""

    low: float | None = None
    high: float | None = None
    open_low: bool = False
    note: str = ""

    def problem(self, value) -> str | None:
        """Why `value` is not allowed ("must be positive, got 0"), or None."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"must be a number, got {value!r}"
        if isinstance(value, float) and not math.isfinite(value):
            return f"must be a finite number, got {value}"
        low_fails = self.low is not None and (
            value <= self.low if self.open_low else value < self.low
        )
        high_fails = self.high is not None and value > self.high
        if not (low_fails or high_fails):
            return None
        return f"{self.describe()}, got {value}"

    def describe(self) -> str:
        if self.high is not None and self.low is not None:
            text = f"must be in [{_num(self.low)}, {_num(self.high)}]"
        elif self.low == 1 and not self.open_low:
            text = "must be positive"
        elif self.low is not None:
            text = f"must be {'>' if self.open_low else '>='} {_num(self.low)}"
        else:
            text = f"must be <= {_num(self.high)}"
        return text + (f" ({self.note})" if self.note else "")


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


POSITIVE = Bound(1)  # integers: 1, 2, ...
NON_NEGATIVE = Bound(0)
ABOVE_ZERO = Bound(0, open_low=True)  # floats > 0
DAY_S = 86_400.0

BOUNDS: dict[str, Bound] = {
    # sizes and lengths
    "hidden_dim": POSITIVE,
    "emb_dim": POSITIVE,
    "batch_size": POSITIVE,
    "max_enc_steps": POSITIVE,
    "max_dec_steps": POSITIVE,
    "beam_size": POSITIVE,
    "min_dec_steps": NON_NEGATIVE,
    "vocab_size": Bound(0, note="0 = the whole file"),
    "max_oovs": POSITIVE,
    "length_buckets": POSITIVE,
    "decoder_buckets": POSITIVE,
    # optimisation
    "lr": ABOVE_ZERO,
    "adagrad_init_acc": ABOVE_ZERO,
    "rand_unif_init_mag": NON_NEGATIVE,
    "trunc_norm_init_std": NON_NEGATIVE,
    "max_grad_norm": ABOVE_ZERO,
    "cov_loss_wt": NON_NEGATIVE,
    "lr_decay_factor": Bound(1, open_low=True),
    "embedding_max_norm": Bound(0, note="0 = off"),
    # what a run does, how long and how often
    "max_steps": Bound(0, note="0 = forever"),
    "seed": Bound(0, 2**32 - 1),
    "num_gpus": Bound(-1, note="-1 = all visible, 0 = none"),
    "num_cpu_devices": POSITIVE,
    "save_checkpoint_secs": POSITIVE,
    "epoch_steps": Bound(0, note="0 = one pass"),
    "early_stop_epochs": Bound(0, note="0 = off"),
    "eval_interval_secs": Bound(0, DAY_S),
    "max_eval_iterations": Bound(0, note="0 = forever"),
    "eval_idle_secs": Bound(0, DAY_S * 365, note="0 = forever"),
    "log_every_n_steps": Bound(0, note="0 = every --log_every_secs"),
    "log_every_secs": Bound(0, DAY_S),
    # decoding
    "decode_batch_size": POSITIVE,
    "length_penalty": NON_NEGATIVE,
    "attention_pages": NON_NEGATIVE,
    "max_decode_examples": Bound(0, note="0 = forever"),
    "decode_shards": POSITIVE,
    "decode_shard": NON_NEGATIVE,
    # ABS+ tuning
    "objective_bytes": Bound(0, note="0 = all"),
    "mert_iterations": POSITIVE,
    "random_starts": NON_NEGATIVE,
    # serving
    "serve_port": Bound(0, 65535, note="0 = a free port"),
    "serve_max_batch": POSITIVE,
    "serve_max_wait_ms": Bound(0, 60_000.0),
    "serve_max_chars": POSITIVE,
    "serve_max_request_chars": POSITIVE,
}


def all_bounds() -> dict[str, Bound]:
    """`BOUNDS`, and the range of every numeric option of the model families (their
    `FamilyOption.low`: models/family.py), which are flags too."""
    from pointer_generator.cli.family_flags import family_registry

    options = {
        option.name: Bound(option.low, open_low=option.open_low)
        for option in family_registry().option_table().values()
        if option.type in (int, float)
    }
    return {**BOUNDS, **options}


def check_numbers(fv, names=None) -> None:
    """FlagError for the first numeric flag of `fv` outside its range (`names`: only
    these). `fv`: absl FlagValues, or any object with the flag attributes."""
    bounds = all_bounds()
    for name in names or bounds:
        if name not in bounds or not hasattr(fv, name):
            continue
        problem = bounds[name].problem(getattr(fv, name))
        if problem:
            raise FlagError(f"--{name} {problem}")
