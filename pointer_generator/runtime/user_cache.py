"""The user's cache folder of this project (the prepared ROUGE-1.5.5, compiled searches)."""

from __future__ import annotations

import os

ENV = "POINTER_GENERATOR_CACHE"


def cache_root() -> str:
    """$POINTER_GENERATOR_CACHE if set, else $XDG_CACHE_HOME/pointer_generator, else
    ~/.cache/pointer_generator."""
    root = os.environ.get(ENV)
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(xdg, "pointer_generator")
    return os.path.abspath(root)
