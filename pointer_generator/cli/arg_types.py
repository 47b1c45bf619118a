"""Checked number types for the argparse commands (`data_tools`, `experiments`, ROUGE,
the quick-start): each rejects, in argparse's one usage error, what the flag cannot
mean (NaN, infinities, negatives and zero where they make no sense), as `flag_bounds`
does for the absl flags. Every numeric argparse argument of the project uses one of
these (tests/test_flag_ranges.py holds every parser to it)."""

from __future__ import annotations

import argparse
import math


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None


def positive_int(text: str) -> int:
    """1, 2, ..."""
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def non_negative_int(text: str) -> int:
    """0, 1, 2, ..."""
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {value}")
    return value


def any_int(text: str) -> int:
    """Any integer (a seed)."""
    return _int(text)


def _float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
    return value


def finite_float(text: str) -> float:
    """Any finite number."""
    return _float(text)


def positive_float(text: str) -> float:
    """A finite number > 0."""
    value = _float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {text}")
    return value


def non_negative_float(text: str) -> float:
    """A finite number >= 0."""
    value = _float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text}")
    return value


CHECKED = (
    positive_int,
    non_negative_int,
    any_int,
    finite_float,
    positive_float,
    non_negative_float,
)
